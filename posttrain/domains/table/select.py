"""`table/*` selections: the rows meeting several conditions, the top k by a column, and
rows sorted by a column.

    from posttrain.domains.table.select import DOMAINS
    task = DOMAINS[2].generate(seed=0, difficulty=5)   # "Sort the rows where ... List the ..."

- `table/filter-set-v1` (set match) — every row meeting a number and a category condition
  (d≤4), or two number conditions and a category (d≥5); names in any order.
- `table/top-k-v1` (set match) — the k rows (2 at d=1 to 5 at d=10) with the highest or
  lowest value of a column, in any order.
- `table/sort-rows-v1` (exact, ordered) — the names of the rows (all of them for d≤3,
  those above a bound in another column after that) sorted by a column.

A list answer is names separated by commas; every item must be a row name of the table
(after whitespace collapsing and case folding) or the reply scores 0, so prose around a
list is not read as one. The two set domains give partial credit (the set F1) and pass
only on the exact set; the sorted list passes only in the exact order (reward 0 or 1).

Not guaranteed: a duplicated name counts once in the set domains; the sort domain's
bound can leave fewer rows than planned when the bound's value is tied.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.table.data import Schema, Table
from posttrain.domains.table.question import (
    Condition,
    Question,
    TableQuestion,
    both,
    category_condition,
    matching,
    ordered,
    read_names,
    tables_of,
    threshold,
    tie_rule,
)
from posttrain.types import Task, Verdict
from posttrain.verify.sets import normalize_item, set_f1, set_match

_SET = Axes("table", "none", "single", "set_match")
_LIST_FORMAT = "the reply is not a comma-separated list of names from the table"


def _names(table: Table, rows: list[int]) -> str:
    names = table.names()
    return ", ".join(names[r] for r in rows)


def _judge_set(task: Task, text: str, what: str) -> Verdict:
    items = read_names(text, tables_of(task)[0])
    if items is None:
        return verdict(False, what, components={"format": 0.0, "f1": 0.0}, why=_LIST_FORMAT)
    f1 = set_f1(items, task.answer)
    passed = set_match(items, task.answer)
    return verdict(passed, what, components={"format": 1.0, "f1": f1}, reward=f1, why=f"set F1 {f1:.2f}")  # fmt: skip


class FilterSet(TableQuestion):
    """The names of every row meeting two or three conditions, in any order."""

    id = "table/filter-set-v1"
    axes = _SET
    instructions = (
        "Reply with the matching names only, exactly as written in the table, separated "
        "by commas, in any order, and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        numbers = [c.name for c in table.numbers()]
        conditions: list[Condition] = []
        for _ in range(40):
            first, second = rng.sample(numbers, 2)
            candidate = [threshold(rng, table, first, rng.choice("><"))]
            if difficulty >= 5:
                candidate.append(threshold(rng, table, second, rng.choice("><")))
            candidate.append(category_condition(rng, table))
            if 0 < len(matching(table, candidate)) < len(table.rows):
                conditions = candidate
                break
        if not conditions:  # fall back to one condition that some rows fail
            lowest = ordered(table, numbers[0], descending=False)[0]
            conditions = [Condition(numbers[0], ">", table.text(lowest, numbers[0]))]
        rows = matching(table, conditions)
        return Question(
            f"List the {table.key.name} of every row where {both(conditions)}.",
            _names(table, rows),
            {"conditions": [c.to_meta() for c in conditions]},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return _judge_set(task, text, "the set of matching names")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table = tables[0]
        conditions = [Condition.from_meta(c) for c in task.meta["conditions"]]
        rows = matching(table, conditions)
        others = [r for r in range(len(table.rows)) if r not in rows]
        out = [_names(table, others)]  # the complement: F1 0
        if len(rows) > 1:
            out.append(_names(table, rows[:-1]))  # one left out
        out.append(_names(table, [*rows, others[0]]))  # one too many
        out.append(_names(table, matching(table, conditions[:1])))  # first condition only
        out.append(_names(table, matching(table, [c.inclusive() for c in conditions])))
        out.append(_names(table, others[:1]))
        return out


class TopK(TableQuestion):
    """The k rows with the highest or lowest value of a column, in any order."""

    id = "table/top-k-v1"
    axes = _SET
    instructions = (
        "Reply with the names only, exactly as written in the table, separated by commas, "
        "in any order, and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        k = 2 + (difficulty - 1) // 3
        column = rng.choice([c.name for c in table.numbers()])
        descending = rng.random() < 0.5
        rows = ordered(table, column, descending)[:k]
        return Question(
            f'Which {k} rows have the {"highest" if descending else "lowest"} "{column}"? '
            f"Give their {table.key.name} names. {tie_rule(table)}",
            _names(table, rows),
            {"k": k, "column": column, "descending": descending},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return _judge_set(task, text, f"the {task.meta['k']} names")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, k, column = tables[0], task.meta["k"], task.meta["column"]
        descending = task.meta["descending"]
        order = ordered(table, column, descending)
        others = [c.name for c in table.numbers() if c.name != column]
        return [
            _names(table, order[-k:]),  # the other end: F1 0 while 2k <= rows
            _names(table, order[: k - 1]),
            _names(table, order[: k + 1]),
            _names(table, order[1 : k + 1]),
            _names(table, ordered(table, others[0], descending)[:k]),  # the wrong column
        ]


class SortRows(TableQuestion):
    """The rows (all, or those above a bound from d=4) sorted by a column, as names."""

    id = "table/sort-rows-v1"
    axes = Axes("table", "none", "single", "exact")
    instructions = (
        "Reply with the names only, exactly as written in the table, separated by commas, "
        "in the order asked, and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        numbers = [c.name for c in table.numbers()]
        column = rng.choice(numbers)
        descending = rng.random() < 0.5
        conditions: list[Condition] = []
        if difficulty >= 4:
            size = min(len(table.rows) - 1, 3 + difficulty)
            other = rng.choice([c for c in numbers if c != column])
            bound = ordered(table, other, descending=True)[size]
            condition = Condition(other, ">", table.text(bound, other))
            if len(matching(table, [condition])) >= 3:
                conditions = [condition]
        rows = set(matching(table, conditions))
        order = [r for r in ordered(table, column, descending) if r in rows]
        scope = f" where {both(conditions)}" if conditions else ""
        direction = "highest to lowest" if descending else "lowest to highest"
        return Question(
            f'Sort the rows{scope} by "{column}" from {direction}. {tie_rule(table)} '
            f"List the {table.key.name} of each row in that order.",
            _names(table, order),
            {
                "column": column,
                "descending": descending,
                "conditions": [c.to_meta() for c in conditions],
            },  # fmt: skip
        )

    def judge(self, task: Task, text: str) -> Verdict:
        what = "the names in sorted order"
        items = read_names(text, tables_of(task)[0])
        if items is None:
            return verdict(False, what, components={"format": 0.0, "correct": 0.0}, why=_LIST_FORMAT)  # fmt: skip
        gold = [normalize_item(n) for n in task.answer.split(", ")]
        right = items == gold
        why = "a name is missing or extra" if sorted(items) != sorted(gold) else "the order differs"
        return verdict(right, what, components={"format": 1.0, "correct": float(right)}, why=why)

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table = tables[0]
        names = task.answer.split(", ")
        conditions = [Condition.from_meta(c) for c in task.meta["conditions"]]
        rows = set(matching(table, conditions))
        others = [c.name for c in table.numbers() if c.name != task.meta["column"]]
        by_other = [r for r in ordered(table, others[0], task.meta["descending"]) if r in rows]
        return [
            ", ".join(reversed(names)),
            ", ".join([names[1], names[0], *names[2:]]),  # the first two swapped
            ", ".join(names[:-1]),  # one left out
            _names(table, by_other),  # sorted by the wrong column
            _names(table, sorted(rows)),  # table order, not sorted
        ]


DOMAINS: tuple[TableQuestion, ...] = (FilterSet(), TopK(), SortRows())
