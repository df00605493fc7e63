"""`table/compare.py`: extreme rows, ranks, differences and percent changes."""

from __future__ import annotations

from fractions import Fraction

from posttrain.domains.table.compare import Argmax, PercentChange, Rank, RowDifference
from posttrain.domains.table.data import rounded_text
from posttrain.domains.table.question import Condition, matching, ordered, tables_of


def test_argmax_answer_is_the_first_row_under_the_tie_rule() -> None:
    task = Argmax().generate(4, 9)
    table = tables_of(task)[0]
    rows = set(matching(table, [Condition.from_meta(c) for c in task.meta["conditions"]]))
    order = [r for r in ordered(table, task.meta["column"], task.meta["descending"]) if r in rows]
    assert task.answer == table.names()[order[0]]
    assert "alphabetically" in task.prompt[0].content


def test_argmax_judge_ignores_case_and_spacing_but_not_the_name() -> None:
    domain = Argmax()
    task = domain.generate(0, 3)
    assert domain.judge(task, "  " + task.answer.upper() + "\n").passed
    assert not domain.judge(task, task.answer + "s").passed


def test_rank_counts_from_one_in_the_stated_direction() -> None:
    task = Rank().generate(3, 2)
    table = tables_of(task)[0]
    order = ordered(table, task.meta["column"], task.meta["descending"])
    assert int(task.answer) == order.index(task.meta["row"]) + 1


def test_rank_within_a_category_from_difficulty_six() -> None:
    task = Rank().generate(3, 7)
    table = tables_of(task)[0]
    rows = matching(table, [Condition.from_meta(c) for c in task.meta["conditions"]])
    assert task.meta["conditions"] and 1 <= int(task.answer) <= len(rows)


def test_row_difference_sign_matters() -> None:
    domain = RowDifference()
    task = domain.generate(1, 5)
    assert Fraction(task.answer) != 0
    assert not domain.judge(task, str(-Fraction(task.answer))).passed


def test_percent_change_accepts_a_percent_sign_and_the_tolerance() -> None:
    domain = PercentChange()
    task = domain.generate(0, 5)
    exact = Fraction(task.meta["exact"])
    assert domain.judge(task, task.answer + "%").passed
    assert domain.judge(task, rounded_text(exact + Fraction(4, 100), 3)).passed
    assert not domain.judge(task, rounded_text(exact + Fraction(6, 100), 3)).passed


def test_percent_change_refuses_the_unscaled_fraction() -> None:
    domain = PercentChange()
    task = next(t for t in (domain.generate(s, 4) for s in range(40)) if abs(Fraction(t.meta["exact"])) > 5)  # fmt: skip
    assert not domain.judge(task, rounded_text(Fraction(task.meta["exact"]) / 100, 4)).passed


def test_percent_change_uses_positive_amounts_only() -> None:
    for seed in range(20):
        task = PercentChange().generate(seed, 6)
        table = tables_of(task)[0]
        assert table.column(task.meta["column"]).ratio
        assert table.value(task.meta["b"], task.meta["column"]) > 0
