"""`table/*` lookups: read one cell, name the column that holds a value, follow a join.

    from posttrain.domains.table.lookup import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=6)   # "What is the "Stock" of the Product whose ..."

- `table/cell-lookup-v1` — the value of a named column in a named row; from d=6 the row
  is named by a value of another column that no other row has (a two-step lookup).
- `table/header-match-v1` — which column of a named row holds a given value; from d=6
  the row is not named and the value occurs once in the whole table.
- `table/join-lookup-v1` — two tables joined on the category: a row's category's
  attribute (d≤5); from d=6, among the rows whose category has a given shared
  attribute, the one with the highest or lowest value of a column.

All three are exact: a number must equal the cell's value ("12.5" passes for "12.50"),
a name or header must match after whitespace collapsing and case folding; a header may
drop its unit in parentheses ("Salary" for "Salary ($)").

Not guaranteed: the two-step and whole-table variants fall back to the simpler question
when the table holds no value that occurs only once (rare at the sizes generated).
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.table.data import Schema, Table, build_join_table, number_text
from posttrain.domains.table.question import (
    Question,
    TableQuestion,
    judge_name,
    judge_number,
    ordered,
    tie_rule,
)
from posttrain.types import Task, Verdict
from posttrain.verify.sets import normalize_item

_EXACT = Axes("table", "none", "single", "exact")


def _unique_in_column(table: Table, row: int, column: str) -> bool:
    value = table.text(row, column)
    return sum(table.text(r, column) == value for r in range(len(table.rows))) == 1


class CellLookup(TableQuestion):
    """The value of one cell, the row named directly or (d≥6) by a unique value."""

    id = "table/cell-lookup-v1"
    axes = _EXACT
    instructions = (
        "Reply with the cell's value only, exactly as written in the table (a number "
        "without units, or a name), and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        row = rng.randrange(len(table.rows))
        column = rng.choice([c.name for c in table.columns[1:]])
        key, name = table.key.name, table.names()[row]
        where = f'the {key} "{name}"'
        if difficulty >= 6:
            others = [c.name for c in table.numbers() if c.name != column]
            rng.shuffle(others)
            via = next((c for c in others if _unique_in_column(table, row, c)), None)
            if via is not None:
                where = f'the {key} whose "{via}" is {table.text(row, via)}'
        number = table.column(column).kind == "number"
        return Question(
            f'What is the "{column}" of {where}?',
            table.text(row, column),
            {"row": row, "column": column, "number": number},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        if task.meta["number"]:
            return judge_number(text, Fraction(task.answer), Fraction(1, 10**6), "the cell's value")
        return judge_name(text, task.answer, "the cell's value")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, row, column = tables[0], task.meta["row"], task.meta["column"]
        index = table.index(column)
        out = [table.text(r, column) for r in (row - 1, row + 1) if 0 <= r < len(table.rows)]
        out += [table.text(row, table.columns[i].name) for i in (index + 1, index - 1) if 1 <= i < len(table.columns)]  # fmt: skip
        spec = table.column(column)
        if spec.kind == "number":
            out.append(number_text(int(table.cell(row, column)) + 10**spec.decimals, spec.decimals))
        else:  # the other categories the table holds
            out += list(dict.fromkeys(str(table.cell(r, column)) for r in range(len(table.rows))))
        out.append(table.names()[row])
        return out


def _stem(header: str) -> str:
    return normalize_item(header.split(" (")[0])


class HeaderMatch(TableQuestion):
    """Which column holds a value: in a named row, or (d≥6) anywhere in the table."""

    id = "table/header-match-v1"
    axes = _EXACT
    instructions = (
        "Reply with the column header only, as written in the table (you may leave out a "
        "unit in parentheses), and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        numbers = [c.name for c in table.numbers()]
        cells = [(r, c) for r in range(len(table.rows)) for c in numbers]
        if difficulty >= 6:
            counts = Counter(table.text(r, c) for r, c in cells)
            once = [(r, c) for r, c in cells if counts[table.text(r, c)] == 1]
            if once:
                row, column = rng.choice(once)
                return Question(
                    f"Exactly one cell of the table holds the value {table.text(row, column)}. "
                    "Which column is that cell in?",
                    column,
                    {"row": row, "column": column},
                )
        in_row = [[table.text(r, c) for c in numbers] for r in range(len(table.rows))]
        # A value that two columns of the row share would make two right answers.
        row, column = rng.choice(
            [(r, c) for r, c in cells if in_row[r].count(table.text(r, c)) == 1]
        )
        return Question(
            f'In the row for the {table.key.name} "{table.names()[row]}", which column holds '
            f"the value {table.text(row, column)}?",
            column,
            {"row": row, "column": column},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        got = normalize_item(text)
        right = got in (normalize_item(task.answer), _stem(task.answer))
        return verdict(right, "the column's header", why=f"got {text.strip()[:40]!r}")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table = tables[0]
        index = table.index(task.meta["column"])
        near = [table.columns[i].name for i in (index - 1, index + 1) if 2 <= i < len(table.columns)]  # fmt: skip
        return [*near, table.key.name, table.category().name, table.text(task.meta["row"], task.meta["column"])]  # fmt: skip


class JoinLookup(TableQuestion):
    """Join the table with its category table: an attribute, or (d≥6) a filtered best row."""

    id = "table/join-lookup-v1"
    axes = _EXACT
    instructions = (
        "Reply with the answer only, exactly as written in the tables (a name or a value), "
        "and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        join = build_join_table(rng, schema)
        key, category = table.key.name, table.category().name
        row = rng.randrange(len(table.rows))
        group = str(table.cell(row, category))
        group_row = join.names().index(group)
        if difficulty < 6:
            attribute = rng.choice([c.name for c in join.columns[1:]])
            return Question(
                f'Find the {key} "{table.names()[row]}" in the first table and its {category} '
                f'in the second table. What is the "{attribute}" of that {category}?',
                str(join.cell(group_row, attribute)),
                {"kind": "attribute", "row": row, "attribute": attribute},
                (join,),
            )
        shared = join.columns[2].name
        column = rng.choice([c.name for c in table.numbers()])
        descending = rng.random() < 0.5
        for _ in range(20):  # prefer a shared value that more than one row reaches
            value = str(join.cell(join.names().index(str(table.cell(row, category))), shared))
            chosen = _best(table, join, shared, value, column, descending)
            if len(chosen) >= 2:
                break
            row = rng.randrange(len(table.rows))
        best = chosen[0]
        return Question(
            f'Consider the rows whose {category} has "{shared}" {value} in the second '
            f"table. Among them, which {key} has the {'highest' if descending else 'lowest'} "
            f'"{column}"? {tie_rule(table)}',
            table.names()[best],
            {
                "kind": "best",
                "shared": shared,
                "value": value,
                "column": column,
                "descending": descending,
            },  # fmt: skip
            (join,),
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_name(text, task.answer, "the value found through the join")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, join = tables
        meta = task.meta
        if meta["kind"] == "attribute":
            row = meta["row"]
            group = str(table.cell(row, join.key.name))
            group_row = join.names().index(group)
            other_attribute = next(c.name for c in join.columns[1:] if c.name != meta["attribute"])  # fmt: skip
            out = [str(join.cell(group_row, other_attribute))]
            out += [str(join.cell(r, meta["attribute"])) for r in range(len(join.rows)) if r != group_row]  # fmt: skip
            return [*out, group, table.names()[row]]
        column, descending = meta["column"], meta["descending"]
        chosen = _best(table, join, meta["shared"], meta["value"], column, descending)
        names = table.names()
        out = [names[chosen[1]]] if len(chosen) > 1 else []
        out.append(names[ordered(table, column, descending)[0]])  # the join ignored
        out.append(names[chosen[-1]])  # the opposite extreme
        out += [names[r] for r in ordered(table, column, not descending)[:2]]
        out += [names[r] for r in ordered(table, column, descending)[1:3]]
        return out


def _best(table: Table, join: Table, shared: str, value: str, column: str, descending: bool) -> list[int]:  # fmt: skip
    """The rows whose category has `shared` == `value`, best first."""
    groups = {str(join.cell(r, join.key.name)) for r in range(len(join.rows)) if str(join.cell(r, shared)) == value}  # fmt: skip
    category = join.key.name
    return [r for r in ordered(table, column, descending) if str(table.cell(r, category)) in groups]


DOMAINS: tuple[TableQuestion, ...] = (CellLookup(), HeaderMatch(), JoinLookup())
