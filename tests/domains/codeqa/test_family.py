"""The `codeqa` family (`posttrain/domains/codeqa`): self-check and each judge's edges."""

from __future__ import annotations

import json

import pytest

from posttrain.domains.codeqa import DOMAINS
from posttrain.domains.codeqa.calls import CallOrder, RecursionValue
from posttrain.domains.codeqa.shell import ShellPipeline
from posttrain.domains.codeqa.sql import SqlSelect
from posttrain.domains.codeqa.tracing import DeadLines, FinalValue, LineCount, PredictOutput
from tests.domains.family_contract import (
    assert_echo_scores_zero,
    assert_self_check_passes,
    assert_three_rejected_corruptions,
)


def test_every_domain_passes_the_self_check() -> None:
    assert_self_check_passes(DOMAINS)


def test_ids_are_unique_and_cells_span_three_verification_methods() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(set(ids)) == len(ids) and all(i.startswith("codeqa/") for i in ids)
    assert {d.axes.verification for d in DOMAINS} == {"exact", "set_match", "structure"}
    assert {(d.axes.modality, d.axes.tools, d.axes.rounds) for d in DOMAINS} == {
        ("code", "none", "single")
    }


def test_every_task_offers_three_corruptions_the_judge_rejects() -> None:
    assert_three_rejected_corruptions(DOMAINS)


def test_the_echoed_prompt_scores_zero() -> None:
    assert_echo_scores_zero(DOMAINS)


def test_printed_output_ignores_padding_but_not_line_order() -> None:
    domain = PredictOutput()
    task = domain.generate(3, 4)
    lines = task.answer.splitlines()
    assert domain.judge(task, "\n" + "\n".join("  " + line for line in lines) + "\n").passed
    assert not domain.judge(task, "\n".join(reversed(lines))).passed
    assert not domain.judge(task, f"```\n{task.answer}\n```").passed


def test_final_value_needs_the_bare_integer() -> None:
    domain = FinalValue()
    task = domain.generate(0, 5)
    assert domain.judge(task, f" {task.answer}\n").passed
    assert not domain.judge(task, f"{task.meta['name']} = {task.answer}").passed


def test_line_count_asks_about_a_line_that_runs_at_least_twice() -> None:
    domain = LineCount()
    for seed in range(5):
        assert int(domain.generate(seed, 3).answer) >= 2


@pytest.mark.parametrize("difficulty", [1, 2, 5, 10])
def test_no_constant_line_count_is_right_on_many_tasks(difficulty: int) -> None:
    # Before loops of 2+ iterations at every level, "2" was right on 20/20 tasks at d1.
    answers = [LineCount().generate(seed, difficulty).answer for seed in range(60)]
    assert max(answers.count(a) for a in set(answers)) <= 0.35 * len(answers)


def test_dead_lines_accept_any_order_and_give_partial_credit() -> None:
    domain = DeadLines()
    task = next(t for t in (domain.generate(s, 6) for s in range(20)) if "," in t.answer)
    lines = task.answer.split(",")
    assert domain.judge(task, ", ".join(reversed(lines))).passed
    partial = domain.judge(task, ",".join(lines[1:]))
    assert not partial.passed and 0.0 < partial.reward < 1.0
    assert domain.judge(task, ",".join([*lines, lines[0]])).reward == 0.0


def test_recursion_value_is_exact() -> None:
    domain = RecursionValue()
    task = domain.generate(1, 4)
    assert domain.judge(task, task.answer).passed
    assert not domain.judge(task, str(int(task.answer) + 1)).passed


def test_call_order_accepts_any_json_spacing_but_not_a_different_order() -> None:
    domain = CallOrder()
    task = domain.generate(2, 5)
    order = json.loads(task.answer)
    assert domain.judge(task, json.dumps(order, indent=2)).passed
    assert not domain.judge(task, json.dumps(order[1:])).passed
    assert not domain.judge(task, ", ".join(order)).passed


def test_sql_names_in_any_order_pass_and_unknown_names_fail() -> None:
    domain = SqlSelect()
    task = domain.generate(4, 5)
    names = task.answer.split(", ")
    assert domain.judge(task, ",".join(reversed(names))).passed
    assert domain.judge(task, f"{task.answer}, Nobody").reward == 0.0


def test_sql_naming_every_row_earns_nothing_and_a_near_miss_some_credit() -> None:
    domain = SqlSelect()
    for seed in range(10):
        task = domain.generate(seed, 5)
        everyone = ", ".join(r["name"] for r in task.meta["rows"])
        if set(everyone.split(", ")) == set(task.answer.split(", ")):
            continue  # the query keeps every row
        assert domain.judge(task, everyone).reward == 0.0  # v1: the share of rows kept
        if len(task.meta["others"]) > 1:  # one name more is not the whole table
            near = domain.judge(task, f"{task.answer}, {task.meta['others'][0]}")
            assert not near.passed and 0.0 < near.reward < 0.5


def test_shell_output_accepts_uniq_padding_either_way() -> None:
    domain = ShellPipeline()
    task = next(t for t in (domain.generate(s, 5) for s in range(20)) if "uniq -c" in t.meta["pipeline"])  # fmt: skip
    squeezed = "\n".join(" ".join(line.split()) for line in task.answer.splitlines())
    assert domain.judge(task, squeezed).passed
    assert domain.judge(task, task.answer).passed
