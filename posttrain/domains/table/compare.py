"""`table/*` comparisons: the extreme row, a row's rank, and the difference and percent
change between two rows.

    from posttrain.domains.table.compare import DOMAINS
    task = DOMAINS[3].generate(seed=0, difficulty=4)   # "By what percent is ... higher or lower"

- `table/argmax-v1` (exact) — the row with the highest or lowest value of a column, over
  all rows (d≤4), one category's rows (d5–7), or those also meeting a number condition.
- `table/rank-v1` (exact) — a row's rank by a column (rank 1 the highest, or the lowest),
  over all rows (d≤5) or within its category.
- `table/row-difference-v1` (numeric) — one row's value minus another's, exact to the
  column's decimals; the sign matters.
- `table/percent-change-v1` (numeric) — (A − B) / B × 100 for two rows of a column of
  positive amounts, rounded to 1 place; within 0.05 of the exact value passes (the
  FinQA-style tolerance), a trailing "%" is allowed.

Ordering questions state the tie rule: equal values are ordered by name alphabetically.

Not guaranteed: a "12.3%" answer to a non-percent question is read as 0.123 (wrong).
"""

from __future__ import annotations

import random
from fractions import Fraction

from posttrain.domains.base import Axes
from posttrain.domains.table.data import Schema, Table, number_text, rounded_text
from posttrain.domains.table.question import (
    Condition,
    Question,
    TableQuestion,
    both,
    category_condition,
    judge_integer,
    judge_name,
    judge_number,
    matching,
    ordered,
    threshold,
    tie_rule,
)
from posttrain.types import Task, Verdict

_EXACT = Axes("table", "none", "single", "exact")
_NUMERIC = Axes("table", "none", "single", "numeric")


def _word(descending: bool) -> str:
    return "highest" if descending else "lowest"


def _within(table: Table, conditions: list[Condition], column: str, descending: bool) -> list[int]:  # fmt: skip
    """The rows meeting `conditions`, best first."""
    rows = set(matching(table, conditions))
    return [r for r in ordered(table, column, descending) if r in rows]


def _other_column(table: Table, column: str) -> str:
    names = [c.name for c in table.numbers()]
    index = names.index(column)
    return names[index + 1] if index + 1 < len(names) else names[index - 1]


