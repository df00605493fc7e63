"""Computed figures (numeric): a ratio with its formula, a sum across scales, a restatement.

- `documents/metric-formula-v1` — a named metric (gross, operating, net or EBITDA
  margin, effective tax rate, return on equity, revenue growth, current, quick or
  debt-to-equity ratio) for one year, answered as its formula with the figures as
  printed: `12,345 / 67,890 = 18.18%`. `operands` (the figures are the right ones,
  by value) and `result` (rounded to two decimals) each earn half the reward.
- `documents/scale-sum-v1` — a statement figure (in the filing's unit) plus an
  amount a note states in another scale ("restricted cash of $2.35 million"), asked
  in a third or the same scale word: `57.891 million`. Judged by the FinQA rule
  (`verify.numeric.numeric_match`): the scale word must be the one asked.
- `documents/restated-figure-v1` — notes restate one or more expense or revenue
  lines ("restated from A to B"); the statements show the original figures. The
  answer is a subtotal (gross profit, operating income, income before taxes) after
  the restatement, as an integer in the filing's unit, compared exactly.

Difficulty grows the filing and the menu: more metrics from 5, more restatements
(some in other years or lines) as it rises.

Not guaranteed: formula answers must follow the stated shape exactly (spaces around
operators may vary); results exactly halfway between two hundredths accept only the
half-away-from-zero rounding.
"""

from __future__ import annotations

import random
import re
from fractions import Fraction

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.documents.company import LABELS, Company
from posttrain.domains.documents.filing import Filing, Section
from posttrain.domains.documents.frame import FilingTask, Question, close_to, rounded
from posttrain.types import Task, Verdict
from posttrain.verify.numeric import numeric_match, parse_quantity

# name, template, operand keys (a, b, c; "prev:" = the year before), percent, from difficulty
METRICS = (
    ("gross margin", "{a} / {b} = {r}", ("gross_profit", "revenue"), True, 1),
    ("operating margin", "{a} / {b} = {r}", ("operating_income", "revenue"), True, 1),
    ("net margin", "{a} / {b} = {r}", ("net_income", "revenue"), True, 1),
    ("current ratio", "{a} / {b} = {r}", ("current_assets", "current_liabilities"), False, 1),
    ("debt-to-equity ratio", "{a} / {b} = {r}", ("debt", "total_equity"), False, 1),
    ("revenue growth", "({a} - {b}) / {b} = {r}", ("revenue", "prev:revenue"), True, 3),
    ("effective tax rate", "{a} / {b} = {r}", ("tax", "pretax"), True, 3),
    ("EBITDA margin", "({a} + {b}) / {c} = {r}", ("operating_income", "dna", "revenue"), True, 5),
    ("return on equity", "{a} / {b} = {r}", ("net_income", "total_equity"), True, 5),
    ("quick ratio", "({a} + {b}) / {c} = {r}", ("cash", "receivables", "current_liabilities"), False, 7),
)  # fmt: skip
_FIGURE = r"(\(?-?[0-9][0-9,]*\)?)"


def _figure(company: Company, key: str, year: int) -> int:
    if not key.startswith("prev:"):
        return company.value(key, year)
    i = company.years.index(year)
    return company.books[i - 1][key[5:]] if i else 0  # no prior year shown: not offered


def _evaluate(template: str, v: list[int]) -> Fraction:
    if template.startswith("({a} - {b})"):
        return Fraction(v[0] - v[1], v[1])
    if template.startswith("({a} + {b})"):
        return Fraction(v[0] + v[1], v[2])
    return Fraction(v[0], v[1])


def _pattern(template: str, percent: bool) -> re.Pattern[str]:
    body = re.escape(template).replace(r"\ ", r"\s*")
    for name in "abc":
        body = body.replace(re.escape("{" + name + "}"), _FIGURE, 1)
        body = body.replace(re.escape("{" + name + "}"), r"\S+")  # {b} repeated in growth
    body = body.replace(re.escape("{r}"), r"(-?[0-9]+\.[0-9]{2})" + ("%" if percent else ""))
    return re.compile(body)


def _fill(template: str, values: list[int], result: str) -> str:
    names = dict(zip("abc", (f"{v:,}" for v in values), strict=False))
    return template.format(**names, r=result)


