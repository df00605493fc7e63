"""The shared body of the `documents/*` domains: build a company, ask, render, frame.

A document task subclasses `FilingTask` and writes `ask(rng, company, filing,
difficulty) -> Question` (which may change the core filing first: blank a cell,
inject an anomaly), plus `judge` and `wrong` as any `AnswerDomain`. `make` then pads
the filing to `target_tokens(difficulty)` (about 2k tokens at difficulty 1, 20k at
10; distractor tables from difficulty 3), renders it in a drawn format and frames
the prompt; `measure` is the rendered filing's estimated tokens. A cited task sets
`cites = True` and gets the printed cells and lines in `task.meta["sources"]`.

A table task subclasses `SheetTask`: `ask` returns the sheets to show with the
question, and `measure` counts the cells shown.

Not guaranteed: token counts are characters / 4; the years, segments and format
are drawn from the task's rng, so two tasks of one difficulty differ in length.
"""

from __future__ import annotations

import math
import random
from abc import abstractmethod
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.documents.cite import SourceIndex
from posttrain.domains.documents.company import Company, build_company
from posttrain.domains.documents.filing import UNIT_WORDS, Filing, Sheet, core_filing, unit_phrase
from posttrain.domains.documents.narrative import pad
from posttrain.domains.documents.render import FORMAT_NAMES, FORMATS, render_filing, render_sheets


@dataclass
class Question:
    """What `ask` returns: the question, its canonical answer, params for the judge."""

    text: str
    answer: str
    params: dict[str, Any] = field(default_factory=dict)
    sheets: list[Sheet] = field(default_factory=list)  # SheetTask: the tables to show


def n_years(difficulty: int) -> int:
    return 2 + (difficulty - 1) // 3


def n_segments(difficulty: int) -> int:
    return 2 + difficulty // 2


def target_tokens(difficulty: int) -> int:
    return 2000 * difficulty


def id_rules(year: int) -> str:
    return (
        f"Table rows carry ids such as IS-03; a table cell is named ROW@COLUMN, such as "
        f"IS-03@{year}. Note and narrative lines carry ids such as N2-L01."
    )


def close_to(value: float, exact: Fraction, places: int) -> bool:
    """True when `value` is `exact` rounded to `places` decimals: within half a unit of the
    last place, or equal to `rounded(exact, places)` at an exact tie. Never true for an
    infinite or NaN value (a reply such as 1e999), which `Fraction` cannot hold."""
    if isinstance(value, float) and not math.isfinite(value):
        return False
    got = Fraction(value).limit_denominator(10**12)
    if abs(got - Fraction(rounded(exact, places))) < Fraction(1, 10**9):
        return True
    return abs(got - exact) < Fraction(1, 2 * 10**places)


def rounded(exact: Fraction, places: int) -> str:
    """`exact` rounded half away from zero to `places` decimals, as text."""
    scaled = abs(exact) * 10**places
    whole = int(scaled + Fraction(1, 2))
    sign = "-" if exact < 0 and whole else ""
    text = str(whole).rjust(places + 1, "0")
    return f"{sign}{text[:-places]}.{text[-places:]}" if places else f"{sign}{text}"


class FilingTask(AnswerDomain):
    """A question over a whole rendered filing (document modality)."""

    cash_flow: ClassVar[bool] = True
    segment_totals: ClassVar[bool] = False
    cites: ClassVar[bool] = False

    @abstractmethod
    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        """The task's question about `filing`, with its answer and parameters."""

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        company = build_company(rng, n_years(difficulty), n_segments(difficulty))
        unit = rng.choice(UNIT_WORDS)
        filing = core_filing(company, unit, cash_flow=self.cash_flow, segment_totals=self.segment_totals)  # fmt: skip
        fmt = rng.choice(FORMATS)
        question = self.ask(rng, company, filing, difficulty)
        pad(filing, company, rng, target_tokens(difficulty), fmt, distractors=difficulty >= 3)
        text = render_filing(filing, fmt)
        prompt = (
            f"Below is the annual filing of {company.name} ({FORMAT_NAMES[fmt]}). Amounts are "
            f"{unit_phrase(unit)} unless stated otherwise; figures in parentheses are negative. "
            f"{id_rules(company.years[-1])}\n\n{text}\n\nQuestion: {question.text}"
        )
        meta = {"format": fmt, "unit": unit, **question.params}
        if self.cites:
            meta["sources"] = SourceIndex.from_filing(filing).to_meta()
        return Problem(prompt, question.answer, meta, measure=len(text) // 4)


class SheetTask(AnswerDomain):
    """A question over a few rendered tables only (table modality)."""

    @abstractmethod
    def ask(self, rng: random.Random, company: Company, unit: str, difficulty: int) -> Question:
        """The task's question over a few of `company`'s tables, with its answer."""

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        company = build_company(rng, n_years(difficulty) + (difficulty >= 8), n_segments(difficulty))  # fmt: skip
        unit = rng.choice(UNIT_WORDS)
        fmt = rng.choice(FORMATS)
        question = self.ask(rng, company, unit, difficulty)
        text = render_sheets(question.sheets, fmt)
        prompt = (
            f"The tables below ({FORMAT_NAMES[fmt]}) come from the annual report of "
            f"{company.name}. Amounts are {unit_phrase(unit)}; figures in parentheses are "
            f"negative; `?` marks a figure left blank. Rows carry ids such as IS-03; a cell is "
            f"named ROW@COLUMN, such as IS-03@{company.years[-1]}.\n\n{text}\n\n"
            f"Question: {question.text}"
        )
        cells = sum(len(s.rows) * len(s.columns) for s in question.sheets)
        return Problem(prompt, question.answer, {"format": fmt, "unit": unit, **question.params}, measure=cells)  # fmt: skip
