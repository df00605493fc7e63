"""Re-verification of stored rollouts: what counts as a change, and what is never guessed."""

from __future__ import annotations

import dataclasses
from typing import Any

from posttrain.domains import get_domain
from posttrain.domains.base import Domain
from posttrain.eval.rescore import parse_task_id, rescore
from posttrain.types import Message, Verdict
from tests.store.test_export import ARITH, CALC, answer, calc_texts, play


def test_parse_task_id_reads_seeded_and_row_ids() -> None:
    assert parse_task_id("arith/addition-v1@12.d3") == ("arith/addition-v1", 12, 3)
    assert parse_task_id("data/qa-v1@row7") == ("data/qa-v1", 7)
    assert parse_task_id("task-17") is None


def test_a_stale_verdict_is_reported_with_old_and_new() -> None:
    fresh = play(ARITH, [answer(0)], rollout_id="fresh")
    stale = play(ARITH, [answer(1)], seed=1, rollout_id="stale", verdict=Verdict(0.0, False, "old bug"))  # fmt: skip
    report = rescore([fresh, stale])
    stats = report.per_domain[ARITH]
    assert (stats.reverified, stats.changed, stats.not_reverifiable) == (2, 1, {})
    [change] = report.changes
    assert (change.id, change.old_reward, change.new_reward) == ("stale", 0.0, 1.0)
    assert (change.old_passed, change.new_passed, change.old_reason) == (False, True, "old bug")


def test_a_small_reward_drift_is_not_a_change_but_a_larger_one_is() -> None:
    right = play(ARITH, [answer(0)])
    tiny = dataclasses.replace(right, id="tiny", verdict=dataclasses.replace(right.verdict, reward=1.0 - 1e-12))  # fmt: skip
    moved = dataclasses.replace(right, id="moved", verdict=dataclasses.replace(right.verdict, reward=0.9))  # fmt: skip
    assert [c.id for c in rescore([tiny, moved]).changes] == ["moved"]


def test_stored_rollouts_are_not_modified() -> None:
    stale = play(ARITH, [answer(0)], verdict=Verdict(0.0, False, "old bug"))
    rescore([stale])
    assert stale.verdict == Verdict(0.0, False, "old bug")


def test_a_multi_turn_rollout_is_replayed_through_a_fresh_session(tokenizer: Any) -> None:
    good = play(CALC, calc_texts(0), rollout_id="good")
    wrong = play(CALC, calc_texts(0, 1), rollout_id="wrong", verdict=Verdict(1.0, True, "stale"))
    report = rescore([good, wrong], tokenizer=tokenizer)
    assert (report.per_domain[CALC].reverified, report.per_domain[CALC].changed) == (2, 1)
    assert report.changes[0].id == "wrong" and report.changes[0].new_passed is False


def test_a_session_that_now_answers_differently_is_not_reverifiable(tokenizer: Any) -> None:
    rollout = play(CALC, calc_texts(0))
    rollout.turns[0].observations = [Message("tool", "999", name="calculator")]
    report = rescore([rollout], tokenizer=tokenizer)
    assert report.per_domain[CALC].reverified == 0
    assert report.per_domain[CALC].not_reverifiable == {
        "the session now answers the recorded turns differently": 1}  # fmt: skip


def test_rollouts_that_cannot_be_verified_again_are_counted_by_reason() -> None:
    crashed = play(ARITH, [answer(0)], rollout_id="crashed", error="session failed: x")
    odd_id = play(ARITH, [answer(0)], rollout_id="odd", task_id="task-17")
    other_task = play(ARITH, [answer(0)], rollout_id="moved")
    other_task.messages[0] = Message("user", "1+1")  # the generator's task is not this one
    report = rescore([crashed, odd_id, other_task])
    assert report.per_domain[ARITH].reverified == 0
    assert report.per_domain[ARITH].not_reverifiable == {
        "the episode itself failed, so there is no answer to verify": 1,
        "the task id is not <domain>@<seed>.d<difficulty> of its domain": 1,
        "the domain now makes a different task for this id": 1,
    }  # fmt: skip


def test_an_unregistered_domain_is_not_reverifiable() -> None:
    rollout = play(ARITH, [answer(0)])

    def unknown(domain_id: str) -> Domain:
        raise KeyError(domain_id)

    report = rescore([rollout], lookup=unknown)
    assert report.per_domain[ARITH].not_reverifiable == {
        "the domain is not registered in this process": 1}  # fmt: skip


def test_a_verifier_that_raises_gives_a_verdict_with_its_error() -> None:
    real = get_domain(ARITH)

    class Raising:
        id, axes, max_turns = real.id, real.axes, real.max_turns
        generate, reference = real.generate, real.reference

        def verify(self, *args: object) -> Verdict:
            raise RuntimeError("verifier bug")

    report = rescore([play(ARITH, [answer(0)])], lookup=lambda _id: Raising())  # type: ignore[arg-type, return-value]
    [change] = report.changes
    assert (change.new_passed, change.new_error) == (False, "RuntimeError: verifier bug")


def _calls_to_the_end() -> list[str]:
    """A calculator episode whose every turn, the last allowed one too, calls the tool."""
    call = calc_texts(0)[0]
    return [call] * get_domain(CALC).max_turns


def test_a_rollout_whose_last_turn_called_tools_is_reverified(tokenizer: Any) -> None:
    rollout = play(CALC, _calls_to_the_end())
    assert rollout.turns[-1].observations  # recorded like every turn's
    report = rescore([rollout], tokenizer=tokenizer)
    assert (report.per_domain[CALC].reverified, report.per_domain[CALC].not_reverifiable) == (1, {})


def test_a_trace_without_the_last_turns_observations_is_still_reverified(tokenizer: Any) -> None:
    """Traces recorded before the last allowed turn's observations were kept hold none
    there; the replay's are not held against them."""
    rollout = play(CALC, _calls_to_the_end())
    rollout.messages = rollout.messages[: -len(rollout.turns[-1].observations)]
    rollout.turns[-1].observations, rollout.turns[-1].env_token_ids = [], []
    report = rescore([rollout], tokenizer=tokenizer)
    assert (report.per_domain[CALC].reverified, report.per_domain[CALC].not_reverifiable) == (1, {})
