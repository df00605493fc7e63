"""Consistency checks over a filing: reconciliation, anomalies, covenant tests.

- `documents/reconcile-v1` (exact) — does one tie-out hold for a year: segment
  revenues vs. consolidated revenue, cash-flow ending cash vs. balance-sheet cash,
  total assets vs. liabilities and equity, or last year's retained earnings plus net
  income less dividends vs. this year's. About half the tasks carry a misprinted
  cell. The answer is `yes; 0` or `no; <difference>` with the difference as defined
  in the question; `decision` and `difference` each earn half.
- `documents/anomalies-v1` (set_match) — injected inconsistencies, one per statement
  and year at most: a mis-added total, a figure printed with the wrong sign, a note
  sentence whose figure disagrees with the statements. The answer is the set of ids
  of the misprinted cells and lines; reward is set-F1 (`verify.sets.set_f1`), a pass
  needs the exact set. Each anomaly is the single printed figure whose correction
  restores every identity it takes part in.
- `documents/covenants-v1` (set_match) — a debt note lists covenants (maximum
  debt-to-equity, minimum current ratio, interest cover, maximum debt to EBITDA,
  minimum equity, a capital-expenditure cap); the answer is the set of covenants
  breached in a year, or `none`. Thresholds sit at least 5% away from the actual
  figure.

Not guaranteed: a misprint in `reconcile` may break other identities too (only the
asked one matters); anomaly deltas are round-ish amounts a careful reader finds by
re-adding, not by eye.
"""

from __future__ import annotations

import random
import re
from fractions import Fraction

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.documents.cite import is_source_id
from posttrain.domains.documents.company import Company
from posttrain.domains.documents.filing import Filing, Section
from posttrain.domains.documents.frame import FilingTask, Question, rounded
from posttrain.types import Task, Verdict
from posttrain.verify.sets import parse_items, set_f1

_DECISION = re.compile(r"(yes|no);\s*(-?[0-9][0-9,]*)", re.IGNORECASE)


def _misprint(rng: random.Random) -> int:
    return rng.choice((-1, 1)) * rng.choice((9, 90, 100, 900, 1_000, 10_000))