class Argmax(TableQuestion):
    """Which row has the highest or lowest value of a column, among the rows asked."""

    id = "table/argmax-v1"
    axes = _EXACT
    instructions = "Reply with the name only, exactly as written in the table, and nothing else."

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        column = rng.choice([c.name for c in table.numbers()])
        descending = rng.random() < 0.5
        conditions: list[Condition] = []
        if difficulty >= 5:
            for _ in range(30):
                candidate = [category_condition(rng, table)]
                if difficulty >= 8:
                    other = rng.choice([c.name for c in table.numbers() if c.name != column])
                    candidate.append(threshold(rng, table, other, rng.choice("><")))
                if len(matching(table, candidate)) >= 2:
                    conditions = candidate
                    break
        best = _within(table, conditions, column, descending)[0]
        among = f" among the rows where {both(conditions)}" if conditions else ""
        return Question(
            f'Which {table.key.name} has the {_word(descending)} "{column}"{among}? '
            f"{tie_rule(table)}",
            table.names()[best],
            {
                "column": column,
                "descending": descending,
                "conditions": [c.to_meta() for c in conditions],
            },  # fmt: skip
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_name(text, task.answer, "the name of the extreme row")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, column, descending = tables[0], task.meta["column"], task.meta["descending"]
        conditions = [Condition.from_meta(c) for c in task.meta["conditions"]]
        rows = _within(table, conditions, column, descending)
        names = table.names()
        return [
            names[rows[1]],  # the runner-up
            names[rows[-1]],  # the opposite extreme
            names[ordered(table, column, descending)[0]],  # the conditions ignored
            names[_within(table, conditions, _other_column(table, column), descending)[0]],
            names[ordered(table, column, descending)[1]],
            names[ordered(table, column, descending)[2]],
        ]


class Rank(TableQuestion):
    """A row's rank by a column, over all rows or (d≥6) within its category."""

    id = "table/rank-v1"
    axes = _EXACT
    instructions = "Reply with the rank only, as an integer, and nothing else."

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        column = rng.choice([c.name for c in table.numbers()])
        descending = rng.random() < 0.5
        row = rng.randrange(len(table.rows))
        conditions: list[Condition] = []
        if difficulty >= 6:
            category = table.category().name
            conditions = [Condition(category, "=", str(table.cell(row, category)))]
        rank = _within(table, conditions, column, descending).index(row) + 1
        scope = f" where {both(conditions)}" if conditions else ""
        order = "highest to lowest" if descending else "lowest to highest"
        return Question(
            f'Rank the rows{scope} by "{column}" from {order}, so that rank 1 is the '
            f"{_word(descending)}. What is the rank of the {table.key.name} "
            f'"{table.names()[row]}"? {tie_rule(table)}',
            str(rank),
            {
                "column": column,
                "descending": descending,
                "row": row,
                "conditions": [c.to_meta() for c in conditions],
            },  # fmt: skip
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(text, int(task.answer), "the row's rank")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, column, row = tables[0], task.meta["column"], task.meta["row"]
        descending = task.meta["descending"]
        conditions = [Condition.from_meta(c) for c in task.meta["conditions"]]
        rank = int(task.answer)
        size = len(matching(table, conditions))
        other = _within(table, conditions, _other_column(table, column), descending)
        overall = ordered(table, column, descending).index(row) + 1
        return [str(size + 1 - rank), str(rank + 1), str(rank - 1), str(other.index(row) + 1), str(overall), str(rank + 2)]  # fmt: skip


def _two_rows(rng: random.Random, table: Table, column: str) -> tuple[int, int]:
    """Two rows with different values in `column` (the first pair found)."""
    for _ in range(50):
        a, b = rng.sample(range(len(table.rows)), 2)
        if table.value(a, column) != table.value(b, column):
            return a, b
    return a, b


class RowDifference(TableQuestion):
    """One row's value of a column minus another row's, exact."""

    id = "table/row-difference-v1"
    axes = _NUMERIC
    instructions = (
        "Reply with the difference only, as a number without units (a leading minus sign "
        "if it is negative), and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        column = rng.choice([c.name for c in table.numbers()])
        a, b = _two_rows(rng, table, column)
        key, names = table.key.name, table.names()
        decimals = table.column(column).decimals
        difference = int(table.cell(a, column)) - int(table.cell(b, column))
        return Question(
            f'What is the "{column}" of the {key} "{names[a]}" minus the "{column}" of the '
            f'{key} "{names[b]}"?',
            number_text(difference, decimals),
            {"column": column, "a": a, "b": b},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_number(text, Fraction(task.answer), Fraction(1, 10**6), "the difference")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, column, a, b = tables[0], task.meta["column"], task.meta["a"], task.meta["b"]
        decimals = table.column(column).decimals
        difference = int(table.cell(a, column)) - int(table.cell(b, column))
        near = a + 1 if a + 1 < len(table.rows) else a - 1
        other = _other_column(table, column)
        out = [
            number_text(-difference, decimals),  # subtracted the wrong way round
            number_text(int(table.cell(near, column)) - int(table.cell(b, column)), decimals),
            number_text(difference + 10**decimals, decimals),
            table.text(a, column),
        ]
        other_difference = int(table.cell(a, other)) - int(table.cell(b, other))
        out.append(number_text(other_difference, table.column(other).decimals))
        return out


class PercentChange(TableQuestion):
    """(A − B) / B × 100 between two rows of a column of positive amounts."""

    id = "table/percent-change-v1"
    axes = _NUMERIC
    need = "ratio"
    instructions = (
        "Reply with the percentage only, as a number rounded to 1 decimal place with a "
        "leading minus sign if it is negative (a trailing % sign is allowed), and nothing "
        "else; any answer within 0.05 of the exact value is accepted."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        column = rng.choice([c.name for c in table.numbers("ratio")])
        a, b = _two_rows(rng, table, column)
        key, names = table.key.name, table.names()
        exact = _change(table, column, a, b)
        return Question(
            f'By what percent is the "{column}" of the {key} "{names[a]}" higher or lower '
            f'than that of the {key} "{names[b]}"? Compute (A - B) / B * 100, where A is the '
            f'value of "{names[a]}" and B the value of "{names[b]}".',
            rounded_text(exact, 1),
            {"column": column, "a": a, "b": b, "exact": str(exact)},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        body = text.strip()
        body = body[:-1] if body.endswith("%") else body
        return judge_number(body, Fraction(task.meta["exact"]), Fraction(1, 20), "the percent change")  # fmt: skip

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, column, a, b = tables[0], task.meta["column"], task.meta["a"], task.meta["b"]
        exact = Fraction(task.meta["exact"])
        value_a, value_b = table.value(a, column), table.value(b, column)
        near = a + 1 if a + 1 < len(table.rows) else a - 1
        return [
            rounded_text((value_a - value_b) / value_a * 100, 1),  # relative to A, not B
            rounded_text(value_a / value_b * 100, 1),  # the ratio, not the change
            rounded_text(-exact, 1),
            rounded_text(exact / 100, 4),  # never multiplied by 100
            rounded_text(_change(table, column, near, b), 1),
            rounded_text(exact + 1, 1),
        ]


def _change(table: Table, column: str, a: int, b: int) -> Fraction:
    return (table.value(a, column) - table.value(b, column)) / table.value(b, column) * 100


DOMAINS: tuple[TableQuestion, ...] = (Argmax(), Rank(), RowDifference(), PercentChange())
