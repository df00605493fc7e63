"""running-tally: every total is checked to the cent; the dictation goes on."""

from __future__ import annotations

from posttrain.domains.dialog.tally import RunningTallyDomain, parse_cents
from posttrain.types import Message


def test_parse_cents_reads_plain_amounts_only() -> None:
    assert parse_cents("TOTAL: 12.5") == 1250
    assert parse_cents("TOTAL: 12") == 1200
    assert parse_cents("TOTAL: $12.50") is None
    assert parse_cents("The total is 12.50") is None


def test_user_dictates_the_next_message_after_each_total() -> None:
    domain = RunningTallyDomain()
    task = domain.generate(0, 6)
    reply = domain.open(task).user_turn(Message("assistant", domain.solve(task)[0]))
    assert reply is not None
    assert reply.content == "\n".join(task.meta["world"]["messages"][1])


def test_equivalent_amount_without_trailing_zero_passes() -> None:
    domain = RunningTallyDomain()
    task = domain.generate(2, 3)
    turns = [t.removesuffix("0") if t.endswith("0") else t for t in domain.solve(task)]
    assert domain.judge(task, domain.play(task, turns)).passed


def test_one_wrong_intermediate_total_fails_with_partial_reward() -> None:
    domain = RunningTallyDomain()
    task = domain.generate(1, 5)
    turns = domain.solve(task)
    turns[0] = "TOTAL: 0.01"
    verdict = domain.judge(task, domain.play(task, turns))
    assert not verdict.passed and 0.0 < verdict.reward < 0.5
