"""`table/select.py`: filtered sets, top k and sorted lists of names."""

from __future__ import annotations

from posttrain.domains.table.question import Condition, matching, tables_of
from posttrain.domains.table.select import FilterSet, SortRows, TopK


def test_filter_set_answer_meets_every_condition_and_some_row_does_not() -> None:
    task = FilterSet().generate(6, 7)
    table = tables_of(task)[0]
    conditions = [Condition.from_meta(c) for c in task.meta["conditions"]]
    rows = matching(table, conditions)
    assert len(conditions) == 3 and 0 < len(rows) < len(table.rows)
    assert task.answer == ", ".join(table.names()[r] for r in rows)


def test_filter_set_passes_in_any_order_and_case() -> None:
    domain = FilterSet()
    task = domain.generate(0, 5)
    names = task.answer.split(", ")
    assert domain.judge(task, ",".join(n.lower() for n in reversed(names))).passed


def test_filter_set_gives_partial_credit_to_a_partial_set() -> None:
    domain = FilterSet()
    task = next(t for t in (domain.generate(s, 6) for s in range(40)) if ", " in t.answer)
    names = task.answer.split(", ")
    verdict = domain.judge(task, ", ".join(names[:-1]))
    assert not verdict.passed and 0 < verdict.reward < 1


def test_filter_set_scores_zero_when_an_item_is_not_a_row_name() -> None:
    domain = FilterSet()
    task = domain.generate(0, 5)
    assert domain.judge(task, task.answer + ", Atlantis").reward == 0.0


def test_top_k_grows_with_difficulty() -> None:
    assert [TopK().generate(0, d).meta["k"] for d in (1, 4, 7, 10)] == [2, 3, 4, 5]


def test_top_k_passes_in_any_order_and_fails_with_one_missing() -> None:
    domain = TopK()
    task = domain.generate(2, 8)
    names = task.answer.split(", ")
    assert domain.judge(task, ", ".join(reversed(names))).passed
    assert not domain.judge(task, ", ".join(names[1:])).passed


def test_sort_rows_needs_the_exact_order() -> None:
    domain = SortRows()
    task = domain.generate(1, 6)
    names = task.answer.split(", ")
    assert domain.judge(task, task.answer.upper()).passed
    assert not domain.judge(task, ", ".join([names[1], names[0], *names[2:]])).passed
    assert domain.judge(task, ", ".join(reversed(names))).reward == 0.0


def test_sort_rows_keeps_the_rows_above_the_bound_from_difficulty_four() -> None:
    task = SortRows().generate(0, 9)
    table = tables_of(task)[0]
    conditions = [Condition.from_meta(c) for c in task.meta["conditions"]]
    assert conditions and len(task.answer.split(", ")) == len(matching(table, conditions))
