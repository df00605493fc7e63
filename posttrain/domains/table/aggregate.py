"""`table/*` aggregates: count the rows meeting conditions, sum or average a column, and
aggregate a column per group into a JSON object.

    from posttrain.domains.table.aggregate import DOMAINS
    task = DOMAINS[3].generate(seed=0, difficulty=7)   # {"Asia": 21.4, "Europe": 9.8, ...}

- `table/count-where-v1` (exact) — how many rows meet one condition (d≤3), a number and
  a category condition (d4–6), or two number conditions and a category (d≥7). The count
  (at least 1, below the number of rows) is drawn evenly from the counts that 40 drawn
  filters offer, so no constant answer is right for more than about a quarter of tasks.
- `table/column-sum-v1` (numeric) — the total of an additive column over all rows (d≤3),
  the rows of one category (d4–7), or those also meeting a number condition (d≥8);
  exact to the column's decimals ("12,345" and "12345.0" pass).
- `table/column-mean-v1` (numeric) — the mean of a column over all rows or (d≥6) one
  category's rows, rounded to 2 places; within 0.005 of the exact mean passes.
- `table/group-aggregate-v1` (structure) — a JSON object mapping each category present
  to the count, sum, max or min of a column (from d=7 also the mean, to 1 place, within
  0.05). Reward is the share of groups right, extra keys counted as wrong; it passes
  only with every group right and no extra key.

Not guaranteed: group keys are matched after case folding; a JSON value must be a
number (a numeric string such as "12" is wrong); small tables offer few counts, so at
d=1 (4 rows) one count is right for about a third of count-where tasks.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.table.data import Schema, Table, number_text, rounded_text
from posttrain.domains.table.question import (
    FLOAT_SLACK,
    Condition,
    Question,
    TableQuestion,
    both,
    category_condition,
    judge_integer,
    judge_number,
    matching,
    threshold,
)
from posttrain.types import Task, Verdict
from posttrain.verify.sets import normalize_item
from posttrain.verify.structure import parse_json

_EXACT_SUM = Fraction(1, 10**6)
MIN_COUNT = 1  # the fewest matching rows a count-where question asks about
_FILTER_DRAWS = 40


def _conditions(task: Task) -> list[Condition]:
    return [Condition.from_meta(c) for c in task.meta["conditions"]]


def _over(conditions: list[Condition]) -> str:
    return f"the rows where {both(conditions)}" if conditions else "all rows"


def _scaled_sum(table: Table, rows: list[int], column: str) -> int:
    return sum(int(table.cell(r, column)) for r in rows)


def _neighbour(table: Table, column: str) -> str:
    """Another number column, the one next to `column` where there is one."""
    names = [c.name for c in table.numbers()]
    index = names.index(column)
    return names[index + 1] if index + 1 < len(names) else names[index - 1]


class CountWhere(TableQuestion):
    """How many rows meet the stated conditions."""

    id = "table/count-where-v1"
    axes = Axes("table", "none", "single", "exact")
    instructions = "Reply with the count only, as an integer, and nothing else."

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        # Filters land on few rows far more often than on many, so the count is drawn
        # evenly from the counts the drawn filters offer: no constant answer is right often.
        numbers = [c.name for c in table.numbers()]
        offered: dict[int, list[list[Condition]]] = {}
        for _ in range(_FILTER_DRAWS):
            first, second = rng.sample(numbers, 2)
            conditions = [threshold(rng, table, first, rng.choice("><"))]
            if difficulty >= 7:
                conditions.append(threshold(rng, table, second, rng.choice("><")))
            if difficulty >= 4:
                conditions.append(category_condition(rng, table))
            count = len(matching(table, conditions))
            if MIN_COUNT <= count < len(table.rows):
                offered.setdefault(count, []).append(conditions)
        if offered:  # else keep the last filter drawn, whatever its count
            count = rng.choice(sorted(offered))
            conditions = rng.choice(offered[count])
        return Question(
            f"How many rows are there where {both(conditions)}?",
            str(count),
            {"conditions": [c.to_meta() for c in conditions]},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(text, int(task.answer), "the number of matching rows")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, conditions = tables[0], _conditions(task)
        count = int(task.answer)
        inclusive = len(matching(table, [c.inclusive() for c in conditions]))
        first_only = len(matching(table, conditions[:1]))
        return [str(count + 1), str(inclusive), str(first_only), str(len(table.rows) - count), str(count - 1), str(count + 2)]  # fmt: skip


class ColumnSum(TableQuestion):
    """The total of an additive column over all rows or the rows meeting conditions."""

    id = "table/column-sum-v1"
    axes = Axes("table", "none", "single", "numeric")
    need = "additive"
    instructions = (
        "Reply with the total only, as a number without units (thousands separators are "
        "allowed), and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        column = rng.choice([c.name for c in table.numbers("additive")])
        conditions: list[Condition] = []
        if difficulty >= 4:
            conditions.append(category_condition(rng, table))
        if difficulty >= 8:
            other = [c.name for c in table.numbers() if c.name != column]
            for _ in range(30):
                extra = threshold(rng, table, rng.choice(other), rng.choice("><"))
                if len(matching(table, [*conditions, extra])) >= 2:
                    conditions.append(extra)
                    break
        rows = matching(table, conditions)
        decimals = table.column(column).decimals
        return Question(
            f'What is the total of "{column}" over {_over(conditions)}?',
            number_text(_scaled_sum(table, rows, column), decimals),
            {"column": column, "conditions": [c.to_meta() for c in conditions]},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_number(text, Fraction(task.answer), _EXACT_SUM, "the column total")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, column, conditions = tables[0], task.meta["column"], _conditions(task)
        rows = matching(table, conditions)
        decimals = table.column(column).decimals
        total = _scaled_sum(table, rows, column)
        other = _neighbour(table, column)
        candidates = [
            total - int(table.cell(rows[-1], column)),  # one row left out
            _scaled_sum(table, list(range(len(table.rows))), column),  # conditions ignored
            total + 10**decimals,
            total - 10**decimals,
            total + int(table.cell(rows[0], column)),  # one row counted twice
            _scaled_sum(table, matching(table, [c.inclusive() for c in conditions]), column),
        ]
        out = [number_text(v, decimals) for v in candidates]
        out.append(number_text(_scaled_sum(table, rows, other), table.column(other).decimals))
        return out


class ColumnMean(TableQuestion):
    """The mean of a column over all rows or one category's rows, to 2 places."""

    id = "table/column-mean-v1"
    axes = Axes("table", "none", "single", "numeric")
    instructions = (
        "Reply with the mean only, as a number rounded to 2 decimal places, without units, "
        "and nothing else; any answer within 0.005 of the exact mean is accepted."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        column = rng.choice([c.name for c in table.numbers()])
        conditions: list[Condition] = []
        if difficulty >= 6:
            for _ in range(30):
                condition = category_condition(rng, table)
                if len(matching(table, [condition])) >= 2:
                    conditions = [condition]
                    break
        exact = _mean(table, matching(table, conditions), column)
        return Question(
            f'What is the mean (average) of "{column}" over {_over(conditions)}? '
            "Round it to 2 decimal places.",
            rounded_text(exact, 2),
            {
                "column": column,
                "conditions": [c.to_meta() for c in conditions],
                "exact": str(exact),
            },  # fmt: skip
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_number(text, Fraction(task.meta["exact"]), Fraction(1, 200), "the mean")

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table, column = tables[0], task.meta["column"]
        rows = matching(table, _conditions(task))
        exact = Fraction(task.meta["exact"])
        total = exact * len(rows)
        values = sorted(table.value(r, column) for r in rows)
        candidates = [
            total,  # never divided
            total / (len(rows) + 1),  # miscounted rows
            _mean(table, rows, _neighbour(table, column)),  # the wrong column
            exact + 1,
            values[len(values) // 2],  # the median, not the mean
        ]
        return [rounded_text(v, 2) for v in candidates]


def _mean(table: Table, rows: list[int], column: str) -> Fraction:
    return sum((table.value(r, column) for r in rows), Fraction(0)) / len(rows)


_AGGREGATE_WORDS = {
    "count": "the number of rows",
    "sum": "the total of",
    "max": "the largest value of",
    "min": "the smallest value of",
    "mean": "the mean (average) of",
}


def _groups(table: Table) -> list[str]:
    """The categories present, in order of first appearance."""
    seen: list[str] = []
    for row in range(len(table.rows)):
        value = str(table.cell(row, table.category().name))
        if value not in seen:
            seen.append(value)
    return seen


def _aggregate(table: Table, aggregate: str, column: str, group: str, shift: int = 0) -> str:
    """The aggregate for one group, as JSON number text; `shift` adds scaled units (decoys)."""
    category = table.category().name
    rows = [r for r in range(len(table.rows)) if str(table.cell(r, category)) == group]
    if aggregate == "count":
        return str(len(rows) + shift)
    decimals = table.column(column).decimals
    scaled = [int(table.cell(r, column)) for r in rows]
    if aggregate == "mean":
        return rounded_text(Fraction(sum(scaled), len(scaled) * 10**decimals) + shift, 1)
    value = {"sum": sum(scaled), "max": max(scaled), "min": min(scaled)}[aggregate]
    return number_text(value + shift * 10**decimals, decimals)


def _json_object(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in sorted(values.items())) + "}"


class GroupAggregate(TableQuestion):
    """Count, sum, max, min or (d≥7) mean of a column per category, as a JSON object."""

    id = "table/group-aggregate-v1"
    axes = Axes("table", "none", "single", "structure")
    instructions = (
        "Reply with one JSON object only, mapping each group name exactly as written in "
        'the table to its number (a JSON number, e.g. {"North": 12, "South": 7.5}), with '
        "one key per group present in the table and nothing else."
    )

    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        aggregates = ["count", "max", "min"]
        if table.numbers("additive"):
            aggregates.append("sum")
        if difficulty >= 7:
            aggregates.append("mean")
        aggregate = rng.choice(aggregates)
        flag = "additive" if aggregate == "sum" else None
        column = rng.choice([c.name for c in table.numbers(flag)])
        category = table.category().name
        values = {g: _aggregate(table, aggregate, column, g) for g in _groups(table)}
        if aggregate == "count":
            text = f"For each {category}, how many rows does it have?"
        else:
            text = f'For each {category}, what is {_AGGREGATE_WORDS[aggregate]} "{column}"?'
        if aggregate == "mean":
            text += " Round each mean to 1 decimal place (within 0.05 is accepted)."
        return Question(
            text,
            _json_object(values),
            {"aggregate": aggregate, "column": column, "values": values},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        what = "a JSON object of one number per group"
        value = parse_json(text)
        if not isinstance(value, dict) or not value:
            return verdict(False, what, components={"format": 0.0, "groups": 0.0}, why="the reply is not one JSON object")  # fmt: skip
        gold: dict[str, str] = task.meta["values"]
        tolerance = Fraction(1, 20) if task.meta["aggregate"] == "mean" else _EXACT_SUM
        given = {normalize_item(str(k)): v for k, v in value.items()}
        known = {normalize_item(g) for g in gold}
        right = sum(_close(given.get(normalize_item(g)), Fraction(v), tolerance) for g, v in gold.items())  # fmt: skip
        extra = sum(k not in known for k in given)
        share = right / (len(gold) + extra)
        passed = right == len(gold) and extra == 0
        why = f"{right} of {len(gold)} groups right" + (f", {extra} unknown key(s)" if extra else "")  # fmt: skip
        return verdict(passed, what, components={"format": 1.0, "groups": share}, reward=share, why=why)  # fmt: skip

    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        table = tables[0]
        aggregate, column = task.meta["aggregate"], task.meta["column"]
        gold: dict[str, str] = task.meta["values"]
        groups = sorted(gold)
        shifted = {g: _aggregate(table, aggregate, column, g, shift=1) for g in groups}
        out = [_json_object(shifted)]  # every group off by one
        if len(groups) > 1:
            out.append(_json_object({g: gold[g] for g in groups[1:]}))  # a group left out
            out.append(_json_object({**gold, groups[0]: shifted[groups[0]]}))  # one group wrong
        other = _neighbour(table, column)
        if aggregate != "count" and (aggregate != "sum" or table.column(other).additive):
            out.append(_json_object({g: _aggregate(table, aggregate, other, g) for g in groups}))
        out.append(json.dumps([gold[g] for g in groups]))  # a list, not an object
        return out


def _close(value: object, gold: Fraction, tolerance: Fraction) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return abs(Fraction(value) - gold) <= tolerance + FLOAT_SLACK


DOMAINS: tuple[TableQuestion, ...] = (CountWhere(), ColumnSum(), ColumnMean(), GroupAggregate())
