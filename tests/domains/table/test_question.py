"""`table/question.py`: tie rule, conditions, list reading, number judging, decoy filtering."""

from __future__ import annotations

from fractions import Fraction

from posttrain.domains.table.data import Column, Table
from posttrain.domains.table.question import (
    Condition,
    judge_integer,
    judge_number,
    matching,
    ordered,
    read_names,
)
from posttrain.domains.table.select import FilterSet

TABLE = Table(
    "t",
    (Column("Name", "key"), Column("Kind", "category"), Column("Score", "number", 1)),
    (("Zed", "A", 50), ("Amy", "B", 70), ("Bob", "A", 50), ("Cy", "B", 20)),
)


def test_ties_are_broken_by_name_alphabetically() -> None:
    assert [TABLE.names()[r] for r in ordered(TABLE, "Score", descending=True)] == ["Amy", "Bob", "Zed", "Cy"]  # fmt: skip
    assert [TABLE.names()[r] for r in ordered(TABLE, "Score", descending=False)] == ["Cy", "Bob", "Zed", "Amy"]  # fmt: skip


def test_a_threshold_is_strict_and_its_inclusive_reading_is_not() -> None:
    condition = Condition("Score", ">", "5.0")
    assert matching(TABLE, [condition]) == [1]
    assert matching(TABLE, [condition.inclusive()]) == [0, 1, 2]


def test_conditions_combine_with_and() -> None:
    assert matching(TABLE, [Condition("Score", "<", "6.0"), Condition("Kind", "=", "A")]) == [0, 2]  # fmt: skip


def test_a_condition_reads_as_words() -> None:
    assert Condition("Score", "<", "6.0").words() == '"Score" is less than 6.0'


def test_a_list_with_an_unknown_name_is_not_a_list() -> None:
    assert read_names(" amy ,BOB", TABLE) == ["amy", "bob"]
    assert read_names("I think Amy, Bob", TABLE) is None
    assert read_names("", TABLE) is None


def test_a_number_passes_within_the_tolerance_only() -> None:
    assert judge_number("12.35", Fraction(12345, 1000), Fraction(1, 200), "x").passed
    assert not judge_number("12.36", Fraction(12345, 1000), Fraction(1, 200), "x").passed
    assert judge_number("1,234", Fraction(1234), Fraction(0), "x").passed
    assert judge_number("about 12", Fraction(12), Fraction(1), "x").components["format"] == 0.0


def test_an_integer_must_be_bare() -> None:
    assert judge_integer(" 7\n", 7, "x").passed
    assert not judge_integer("7.0", 7, "x").passed


def test_wrong_keeps_only_decoys_the_judge_rejects() -> None:
    domain = FilterSet()
    task = domain.generate(0, 3)
    wrong = domain.wrong(task)
    assert task.answer not in wrong and len(wrong) == len(set(wrong))
    assert not any(domain.judge(task, w).passed for w in wrong)