class Reconcile(FilingTask):
    """Does a tie-out hold? `yes; 0` or `no; <difference>`."""

    id = "documents/reconcile-v1"
    axes = Axes("document", "none", "single", "exact")
    instructions = "Reply with `yes; 0` if the two agree, otherwise `no; <difference>` with the difference as an integer (for example: no; -1250), and nothing else."  # fmt: skip

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        kind = rng.choice(("segments", "cash", "balance", "retained"))
        year = rng.choice(company.years[1:] if kind == "retained" else company.years)
        i = company.years.index(year)
        sg, bs, cf = filing.sheet("SG"), filing.sheet("BS"), filing.sheet("CF")
        if kind == "segments":
            row = sg.row(f"seg_rev:{rng.randrange(len(company.segments))}")
            text = f"Do the segment revenues in the segment table add up to the revenue in the income statement for {year}? Difference = sum of segment revenues minus income-statement revenue."  # fmt: skip
        elif kind == "cash":
            row = cf.row("cash_end")
            text = f"Does the cash at end of year in the cash-flow statement agree with cash and cash equivalents on the balance sheet for {year}? Difference = cash-flow figure minus balance-sheet figure."  # fmt: skip
        elif kind == "balance":
            row = bs.row("total_le")
            text = f"Do total assets equal total liabilities and equity on the balance sheet for {year}? Difference = total assets minus total liabilities and equity."  # fmt: skip
        else:
            row = bs.row("retained")
            text = f"Do retained earnings roll forward in {year}: does retained earnings at the end of {year - 1} plus {year} net income minus {year} dividends paid equal retained earnings at the end of {year}? Difference = the rolled-forward amount minus the printed {year} retained earnings."  # fmt: skip
        if rng.random() < 0.5:  # misprint the cell
            value = row.values[i]
            assert value is not None
            row.values[i] = value + _misprint(rng)

        def printed(sheet_key: str, key: str, at: int = i) -> int:
            value = filing.sheet(sheet_key).row(key).values[at]
            assert value is not None
            return value

        if kind == "segments":
            diff = sum(printed("SG", f"seg_rev:{s}") for s in range(len(company.segments))) - printed("IS", "revenue")  # fmt: skip
        elif kind == "cash":
            diff = printed("CF", "cash_end") - printed("BS", "cash")
        elif kind == "balance":
            diff = printed("BS", "total_assets") - printed("BS", "total_le")
        else:
            rolled = printed("BS", "retained", i - 1) + printed("IS", "net_income") + printed("CF", "dividends")  # fmt: skip
            diff = rolled - printed("BS", "retained")
        answer = f"no; {diff}" if diff else "yes; 0"
        col = str(year)
        return Question(text, answer, {"col": col})

    def judge(self, task: Task, text: str) -> Verdict:
        match = _DECISION.fullmatch(text.strip())
        if not match:
            return verdict(False, "`yes; 0` or `no; <difference>`", components={"format": 0.0}, why="the reply does not have that form")  # fmt: skip
        want = _DECISION.fullmatch(task.answer)
        assert want is not None
        decision = match.group(1).lower() == want.group(1)
        difference = int(match.group(2).replace(",", "")) == int(want.group(2))
        return verdict(decision and difference, task.answer, reward=0.5 * decision + 0.5 * difference,
                       components={"format": 1.0, "decision": float(decision), "difference": float(difference)},
                       why=f"got {text.strip()[:40]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        if task.answer == "yes; 0":
            return ["no; 0", "yes; 1", "no; 1000"]
        diff = int(task.answer.split("; ")[1])
        return ["yes; 0", f"no; {-diff}", f"no; {diff + 1}"]


# kind, sheet or note, key; the group keeps two anomalies out of one identity
CANDIDATES = (
    ("total", "BS", "total_assets"), ("total", "BS", "current_assets"),
    ("total", "BS", "total_liabilities"), ("total", "IS", "gross_profit"),
    ("total", "IS", "operating_income"), ("total", "CF", "cfo"),
    ("sign", "CF", "capex"), ("sign", "CF", "dividends"), ("sign", "CF", "cf_dna"),
    ("note", "BS", "debt"), ("note", "IS", "tax"),
)  # fmt: skip
NOTE_OF = {"debt": ("N2", "long-term debt was"), "tax": ("N4", "Income tax expense for")}


class Anomalies(FilingTask):
    """The set of misprinted cells and note lines."""

    id = "documents/anomalies-v1"
    axes = Axes("document", "none", "single", "set_match")
    instructions = (
        "Reply with the ids of the misprinted figures only — cell ids (ROW@COLUMN) and note line "
        "ids — separated by commas, and nothing else (for example: BS-07@2023, N2-L01)."
    )

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        wanted = 1 + (difficulty - 1) // 3
        slots = [(kind, sheet, key, y) for y in company.years for kind, sheet, key in CANDIDATES]
        rng.shuffle(slots)
        used: set[tuple[str, int]] = set()
        gold: list[str] = []
        for kind, sheet_id, key, year in slots:
            if len(gold) == wanted or (sheet_id, year) in used:
                continue
            value = company.value(key, year)
            if kind in ("sign", "note") and value == 0:
                continue
            i = company.years.index(year)
            if kind == "note":
                section_id, words = NOTE_OF[key]
                section = filing.section(section_id)
                line = next(j for j, t in enumerate(section.lines) if words in t and str(year) in t)
                wrong = value + abs(_misprint(rng))
                section.lines[line] = section.lines[line].replace(f"{value:,}", f"{wrong:,}")
                gold.append(section.line_id(line))
            else:
                row = filing.sheet(sheet_id).row(key)
                row.values[i] = -value if kind == "sign" else value + _misprint(rng)
                gold.append(f"{row.id}@{year}")
            used.add((sheet_id, year))
        text = (
            "Some printed figures in this filing are wrong: a total that does not equal the sum "
            "of its printed components, a figure printed with the wrong sign, or a note sentence "
            "whose figure disagrees with the statements. Every other figure is right, and each "
            "wrong figure is the single one whose correction restores every check it takes part "
            "in. Which cells and note lines are misprinted?"
        )
        return Question(text, ", ".join(sorted(gold)), {"gold": sorted(gold)})

    def judge(self, task: Task, text: str) -> Verdict:
        items = parse_items(text)
        if not items or not all(is_source_id(i) for i in items):
            return verdict(False, "a comma-separated list of cell and line ids", components={"format": 0.0}, why="the reply is not a list of ids")  # fmt: skip
        f1 = set_f1(items, task.meta["gold"], normalize=str.strip)
        return verdict(f1 == 1.0, "exactly the misprinted ids", reward=f1,
                       components={"format": 1.0, "f1": f1}, why=f"set F1 {f1:.2f}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        gold: list[str] = task.meta["gold"]

        def neighbour(ref: str) -> str:
            head, sep, tail = ref.partition("@") if "@" in ref else ref.rpartition("L")
            prefix, _, number = head.rpartition("-") if sep == "@" else (head, "", tail)
            if sep == "@":
                return f"{prefix}-{int(number) % 9 + 1:02d}@{tail}"
            return f"{head}L{int(number) % 9 + 1:02d}"

        moved = [neighbour(g) for g in gold]
        out = [", ".join(moved), ", ".join([*gold, *(m for m in moved[:1] if m not in gold)])]
        out.append(
            ", ".join(gold[1:] + moved[:1]) if len(gold) > 1 else ", ".join([gold[0], *moved])
        )
        return [o for o in out if sorted(parse_items(o)) != gold]


# id, words, value(company, year) -> Fraction | None, "max" or "min", is an amount
def _ratio(a: int, b: int) -> Fraction | None:
    return Fraction(a, b) if b > 0 else None


COVENANTS = (
    (
        "the debt-to-equity ratio (long-term debt divided by total equity) must not exceed",
        lambda c, y: _ratio(c.value("debt", y), c.value("total_equity", y)),
        "max",
        False,
    ),  # fmt: skip
    (
        "the current ratio (total current assets divided by total current liabilities) must be at least",
        lambda c, y: _ratio(c.value("current_assets", y), c.value("current_liabilities", y)),
        "min",
        False,
    ),  # fmt: skip
    (
        "interest cover (operating income divided by interest expense) must be at least",
        lambda c, y: _ratio(c.value("operating_income", y), c.value("interest", y)),
        "min",
        False,
    ),  # fmt: skip
    (
        "long-term debt divided by EBITDA (operating income plus depreciation and amortization) must not exceed",
        lambda c, y: _ratio(c.value("debt", y), c.value("operating_income", y) + c.value("dna", y)),
        "max",
        False,
    ),  # fmt: skip
    (
        "total equity must be at least",
        lambda c, y: Fraction(c.value("total_equity", y)),
        "min",
        True,
    ),  # fmt: skip
    (
        "purchases of property and equipment must not exceed",
        lambda c, y: Fraction(-c.value("capex", y)),
        "max",
        True,
    ),  # fmt: skip
)


class Covenants(FilingTask):
    """Which debt covenants were breached in a year, or `none`."""

    id = "documents/covenants-v1"
    axes = Axes("document", "none", "single", "set_match")
    instructions = "Reply with the breached covenants' labels separated by commas (for example: C1, C3), or the single word none, and nothing else."  # fmt: skip

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        year = rng.choice(company.years)
        chosen = [c for c in COVENANTS if c[1](company, year) is not None]
        chosen = rng.sample(chosen, min(len(chosen), 2 + difficulty // 3))
        section = Section("N8", "Debt covenants")
        section.add(f"The Company's credit agreement sets the covenants below, tested on the figures of each fiscal year as printed in the statements (amounts in {filing.unit}s).")  # fmt: skip
        breached = []
        for n, (words, value, bound, is_amount) in enumerate(chosen, 1):
            actual = value(company, year)
            assert actual is not None
            breach = rng.random() < 0.4
            factor = Fraction(rng.randint(105, 130), 100)
            # a max covenant is breached when the figure exceeds it, a min one when it falls short
            limit = actual / factor if (bound == "max") == breach else actual * factor
            shown = f"{int(limit):,}" if is_amount else rounded(limit, 2)
            limit = Fraction(int(limit)) if is_amount else Fraction(shown)
            if (actual > limit) if bound == "max" else (actual < limit):
                breached.append(f"C{n}")
            section.add(f"Covenant C{n}: {words} {shown}.")
        filing.documents[1].parts.append(section)
        answer = ", ".join(breached) or "none"
        text = f"Which covenants did {company.name} breach in {year}?"
        return Question(text, answer, {"labels": [f"C{n}" for n in range(1, len(chosen) + 1)], "gold": breached})  # fmt: skip

    def judge(self, task: Task, text: str) -> Verdict:
        labels, gold = task.meta["labels"], task.meta["gold"]
        stripped = text.strip()
        items = [] if stripped.lower() == "none" else parse_items(stripped)
        if stripped.lower() != "none" and (
            not items or not all(i.upper() in labels for i in items)
        ):
            return verdict(False, "covenant labels or none", components={"format": 0.0}, why="the reply is not a list of the covenant labels")  # fmt: skip
        f1 = set_f1([i.upper() for i in items], gold, normalize=str.strip)
        return verdict(f1 == 1.0, f"the breached covenants ({task.answer})", reward=f1,
                       components={"format": 1.0, "f1": f1}, why=f"set F1 {f1:.2f}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        labels, gold = task.meta["labels"], task.meta["gold"]
        rest = [x for x in labels if x not in gold]
        out = [", ".join(rest) or "none", ", ".join(labels)]
        if gold:
            out += ["none", ", ".join(gold[1:] + rest[:1]) or "none"]
        else:
            out += [labels[0], ", ".join(labels[:2])]
        return [o for o in out if o != task.answer]


DOMAINS = (Reconcile(), Anomalies(), Covenants())
