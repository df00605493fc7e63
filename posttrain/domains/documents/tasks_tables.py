"""Multi-year comparatives over tables alone: which lines outgrew revenue, segment share shifts.

- `documents/growth-set-v1` (set_match) — the income statement (from difficulty 4 also
  the segment table) over several years; the answer is the set of row ids whose
  figure grew by a larger percentage than revenue between two years, or `none`.
  Only rows positive in both years are candidates (the question says so). Reward is
  set-F1; a pass needs the exact set.
- `documents/segment-share-v1` (numeric) — the segment table (with totals below
  difficulty 4, without from 4: the reader sums the segments); the answer is the
  change, in percentage points rounded to two decimals, of one segment's share of
  total segment revenue between two years (`-1.37`).

Difficulty adds years and segments (and with them cells: `measure`).

Not guaranteed: growth is compared exactly (as fractions), so a line that grew a
hair faster than revenue counts; shares are of the printed segment revenues.
"""

from __future__ import annotations

import random
import re
from fractions import Fraction

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.documents.company import INCOME, Company
from posttrain.domains.documents.filing import segment_sheet, statement
from posttrain.domains.documents.frame import Question, SheetTask, close_to, rounded
from posttrain.types import Task, Verdict
from posttrain.verify.sets import parse_items, set_f1

_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")


class GrowthSet(SheetTask):
    """The rows that grew faster than revenue between two years."""

    id = "documents/growth-set-v1"
    axes = Axes("table", "none", "single", "set_match")
    instructions = "Reply with the row ids separated by commas (for example: IS-02, IS-05), or the single word none, and nothing else."  # fmt: skip

    def ask(self, rng: random.Random, company: Company, unit: str, difficulty: int) -> Question:
        sheets = [statement(company, "IS", "Consolidated statement of income", INCOME, unit)]
        if difficulty >= 4:
            sheets.append(segment_sheet(company, unit))
        y1, y2 = sorted(rng.sample(company.years, 2))
        revenue = Fraction(company.value("revenue", y2), company.value("revenue", y1))
        gold, shown = [], []
        for sheet in sheets:
            for row in sheet.rows:
                shown.append(row.id)
                a, b = row.values[company.years.index(y1)], row.values[company.years.index(y2)]
                if row.key == "revenue" or a is None or b is None or a <= 0 or b <= 0:
                    continue
                if Fraction(b, a) > revenue:
                    gold.append(row.id)
        text = (
            f"Which rows (other than consolidated revenue) grew by a larger percentage than "
            f"consolidated revenue from {y1} to {y2}? Consider only rows whose figures are "
            f"positive in both years."
        )
        params = {"gold": gold, "shown": shown}
        return Question(text, ", ".join(gold) or "none", params, sheets)

    def judge(self, task: Task, text: str) -> Verdict:
        gold, shown = task.meta["gold"], task.meta["shown"]
        stripped = text.strip()
        items = [] if stripped.lower() == "none" else parse_items(stripped)
        if stripped.lower() != "none" and (not items or not all(i in shown for i in items)):
            return verdict(False, "row ids or none", components={"format": 0.0}, why="the reply is not a list of the tables' row ids")  # fmt: skip
        f1 = set_f1(items, gold, normalize=str.strip)
        return verdict(f1 == 1.0, "exactly the rows that outgrew revenue", reward=f1,
                       components={"format": 1.0, "f1": f1}, why=f"set F1 {f1:.2f}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        gold, shown = task.meta["gold"], task.meta["shown"]
        rest = [r for r in shown if r not in gold]
        out = [", ".join(rest) or "none", ", ".join(shown)]
        out += ["none", ", ".join(gold[1:] + rest[:1]) or "none"] if gold else [shown[1], ", ".join(shown[1:3])]  # fmt: skip
        return [o for o in out if o != task.answer]


class SegmentShare(SheetTask):
    """The change in one segment's share of revenue, in percentage points."""

    id = "documents/segment-share-v1"
    axes = Axes("table", "none", "single", "numeric")
    instructions = "Reply with the number only, rounded to two decimals, negative if the share fell (for example: -1.37), and nothing else."  # fmt: skip

    def ask(self, rng: random.Random, company: Company, unit: str, difficulty: int) -> Question:
        sheet = segment_sheet(company, unit, totals=difficulty < 4)
        y1, y2 = sorted(rng.sample(company.years, 2))
        s = rng.randrange(len(company.segments))

        def share(year: int) -> Fraction:
            return Fraction(company.segment_revenue(s, year), company.value("revenue", year)) * 100

        exact = share(y2) - share(y1)
        answer = rounded(exact, 2)
        text = (
            f"By how many percentage points did the {company.segments[s]} segment's share of "
            f"total segment revenue change from {y1} to {y2}?"
        )
        relative = (share(y2) / share(y1) - 1) * 100
        decoys = [rounded(-exact, 2), rounded(share(y2), 2), rounded(relative, 2), rounded(exact + Fraction(1, 100), 2)]  # fmt: skip
        params = {"exact": [exact.numerator, exact.denominator], "decoys": decoys}
        return Question(text, answer, params, [sheet])

    def judge(self, task: Task, text: str) -> Verdict:
        stripped = text.strip()
        if not _NUMBER.fullmatch(stripped):
            return verdict(False, "one number", components={"format": 0.0}, why="the reply is not one number")  # fmt: skip
        right = close_to(float(stripped), Fraction(*task.meta["exact"]), 2)
        return verdict(right, f"{task.answer} percentage points", components={"format": 1.0, "correct": float(right)}, why=f"got {stripped[:40]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        return [d for d in task.meta["decoys"] if not self.judge(task, d).passed]


DOMAINS = (GrowthSet(), SegmentShare())