class MetricFormula(FilingTask):
    """A financial metric for one year, answered as its formula with the printed figures."""

    id = "documents/metric-formula-v1"
    axes = Axes("document", "none", "single", "numeric")
    instructions = "Reply with the formula line only, in exactly the form asked, and nothing else."

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        year = rng.choice(company.years)
        options = [m for m in METRICS if m[4] <= difficulty and all(_figure(company, k, year) > 0 for k in m[2])]  # fmt: skip
        name, template, keys, percent, _ = rng.choice(options)
        values = [_figure(company, k, year) for k in keys]
        exact = _evaluate(template, values) * (100 if percent else 1)
        result = rounded(exact, 2) + ("%" if percent else "")
        words = [("the prior year's " if k.startswith("prev:") else "") + LABELS[k.removeprefix("prev:")].lower() for k in keys]  # fmt: skip
        shape = template.format(**{n: f"<{w}>" for n, w in zip("abc", words, strict=False)}, r="<result>")  # fmt: skip
        kind = "a percentage rounded to two decimals, followed by %" if percent else "a ratio rounded to two decimals"  # fmt: skip
        text = (
            f"What was the {name} of {company.name} in {year}? Show the formula in exactly this "
            f"form: {shape}{'%' if percent else ''} — the figures as printed in the statements "
            f"(in {filing.unit}s) and the result as {kind}. Example: {_fill(template, [12_345, 67_890, 1_000][: len(keys)], '18.18')}{'%' if percent else ''}"
        )
        params = {"template": template, "percent": percent, "operands": values, "exact": [exact.numerator, exact.denominator]}  # fmt: skip
        others = [y for y in company.years if y != year]
        params["other"] = _fill(template, [_figure(company, k, others[0]) for k in keys], "0.00") if others else ""  # fmt: skip
        return Question(text, _fill(template, values, result), params)

    def judge(self, task: Task, text: str) -> Verdict:
        m = task.meta
        match = _pattern(m["template"], m["percent"]).fullmatch(text.strip())
        if not match:
            return verdict(False, "the formula in the stated form", components={"format": 0.0}, why="the reply does not have the stated form")  # fmt: skip
        figures = [parse_quantity(g) for g in match.groups()[:-1]]
        operands = all(q is not None and q.value == v for q, v in zip(figures, m["operands"], strict=True))  # fmt: skip
        result = close_to(float(match.groups()[-1]), Fraction(*m["exact"]), 2)
        return verdict(operands and result, "the right figures and the result",
                       reward=0.5 * operands + 0.5 * result,
                       components={"format": 1.0, "operands": float(operands), "result": float(result)},
                       why=f"figures {'right' if operands else 'wrong'}, result {'right' if result else 'wrong'}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        m = task.meta
        right = task.answer
        result = right.rsplit("= ", 1)[1]
        pct = "%" if m["percent"] else ""
        value = Fraction(result.rstrip("%"))
        bumped = right.rsplit("= ", 1)[0] + "= " + rounded(value + Fraction(1, 100), 2) + pct
        swapped = _fill(m["template"], list(reversed(m["operands"])), rounded(value + 1, 2)) + pct
        out = [bumped, swapped, result]
        if m["other"]:
            out.append(m["other"].replace("0.00", rounded(value + Fraction(7, 10), 2)) + pct)
        return out


SCALES = {"thousand": 1_000, "million": 1_000_000}
# statement key, note wording, question wording
EXTRAS = (
    (
        "cash",
        "restricted cash (not included in cash and cash equivalents) of",
        "cash, cash equivalents and restricted cash",
    ),  # fmt: skip
    (
        "debt",
        "short-term borrowings (not included in long-term debt) of",
        "total borrowings (long-term debt plus short-term borrowings)",
    ),  # fmt: skip
)


def _in_scale(dollars: int, scale: str) -> str:
    value = Fraction(dollars, SCALES[scale])
    text = f"{float(value):,.3f}".rstrip("0").rstrip(".")
    return f"{text} {scale}"


class ScaleSum(FilingTask):
    """A statement figure plus a note's amount in another scale, stated in an asked scale."""

    id = "documents/scale-sum-v1"
    axes = Axes("document", "none", "single", "numeric")
    instructions = "Reply with the amount only: a number followed by the scale word asked (for example: 12.345 million), nothing else."  # fmt: skip

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        key, note_words, question_words = rng.choice(EXTRAS)
        year = rng.choice(company.years)
        unit = SCALES[filing.unit]
        base = company.value(key, year) * unit
        other = "million" if filing.unit == "thousand" else "thousand"
        extra = max(1, int(company.value(key, year) * rng.uniform(0.02, 0.2))) * unit
        section = Section("N6", "Other balances")
        for y in company.years:
            amount = extra if y == year else max(1, int(company.value(key, y) * rng.uniform(0.02, 0.2))) * unit  # fmt: skip
            section.add(f"At December 31, {y}, the Company held {note_words} ${_in_scale(amount, other)}.")  # fmt: skip
        filing.documents[1].parts.insert(5, section)
        asked = rng.choice(("thousand", "million"))
        answer = _in_scale(base + extra, asked)
        text = f"What were {company.name}'s {question_words} at December 31, {year}, in {asked}s of US dollars?"  # fmt: skip
        number = answer.rsplit(" ", 1)[0]
        wrong_word = "thousand" if asked == "million" else "million"
        decoys = [_in_scale(base, asked), number, f"{number} {wrong_word}", _in_scale((base + extra) * 1000, asked)]  # fmt: skip
        return Question(text, answer, {"decoys": decoys})

    def judge(self, task: Task, text: str) -> Verdict:
        quantity = parse_quantity(text)
        if quantity is None or quantity.percent or quantity.scale is None:
            return verdict(False, "one amount with its scale word", components={"format": 0.0}, why="the reply is not an amount with a scale word")  # fmt: skip
        right = numeric_match(text, task.answer)
        return verdict(right, f"{task.answer}", components={"format": 1.0, "correct": float(right)}, why=f"got {text.strip()[:40]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        return [d for d in task.meta["decoys"] if d != task.answer]


RESTATABLE = ("revenue", "cogs", "rnd", "sga")
SUBTOTALS = {"gross_profit": ("revenue", "cogs"), "operating_income": RESTATABLE, "pretax": RESTATABLE}  # fmt: skip


class RestatedFigure(FilingTask):
    """A subtotal after the restatements the notes describe."""

    id = "documents/restated-figure-v1"
    axes = Axes("document", "none", "single", "numeric")
    instructions = "Reply with the integer only (thousands separators allowed, a minus sign if negative), nothing else."  # fmt: skip

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        year = rng.choice(company.years)
        target = rng.choice(list(SUBTOTALS))
        lines = list(SUBTOTALS[target])
        count = 1 + difficulty // 4
        picks = [(rng.choice(lines), year)]
        pairs = [(k, y) for k in RESTATABLE for y in company.years if (k, y) not in picks]
        picks += rng.sample(pairs, min(len(pairs), count - 1))
        section = Section("N7", "Restatement of previously reported amounts")
        section.add("The statements above present amounts as originally reported; the corrections below were identified after their issue.")  # fmt: skip
        change = 0
        for key, y in picks:
            old = company.value(key, y)
            delta = rng.choice((-1, 1)) * max(1, int(old * rng.uniform(0.01, 0.08)))
            section.add(f"{LABELS[key]} for {y} has been restated from {old:,} to {old + delta:,} {filing.unit}.")  # fmt: skip
            if y == year and key in lines:
                change += delta if key == "revenue" else -delta
        filing.documents[1].parts.append(section)
        original = company.value(target, year)
        answer = original + change
        text = f"Taking every restatement in the notes into account, what was {company.name}'s restated {LABELS[target].lower()} for {year}, in {filing.unit}s of US dollars?"  # fmt: skip
        decoys = [original, original - change, answer + 1, answer - max(1, abs(answer) // 20)]
        return Question(text, f"{answer}", {"decoys": [f"{d}" for d in decoys if d != answer]})

    def judge(self, task: Task, text: str) -> Verdict:
        stripped = text.strip()
        quantity = parse_quantity(stripped)
        if quantity is None or quantity.percent or quantity.scale or not re.fullmatch(r"-?[0-9][0-9,]*", stripped):  # fmt: skip
            return verdict(False, "one integer", components={"format": 0.0}, why="the reply is not one integer")  # fmt: skip
        right = quantity.value == int(task.answer)
        return verdict(right, "the restated subtotal", components={"format": 1.0, "correct": float(right)}, why=f"got {stripped[:40]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        return list(task.meta["decoys"])


DOMAINS = (MetricFormula(), ScaleSum(), RestatedFigure())
