"""`TableQuestion`: the shared body of the `table/*` domains, and the pieces their questions share.

A domain subclasses `TableQuestion` and writes two methods:

- `ask(rng, table, difficulty, schema) -> Question` — the question about `table` (built
  for the task already), its canonical answer, JSON-able params for the verifier, and
  any extra tables (a join table) to show with it;
- `decoys(task, tables) -> list[str]` — candidate wrong answers (a neighbouring row's
  value, an off-by-one count, a partial set, the wrong column ...); `wrong` keeps those
  that differ from the answer and that the domain's own `judge` rejects.

`make` picks the schema (one that has a `need`-flagged column when the class sets `need`),
the rendering (`render.FORMATS`), builds the table and frames the prompt; `task.meta` holds
the rendering, the schema, the tables (`Table.to_meta`) and the question's params, and
`measure` is the number of cells shown. Also here: `Condition` (a row filter the
prompt states in words), `ordered` (rows sorted by a column with the stated tie rule)
and judges for a name, a number within a tolerance, an integer and a list of names.

Not guaranteed: `judge_number` reads one quantity as `verify.numeric.strict_number` does,
so "$1,200" and "1.2 thousand" both read as 1200 while "12%" reads as 0.12.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.table.data import SCHEMAS, Schema, Table, build_table
from posttrain.domains.table.render import FORMAT_NAMES, FORMATS, render
from posttrain.types import Task, Verdict
from posttrain.verify.answers import strict_integer
from posttrain.verify.numeric import strict_number
from posttrain.verify.sets import normalize_item, parse_items


@dataclass(frozen=True)
class Question:
    """What `ask` returns."""

    text: str
    answer: str
    params: dict[str, Any] = field(default_factory=dict)
    extra: tuple[Table, ...] = ()


def tie_rule(table: Table) -> str:
    return (
        f"Rows with equal values are ordered by {table.key.name} alphabetically "
        "(the one that comes first alphabetically ranks first)."
    )


def ordered(table: Table, column: str, descending: bool) -> list[int]:
    """Row indices sorted by `column` (descending or not), ties by key alphabetically."""
    sign = -1 if descending else 1
    names = table.names()
    return sorted(
        range(len(table.rows)), key=lambda r: (sign * table.value(r, column), names[r].casefold())
    )


@dataclass(frozen=True)
class Condition:
    """A row filter: `column` `op` `operand`, op one of ">", "<" (numbers) or "=" (text)."""

    column: str
    op: str
    operand: str

    def holds(self, table: Table, row: int) -> bool:
        if self.op == "=":
            return str(table.cell(row, self.column)) == self.operand
        value, bound = table.value(row, self.column), Fraction(self.operand)
        return value > bound if self.op == ">" else value < bound

    def words(self) -> str:
        if self.op == "=":
            return f'"{self.column}" is {self.operand}'
        relation = "greater than" if self.op == ">" else "less than"
        return f'"{self.column}" is {relation} {self.operand}'

    def inclusive(self) -> Condition:
        """The same filter read as ≥ / ≤: the classic off-by-one misreading."""
        if self.op == "=":
            return self
        bound = Fraction(self.operand)
        nudge = Fraction(1, 10**6)
        return Condition(self.column, self.op, str(float(bound - nudge if self.op == ">" else bound + nudge)))  # fmt: skip

    def to_meta(self) -> list[str]:
        return [self.column, self.op, self.operand]

    @classmethod
    def from_meta(cls, meta: list[str]) -> Condition:
        return cls(str(meta[0]), str(meta[1]), str(meta[2]))


def threshold(rng: random.Random, table: Table, column: str, op: str) -> Condition:
    """A `column` > / < condition whose bound is one of the column's own values."""
    return Condition(column, op, table.text(rng.randrange(len(table.rows)), column))


def category_condition(rng: random.Random, table: Table) -> Condition:
    """`category = value` for a value that some row holds."""
    name = table.category().name
    return Condition(name, "=", str(table.cell(rng.randrange(len(table.rows)), name)))


