"""Figure questions over financial summaries and expense policies.

- `docqa/growth-v1` (numeric) — a financial summary states each segment's revenue
  year by year (and operating costs beside them); the question asks the percentage
  growth of one segment between two years. Difficulty adds segments, years and
  audit notes that revise a preliminary figure ("revised from $A million to $B
  million"); from difficulty 3 one revision touches the asked figures. The answer is
  a percentage with two decimals, judged by the FinQA rule (`numeric_match`,
  relative tolerance 1e-3) after a strict format check.
- `docqa/cited-limit-v1` (fields_citations) — an expense policy states spending
  limits by category, and amendments raise or lower some ("raised from $A to $B");
  the answer is JSON `{"answer": <current limit>, "quote": <verbatim sentence>}`.
  The answer scores when it equals the limit (an answer that is not a finite number,
  such as a JSON integer too large for a float, is wrong, not a verifier error); the
  quote when it occurs verbatim within one line of the document (whitespace folded),
  is at most 300 characters, names the asked category and contains the limit as the
  document writes it, so the bare amount is no quote. Reward is the mean of the two;
  passing needs both.

`measure` is the number of figures stated (gold figures plus distractors), fixed by
difficulty.

Not guaranteed: the quote need not be a whole sentence, so a fragment such as "for
meals (per day) was raised from $40.00 to $50.00" counts; growth answers are accepted
within the tolerance, so 12.35% passes for 12.34%.
"""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.docqa import corpus as c
from posttrain.domains.extract import documents as d
from posttrain.types import Task, Verdict
from posttrain.verify.numeric import numeric_match, strict_number
from posttrain.verify.structure import parse_json

SEGMENTS = ("Cloud", "Hardware", "Services", "Retail", "Licensing", "Logistics", "Advertising")
CATEGORIES = (
    "hotel stays (per night)", "meals (per day)", "taxis and ride-hailing (per trip)",
    "conference fees (per event)", "client gifts (per gift)", "home-office equipment (per year)",
    "mobile phone plans (per month)", "training courses (per course)", "rail travel (per trip)",
)  # fmt: skip
_PERCENT = re.compile(r"[-+]?[0-9]+(?:\.[0-9]+)?%")


def _millions(value: float) -> str:
    return f"${value:,.1f} million"


def _growth(old: float, new: float) -> str:
    return f"{(new - old) / old * 100:.2f}%"


