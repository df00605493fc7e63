"""`table/lookup.py`: cell lookup, header match and join lookup answers and their judges."""

from __future__ import annotations

from collections.abc import Callable

from posttrain.domains.table.lookup import CellLookup, HeaderMatch, JoinLookup
from posttrain.domains.table.question import TableQuestion, tables_of
from posttrain.types import Task


def _find(domain: TableQuestion, difficulty: int, wanted: Callable[[Task], bool]) -> Task:
    return next(t for t in (domain.generate(s, difficulty) for s in range(200)) if wanted(t))


def test_cell_lookup_answer_is_the_cell() -> None:
    task = CellLookup().generate(3, 4)
    assert task.answer == tables_of(task)[0].text(task.meta["row"], task.meta["column"])


def test_cell_lookup_accepts_trailing_zeros_on_a_number() -> None:
    domain = CellLookup()
    task = _find(domain, 2, lambda t: t.meta["number"] and "." in t.answer)
    assert domain.judge(task, task.answer + "0").passed


def test_cell_lookup_refuses_a_neighbouring_rows_value() -> None:
    domain = CellLookup()
    task = _find(domain, 5, lambda t: t.meta["number"])
    table, row = tables_of(task)[0], task.meta["row"]
    near = table.text(row + 1 if row + 1 < len(table.rows) else row - 1, task.meta["column"])
    assert domain.judge(task, near).passed == (near == task.answer)


def test_cell_lookup_names_the_row_by_a_unique_value_from_difficulty_six() -> None:
    task = CellLookup().generate(0, 8)
    assert " whose " in task.prompt[0].content


def test_header_match_accepts_the_header_without_its_unit() -> None:
    domain = HeaderMatch()
    task = _find(domain, 3, lambda t: " (" in t.answer)
    assert domain.judge(task, task.answer.split(" (")[0].upper()).passed
    assert not domain.judge(task, task.answer + " column").passed


def test_header_match_whole_table_value_occurs_once() -> None:
    task = HeaderMatch().generate(1, 9)
    table = tables_of(task)[0]
    value = table.text(task.meta["row"], task.meta["column"])
    cells = [table.text(r, c.name) for r in range(len(table.rows)) for c in table.numbers()]
    assert "Exactly one cell" in task.prompt[0].content and cells.count(value) == 1


def test_join_lookup_reads_the_category_attribute_from_the_second_table() -> None:
    task = JoinLookup().generate(2, 3)
    table, join = tables_of(task)
    category = table.cell(task.meta["row"], join.key.name)
    assert task.answer == join.cell(join.names().index(str(category)), task.meta["attribute"])


def test_join_lookup_refuses_the_other_attribute() -> None:
    domain = JoinLookup()
    task = domain.generate(2, 3)
    table, join = tables_of(task)
    group = join.names().index(str(table.cell(task.meta["row"], join.key.name)))
    other = next(c.name for c in join.columns[1:] if c.name != task.meta["attribute"])
    wrong = str(join.cell(group, other))
    assert domain.judge(task, wrong).passed == (wrong == task.answer)


def test_join_lookup_hard_variant_answers_a_row_under_the_shared_value() -> None:
    task = JoinLookup().generate(0, 7)
    table, join = tables_of(task)
    row = table.names().index(task.answer)
    group = join.names().index(str(table.cell(row, join.key.name)))
    assert task.meta["kind"] == "best" and join.cell(group, task.meta["shared"]) == task.meta["value"]  # fmt: skip
