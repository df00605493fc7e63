"""`codeqa/sql-select-v2`: which names a generated SELECT returns from a tiny inline table.

    from posttrain.domains.codeqa.sql import SqlSelect
    task = SqlSelect().generate(seed=0, difficulty=4)

The prompt shows a table `staff(name, dept, age, score)` and one query
`SELECT name FROM staff WHERE ...` whose condition combines comparisons with AND, OR
and parentheses; from difficulty 6 it may add `ORDER BY score DESC LIMIT k` (scores are
distinct, so the rows kept are well defined). We evaluate the condition tree ourselves;
the answer is the set of names, judged in any order. A wrong set gets partial credit for
its Jaccard overlap above what naming every row of the table gets, so reading the query
is the only way to earn it (v1's plain overlap gave every row's names up to 0.9).
Difficulty grows the table (`difficulty_measure` = its rows) and the condition.

Not guaranteed: only integer comparisons and string equality are modelled; there are
no NULLs, joins or aggregates.
"""

from __future__ import annotations

import random
from typing import Any

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.types import Task, Verdict

_NAMES = ["Ava", "Ben", "Cleo", "Dan", "Eve", "Finn", "Gia", "Hugo", "Ivy", "Jon", "Kai",
          "Lea", "Max", "Nia", "Omar", "Pia", "Quin", "Rui", "Sam", "Tess", "Uma", "Vic"]  # fmt: skip
_DEPTS = ["ops", "sales", "lab", "hr"]
_OPS = {"<": int.__lt__, ">": int.__gt__, "<=": int.__le__, ">=": int.__ge__, "=": int.__eq__}

Row = dict[str, Any]
Cond = tuple[Any, ...]  # ("cmp", col, op, value) | ("and"|"or", left, right)


def _holds(cond: Cond, row: Row) -> bool:
    if cond[0] == "cmp":
        _, col, op, value = cond
        if col == "dept":
            return (row[col] == value) == (op == "=")
        return bool(_OPS[op](row[col], value))
    left, right = _holds(cond[1], row), _holds(cond[2], row)
    return (left and right) if cond[0] == "and" else (left or right)


def _sql(cond: Cond, parent: str = "") -> str:
    if cond[0] == "cmp":
        _, col, op, value = cond
        return f"{col} {op} '{value}'" if col == "dept" else f"{col} {op} {value}"
    text = f"{_sql(cond[1], cond[0])} {cond[0].upper()} {_sql(cond[2], cond[0])}"
    return f"({text})" if parent and parent != cond[0] else text


def _comparison(rng: random.Random) -> Cond:
    col = rng.choice(["dept", "age", "age", "score"])
    if col == "dept":
        return ("cmp", "dept", rng.choice(["=", "=", "<>"]), rng.choice(_DEPTS))
    value = rng.randint(25, 55) if col == "age" else rng.randint(40, 90)
    return ("cmp", col, rng.choice(list(_OPS)), value)


def _condition(rng: random.Random, leaves: int) -> Cond:
    if leaves == 1:
        return _comparison(rng)
    split = rng.randint(1, leaves - 1)
    return (rng.choice(["and", "or"]), _condition(rng, split), _condition(rng, leaves - split))


class SqlSelect(AnswerDomain):
    """The names a generated SELECT ... WHERE query returns."""

    id = "codeqa/sql-select-v2"
    axes = Axes("code", "none", "single", "set_match")
    instructions = "Reply with the returned names only, comma-separated, in any order."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        size = 4 + (3 * difficulty) // 2
        leaves = 1 + difficulty // 3
        for _ in range(200):
            names = rng.sample(_NAMES, size)
            scores = rng.sample(range(40, 91), size)
            rows: list[Row] = [
                {"name": n, "dept": rng.choice(_DEPTS), "age": rng.randint(22, 60), "score": s}
                for n, s in zip(names, scores, strict=True)
            ]
            cond = _condition(rng, leaves)
            kept = [r for r in rows if _holds(cond, r)]
            limit = rng.randint(1, 3) if difficulty >= 6 and rng.random() < 0.5 else 0
            if limit:
                kept = sorted(kept, key=lambda r: -r["score"])[:limit]
            if 0 < len(kept) < len(rows):
                break
        query = f"SELECT name FROM staff WHERE {_sql(cond)}"
        query += f" ORDER BY score DESC LIMIT {limit};" if limit else ";"
        table = "| name | dept | age | score |\n|---|---|---|---|\n" + "\n".join(
            f"| {r['name']} | {r['dept']} | {r['age']} | {r['score']} |" for r in rows
        )
        prompt = (
            f"The table `staff` holds these rows:\n\n{table}\n\n"
            f"Which names does this SQL query return?\n\n```sql\n{query}\n```\n"
        )
        answer = ", ".join(r["name"] for r in kept)
        meta = {"rows": rows, "query": query, "others": [r["name"] for r in rows if r not in kept]}
        return Problem(prompt, answer, meta, float(size))

    def judge(self, task: Task, text: str) -> Verdict:
        what = "the returned names, comma-separated"
        known = {r["name"] for r in task.meta["rows"]}
        got = [part.strip() for part in text.strip().split(",")]
        if not all(g in known for g in got):
            return verdict(False, what, components={"format": 0.0, "jaccard": 0.0}, why="not a list of names from the table")  # fmt: skip
        if len(set(got)) != len(got):
            return verdict(False, what, components={"format": 0.0, "jaccard": 0.0}, why="a name is repeated")  # fmt: skip
        expected = set(task.answer.split(", "))
        overlap = len(expected & set(got)) / len(expected | set(got))
        ok = set(got) == expected
        every_row = len(expected) / len(known)  # the overlap of naming the whole table
        credit = max(0.0, overlap - every_row) / (1.0 - every_row) if every_row < 1 else 0.0
        reward = 1.0 if ok else 0.5 * credit
        return verdict(ok, what, components={"format": 1.0, "jaccard": overlap}, reward=reward, why=f"overlap {overlap:.2f}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        kept = task.answer.split(", ")
        others: list[str] = task.meta["others"]
        partial = kept[:-1] if len(kept) > 1 else [*kept, others[0]]
        return [", ".join(others), ", ".join(partial), ", ".join([*kept, others[-1]])]


DOMAINS: tuple[AnswerDomain, ...] = (SqlSelect(),)