class GrowthDomain(AnswerDomain):
    """Percentage growth of one segment's revenue between two years."""

    id = "docqa/growth-v1"
    axes = Axes("document", "none", "single", "numeric")
    instructions = (
        "Reply with the percentage growth rounded to two decimals, followed by %, and "
        "nothing else (for example: 12.34% or -3.50%)."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        segments = rng.sample(SEGMENTS, 2 + difficulty // 3)
        first = rng.choice((2019, 2020, 2021))
        years = list(range(first, first + 2 + difficulty // 4))
        revenue = {s: [round(rng.uniform(40, 900), 1)] for s in segments}
        for s in segments:
            for _ in years[1:]:
                step = rng.choice((-1, 1)) * rng.uniform(0.04, 0.35)
                revenue[s].append(round(revenue[s][-1] * (1 + step), 1))
        target = segments[0]
        y1, y2 = sorted(rng.sample(range(len(years)), 2))
        # Revisions: (segment, year index, preliminary figure); the stated figure in the
        # table is the preliminary one, the note gives the final one.
        picks = [(target, (y1, y2)[rng.randrange(2)])] if difficulty >= 3 else []
        others = [(s, i) for s in segments for i in range(len(years)) if (s, i) not in picks]
        picks += rng.sample(others, max(0, difficulty // 3 - 1))
        revisions = [(s, i, round(revenue[s][i] * rng.uniform(0.8, 0.95), 1)) for s, i in picks]
        stated = {s: list(v) for s, v in revenue.items()}
        for seg, idx, prelim in revisions:
            stated[seg][idx] = prelim
        lines = [f"Financial summary, fiscal years {years[0]}–{years[-1]}", c.chatter(rng, 1)[0]]
        for s in rng.sample(segments, len(segments)):
            parts = [f"{_millions(v)} in {y}" for v, y in zip(stated[s], years, strict=True)]
            costs = round(stated[s][-1] * rng.uniform(0.4, 0.8), 1)
            lines.append(
                f"{s} revenue was " + ", ".join(parts) + f". {s} operating costs were "
                f"{_millions(costs)} in {years[-1]}."
            )
        for seg, idx, prelim in revisions:
            lines.append(
                f"Audit note: the {years[idx]} revenue for {seg} was revised from "
                f"{_millions(prelim)} to {_millions(revenue[seg][idx])}."
            )
        question = (
            f"By what percentage did {target} revenue grow from {years[y1]} to {years[y2]}? "
            "Where a figure was revised, use the revised figure."
        )
        old, new = revenue[target][y1], revenue[target][y2]
        other = segments[1]
        wrongs = [
            _growth(stated[target][y1], stated[target][y2]),
            _growth(revenue[other][y1], revenue[other][y2]),
            _growth(new, old),
            f"{(new - old):.2f}%",
            _growth(revenue[target][0], revenue[target][-1]),
        ]
        measure = len(segments) * len(years) + len(revisions)
        meta = {"wrong": wrongs}
        return Problem(c.frame("\n\n".join(lines), question), _growth(old, new), meta, measure)

    def judge(self, task: Task, text: str) -> Verdict:
        stripped = text.strip()
        if not _PERCENT.fullmatch(stripped):
            return verdict(False, "a percentage such as 12.34%", why="not that format")
        ok = numeric_match(stripped, task.answer, rel_tol=1e-3)
        return verdict(ok, f"the growth {task.answer}", why=f"got {stripped[:20]}")

    def wrong(self, task: Task) -> list[str]:
        return [w for w in dict.fromkeys(task.meta["wrong"]) if w != task.answer]


def _cited_answer(amount: float, quote: str) -> str:
    return json.dumps({"answer": f"{amount:.2f}", "quote": quote}, ensure_ascii=False)


def _amount(answer: object) -> float | None:
    """The answer as a finite number, or None: a JSON integer too large for a float (or
    one that overflows to infinity) is a malformed answer, not a verifier failure."""
    if isinstance(answer, str):
        return strict_number(answer)
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return None
    try:
        number = float(answer)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _supports(quote: str, meta: dict[str, Any]) -> bool:
    """The quote is a verbatim span of one line of the document (whitespace folded, at
    most 300 characters) that names the asked category and states its limit."""
    folded = " ".join(quote.split())
    lines = (" ".join(line.split()) for line in meta["document"].splitlines())
    return (
        0 < len(folded) <= 300
        and any(folded in line for line in lines)
        and meta["category"].casefold() in folded.casefold()
        and _states(folded, meta["surface"])
    )


def _states(quote: str, surface: str) -> bool:
    """True when `surface` ("50.00") occurs in the quote as a whole amount, not "150.00"."""
    return re.search(rf"(?<![0-9,.]){re.escape(surface)}(?![0-9])", quote) is not None


class CitedLimitDomain(AnswerDomain):
    """The current limit of one expense category, with a verbatim supporting quote."""

    id = "docqa/cited-limit-v1"
    axes = Axes("document", "none", "single", "fields_citations")
    instructions = (
        'Reply with one JSON object only: {"answer": "<the current limit as a plain '
        'number, e.g. 150.00>", "quote": "<one sentence copied verbatim from the '
        'document that states this limit>"}.'
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = min(len(CATEGORIES), 2 + difficulty)
        cats = rng.sample(CATEGORIES, n)
        limits = [float(5 * k) for k in rng.sample(range(4, 91), n)]
        style = rng.choice(d.money_styles(difficulty))
        amendments = min(n - 1, difficulty // 2) + (1 if difficulty >= 3 else 0)
        changed = rng.sample(range(n), amendments)
        if difficulty >= 3 and 0 not in changed:
            changed[0] = 0
        original = list(limits)
        for i in changed:
            sign = 1 if limits[i] <= 60 else rng.choice((-1, 1))
            original[i] = limits[i] + sign * 5 * rng.randint(2, 10)
        company = d.company(rng)
        sentences = {}
        lines = [f"{company} — Travel and expense policy", *c.chatter(rng, 1)]
        lines.append("Section 2. Spending limits")
        for i, cat in enumerate(cats):
            sentences[i] = f"The limit for {cat} is {d.money_text(original[i], style)}."
            lines.append(sentences[i])
        lines.append("Section 3. Amendments")
        when = d.day(rng)
        for i in changed:
            verb = "raised" if limits[i] > original[i] else "lowered"
            text = (
                f"Effective {d.date_text(when, 'us')}, the limit for {cats[i]} was {verb} from "
                f"{d.money_text(original[i], style)} to {d.money_text(limits[i], style)}."
            )
            lines.append(text)
            sentences[i], when = text, d.shifted(when, rng.randint(10, 90))
        lines.append(c.chatter(rng, 2)[1])
        question = f"What is the current limit for {cats[0]}?"
        other = 1 if n > 1 else 0
        stale = f"The limit for {cats[0]} is {d.money_text(original[0], style)}."
        document = "\n".join(lines)
        meta = {
            "category": cats[0],
            "limit": limits[0],
            "surface": f"{limits[0]:,.2f}",
            "document": document,
            "wrong": [
                _cited_answer(limits[other], sentences[other]),
                _cited_answer(limits[0], f"The limit for {cats[0]} is always negotiable."),
                _cited_answer(limits[0], stale if 0 in changed else sentences[other]),
                _cited_answer(original[0] + 5, sentences[0]),
            ],
        }
        answer = _cited_answer(limits[0], sentences[0])
        return Problem(c.frame(document, question), answer, meta, len(lines))

    def judge(self, task: Task, text: str) -> Verdict:
        value = parse_json(text)
        if not isinstance(value, dict) or sorted(value) != ["answer", "quote"]:
            return verdict(False, 'a JSON object with "answer" and "quote"', why="not that")
        number = _amount(value["answer"])
        answer_ok = number is not None and abs(number - task.meta["limit"]) < 0.005
        quote = value["quote"]
        quote_ok = isinstance(quote, str) and _supports(quote, task.meta)
        components = {"answer": float(answer_ok), "quote": float(quote_ok)}
        said = "right" if answer_ok else "wrong" if number is not None else "not a plain number"
        return verdict(
            answer_ok and quote_ok,
            "the current limit with a verbatim quote that states it",
            components=components,
            reward=(answer_ok + quote_ok) / 2,
            why=f"answer {said}, quote {'supports it' if quote_ok else 'does not support it'}",
        )

    def wrong(self, task: Task) -> list[str]:
        return list(task.meta["wrong"])


DOMAINS = (GrowthDomain(), CitedLimitDomain())