def matching(table: Table, conditions: list[Condition]) -> list[int]:
    return [r for r in range(len(table.rows)) if all(c.holds(table, r) for c in conditions)]


def both(conditions: list[Condition]) -> str:
    return " and ".join(c.words() for c in conditions)


# ----------------------------------------------------------------------------- judges


def _seen(text: str) -> str:
    return f"got {text.strip()[:40]!r}"


def judge_name(text: str, gold: str, what: str) -> Verdict:
    """Right when the text is `gold` after whitespace collapsing and case folding."""
    return verdict(normalize_item(text) == normalize_item(gold), what, why=_seen(text))


# A decimal read as a float is off by up to ~1e-15 relative: a correctly rounded answer
# sitting exactly on the tolerance's edge must still pass.
FLOAT_SLACK = Fraction(1, 10**9)


def judge_number(text: str, gold: Fraction, tolerance: Fraction, what: str) -> Verdict:
    """Right when the text is one number within `tolerance` (plus `FLOAT_SLACK`) of `gold`."""
    value = strict_number(text)
    if value is None:
        return verdict(False, what, components={"format": 0.0, "correct": 0.0}, why="the reply is not one number")  # fmt: skip
    right = abs(Fraction(value) - gold) <= tolerance + FLOAT_SLACK
    return verdict(right, what, components={"format": 1.0, "correct": float(right)}, why=_seen(text))  # fmt: skip


def judge_integer(text: str, gold: int, what: str) -> Verdict:
    value = strict_integer(text)
    if value is None:
        return verdict(False, what, components={"format": 0.0, "correct": 0.0}, why="the reply is not one integer")  # fmt: skip
    return verdict(value == gold, what, components={"format": 1.0, "correct": float(value == gold)}, why=_seen(text))  # fmt: skip


def read_names(text: str, table: Table) -> list[str] | None:
    """The comma-separated names of the reply, normalized, or None unless every one is a
    row name of `table` (so prose around a list is not a list)."""
    known = {normalize_item(n) for n in table.names()}
    items = [normalize_item(i) for i in parse_items(text)]
    if not items or any(i not in known for i in items):
        return None
    return items


# ----------------------------------------------------------------------------- base class


def tables_of(task: Task) -> list[Table]:
    return [Table.from_meta(m) for m in task.meta["tables"]]


class TableQuestion(AnswerDomain):
    """Base of the `table/*` domains; see the module docstring."""

    need: ClassVar[str | None] = None

    @abstractmethod
    def ask(self, rng: random.Random, table: Table, difficulty: int, schema: Schema) -> Question:
        """Written by each subclass."""

    @abstractmethod
    def decoys(self, task: Task, tables: list[Table]) -> list[str]:
        """Written by each subclass."""

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        need = self.need
        schema = rng.choice([s for s in SCHEMAS if need is None or any(getattr(c, need) for c in s.numbers)])  # fmt: skip
        fmt = rng.choice(FORMATS)
        table = build_table(rng, schema, difficulty, need)
        question = self.ask(rng, table, difficulty, schema)
        tables = (table, *question.extra)
        shown = "\n\n".join(f"Table: {t.title} ({FORMAT_NAMES[fmt]})\n\n{render(t, fmt)}" for t in tables)  # fmt: skip
        intro = "the table below" if len(tables) == 1 else f"the {len(tables)} tables below"
        prompt = f"Answer the question using {intro}.\n\n{shown}\n\nQuestion: {question.text}"
        meta = {
            "format": fmt,
            "schema": schema.name,
            "tables": [t.to_meta() for t in tables],
            **question.params,
        }
        return Problem(prompt, question.answer, meta, measure=sum(t.cells for t in tables))

    def wrong(self, task: Task) -> list[str]:
        out: list[str] = []
        for text in self.decoys(task, tables_of(task)):
            fresh = text.strip() and text != task.answer and text not in out
            if fresh and not self.judge(task, text).passed:
                out.append(text)
        return out
