"""The `longctx` family: the self-check, the span parameter, the prompt layout and each verifier."""

from __future__ import annotations

import doctest
import json
import re
import time

import pytest

from posttrain.domains.check import check_domains
from posttrain.domains.longctx import DOMAINS, framework, haystack, lookup, synthesis, tracking
from posttrain.domains.longctx.goal_retention import GoalRetentionDomain
from posttrain.domains.longctx.lookup import (
    CountMentionsDomain,
    MultiNeedleDomain,
    NeedleDomain,
)
from posttrain.domains.longctx.synthesis import (
    AggregationDomain,
    ContradictionsDomain,
    EventOrderDomain,
)
from posttrain.domains.longctx.tracking import MultiHopDomain, VarTrackingDomain, run_statements
from posttrain.types import Message, Rollout, Task, Turn, Verdict

SINGLE_TURN = [d for d in DOMAINS if d.axes.rounds == "single"]


def _text(task: Task) -> str:
    return task.prompt[-1].content


def _judge(domain: object, task: Task, text: str) -> tuple[float, bool]:
    verdict = domain.judge(task, text)  # type: ignore[attr-defined]
    return verdict.reward, verdict.passed


def test_every_domain_passes_the_self_check() -> None:
    results = check_domains(DOMAINS, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


def test_a_spanned_instance_passes_the_self_check() -> None:
    results = check_domains([NeedleDomain().with_span(64, 512)], difficulties=(1, 5))
    failed = [r for r in results if not r.ok]
    assert failed == []


def test_there_are_at_least_eight_domains_with_distinct_ids() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(ids) >= 8 and len(set(ids)) == len(ids)
    assert all(i.startswith("longctx/") and "@" not in i for i in ids)


def test_with_span_suffixes_the_id_and_keeps_the_class() -> None:
    for domain in DOMAINS:
        spanned = domain.with_span(64, 512)
        assert type(spanned) is type(domain)
        assert spanned.id == f"{domain.id}@64-512"
        assert spanned.span == (64, 512) and domain.span == (1_000, 1_000_000)


def test_with_span_moves_the_length_schedule() -> None:
    spanned = VarTrackingDomain().with_span(64, 512)
    assert spanned.difficulty_measure(spanned.generate(0, 1)) == 64
    assert spanned.difficulty_measure(spanned.generate(0, 10)) == 512
    assert len(_text(spanned.generate(0, 10))) < 512 * 6


def test_a_bad_span_is_refused() -> None:
    with pytest.raises(ValueError, match="span"):
        NeedleDomain().with_span(512, 64)


def test_the_schedule_is_geometric_from_1k_to_1m() -> None:
    assert [haystack.target_tokens(d) for d in range(1, 11)][::3] == [1000, 10000, 100000, 1000000]


def test_the_question_is_the_last_paragraph_and_kept_in_meta() -> None:
    for domain in SINGLE_TURN:
        task = domain.generate(2, 3)
        assert _text(task).split("\n\n")[-1] == task.meta["question"]


def test_the_evidence_appears_verbatim_in_the_prompt() -> None:
    for domain in SINGLE_TURN:
        for difficulty in (1, 6):
            task = domain.generate(5, difficulty)
            assert task.meta["evidence"]
            assert all(sentence in _text(task) for sentence in task.meta["evidence"]), task.id


def test_spanned_tasks_still_hold_distractors() -> None:
    task = NeedleDomain().with_span(64, 512).generate(0, 1)
    assert len(re.findall(r"The access code for the", _text(task))) >= 3


def test_an_echoed_prompt_of_4mb_is_rejected_fast() -> None:
    domain = NeedleDomain()
    task = domain.generate(0, 10)
    start = time.perf_counter()
    reward, passed = _judge(domain, task, _text(task))
    assert (reward, passed) == (0.0, False) and time.perf_counter() - start < 0.5


def test_needle_depth_is_recorded_and_drawn_per_seed() -> None:
    tasks = [NeedleDomain().generate(seed, 2) for seed in range(6)]
    found = [_text(t).index(t.meta["evidence"][0]) / len(_text(t)) for t in tasks]
    assert len({round(t.meta["depth"], 3) for t in tasks}) == 6
    assert all(abs(f - t.meta["depth"]) < 0.1 for f, t in zip(found, tasks, strict=True))


def test_needle_accepts_the_code_with_surrounding_whitespace() -> None:
    domain = NeedleDomain()
    task = domain.generate(1, 4)
    assert _judge(domain, task, f" {task.answer}\n") == (1.0, True)


def test_needle_rejects_a_look_alike_code() -> None:
    domain = NeedleDomain()
    task = domain.generate(1, 4)
    decoy = str(task.meta["decoy_codes"][0])
    assert f"is {decoy}." in _text(task)
    assert _judge(domain, task, decoy) == (0.0, False)


def test_var_tracking_answer_is_what_the_statements_compute() -> None:
    domain = VarTrackingDomain()
    for seed in range(5):
        task = domain.generate(seed, 3)
        found = re.findall(r"Set (VAR_[A-Z]{2}) to (VAR_[A-Z]{2}|[0-9]+)\.", _text(task))
        program = [(v, int(s) if s.isdigit() else s) for v, s in found]
        assert run_statements(program)[task.meta["variable"]] == int(task.answer)
        assert 1 <= task.meta["hops"] <= 3


def test_var_tracking_rejects_the_overwritten_value() -> None:
    domain = VarTrackingDomain()
    task = domain.generate(0, 2)
    stale = str(task.meta["stale"][0])
    assert f"to {stale}." in _text(task)
    assert _judge(domain, task, stale) == (0.0, False)
    assert _judge(domain, task, f"+{task.answer}") == (1.0, True)


def test_doctests_pass() -> None:
    for module in (framework, haystack, lookup, synthesis, tracking):
        assert doctest.testmod(module).failed == 0


def test_multi_needle_accepts_the_codes_in_any_order() -> None:
    domain = MultiNeedleDomain()
    task = domain.generate(0, 7)
    codes = task.meta["codes"]
    assert _judge(domain, task, str(codes[::-1])) == (1.0, True)


def test_multi_needle_gives_a_partial_set_partial_reward() -> None:
    domain = MultiNeedleDomain()
    task = domain.generate(0, 7)
    reward, passed = _judge(domain, task, str(task.meta["codes"][:-1]))
    assert 0.2 < reward < 1.0 and not passed


def test_multi_needle_rejects_codes_as_strings_or_bare_numbers() -> None:
    domain = MultiNeedleDomain()
    task = domain.generate(0, 1)
    codes = task.meta["codes"]
    assert _judge(domain, task, str([str(c) for c in codes]).replace("'", '"'))[0] == 0.0
    assert _judge(domain, task, ", ".join(map(str, codes)))[0] == 0.0


def test_count_mentions_counts_only_the_exact_name() -> None:
    domain = CountMentionsDomain()
    for seed in range(4):
        task = domain.generate(seed, 5)
        pattern = rf"Inspector {task.meta['name']} filed a safety report"
        assert len(re.findall(pattern, _text(task))) == int(task.answer)
        assert _judge(domain, task, str(int(task.answer) + task.meta["lookalike_count"]))[0] == 0.0


def test_multi_hop_hops_grow_and_the_look_alike_budget_fails() -> None:
    domain = MultiHopDomain()
    assert [domain.generate(0, d).meta["hops"] for d in (1, 4, 7, 10)] == [1, 2, 3, 4]
    task = domain.generate(0, 7)
    decoy = str(task.meta["decoy_budgets"][0])
    assert f"budget of {decoy} thousand" in _text(task)
    assert _judge(domain, task, decoy) == (0.0, False)


def test_aggregation_total_is_the_sum_of_the_depots_reports() -> None:
    domain = AggregationDomain()
    for seed in range(4):
        task = domain.generate(seed, 6)
        pattern = rf"the {task.meta['depot']} depot shipped ([0-9]+) crates"
        assert sum(int(n) for n in re.findall(pattern, _text(task))) == int(task.answer)


def test_aggregation_accepts_an_equal_number_and_rejects_prose() -> None:
    domain = AggregationDomain()
    task = domain.generate(1, 3)
    assert _judge(domain, task, f"{task.answer}.0") == (1.0, True)
    assert _judge(domain, task, f"{task.answer} crates")[0] == 0.0


def test_contradictions_are_the_sites_with_two_values() -> None:
    domain = ContradictionsDomain()
    for seed in range(4):
        task = domain.generate(seed, 8)
        found: dict[str, set[str]] = {}
        for site, value in re.findall(r"Site ([A-Z][a-z]+) (?:has a staff count of|is) ([0-9]+)", _text(task)):  # fmt: skip
            found.setdefault(site, set()).add(value)
        assert sorted(s for s, v in found.items() if len(v) > 1) == sorted(task.meta["sites"])


def test_contradictions_ignore_case_and_score_a_partial_set() -> None:
    domain = ContradictionsDomain()
    task = domain.generate(2, 7)
    sites = task.meta["sites"]
    lowered = "[" + ", ".join(f'"{s.lower()}"' for s in sites) + "]"
    assert _judge(domain, task, lowered) == (1.0, True)
    reward, passed = _judge(domain, task, "[" + f'"{sites[0]}"' + "]")
    assert 0.2 < reward < 1.0 and not passed


def test_event_order_follows_the_dates_in_the_document() -> None:
    domain = EventOrderDomain()
    months = {m: i for i, m in enumerate(synthesis._MONTHS)}
    for seed in range(4):
        task = domain.generate(seed, 9)
        dates = {}
        for rid, day, month, year in re.findall(r"Record (EV-[0-9]+): [^,]*, on ([0-9]+) ([A-Za-z]+) ([0-9]+)\.", _text(task)):  # fmt: skip
            dates[rid] = (int(year), months[month], int(day))
        assert sorted(task.meta["asked"], key=dates.__getitem__) == json.loads(task.answer)


def test_event_order_gives_an_adjacent_swap_partial_reward() -> None:
    domain = EventOrderDomain()
    task = domain.generate(0, 4)
    gold = json.loads(task.answer)
    swapped = json.dumps([gold[1], gold[0], *gold[2:]])
    reward, passed = _judge(domain, task, swapped)
    assert 0.0 < reward < 0.5 and not passed
    assert _judge(domain, task, json.dumps(gold, indent=1)) == (1.0, True)


def _conversation(task: Task, texts: list[str]) -> Rollout:
    turns = [Turn(text=t, token_ids=[], logprobs=[], finish_reason="stop") for t in texts]
    messages = [Message("assistant", t) for t in texts]
    return Rollout("r", task.id, task.domain, task.difficulty, [], [], [], [], messages, turns,
                   Verdict(0.0, False, "unscored"))  # fmt: skip


def test_goal_retention_session_plays_notes_then_the_question() -> None:
    domain = GoalRetentionDomain()
    task = domain.generate(0, 7)
    session = domain.open(task)
    replies = []
    for turn in domain.reference(task).turns:
        reply = session.user_turn(turn)
        replies.append(reply.content if reply else None)
    assert replies[-2] == task.meta["question"] and replies[-1] is None
    assert all(r.startswith("More notes:") for r in replies[:-2])  # type: ignore[union-attr]


def test_goal_retention_reference_passes_and_sloppy_acks_lose_reward() -> None:
    domain = GoalRetentionDomain()
    task = domain.generate(3, 8)
    good = [m.content for m in domain.reference(task).turns]
    assert domain.verify(task, _conversation(task, good), None).passed
    sloppy = domain.verify(task, _conversation(task, ["ok", *good[1:]]), None)
    assert 0.5 <= sloppy.reward < 1.0 and not sloppy.passed


def test_goal_retention_answer_that_ignores_the_rule_scores_zero() -> None:
    domain = GoalRetentionDomain()
    for seed in range(6):
        task = domain.generate(seed, 2)
        acks = [task.meta["ack"]] * task.meta["notes"]
        rule_ignored = task.meta["wrong"][0]
        assert domain.verify(task, _conversation(task, [*acks, rule_ignored]), None).reward == 0.0


def test_goal_retention_uses_every_constraint_kind() -> None:
    kinds = {GoalRetentionDomain().generate(seed, 1).meta["constraint"] for seed in range(12)}
    assert kinds == {"currency", "distance", "approved"}
