"""Derived figures as strict JSON (structure): fill blanked cells, rebuild a cash-flow statement.

- `documents/missing-cells-v1` (table) — the income statement and balance sheet (and
  from difficulty 5 the cash-flow statement) with 1 to 6 cells printed as `?`; each
  blank follows from the accounting identities (`company.IDENTITIES`, the figures
  printed twice) and the cells shown, possibly one blank after another. The answer
  is a JSON object from cell id to integer.
- `documents/cash-bridge-v1` (document) — the filing without its cash-flow
  statement; the answer is that year's operating, investing and financing cash flow
  and net change in cash, derived by the indirect method the question spells out,
  as JSON.

Both are checked against a JSON Schema first (`verify.structure.schema_errors`:
exactly the keys asked, integer values; anything else scores 0), then value by
value, exactly; reward is the share of right values and a pass needs all of them.

Not guaranteed: a blank can sometimes be derived by more than one identity (all
agree, the books being consistent); values must be JSON integers, not strings.
"""

from __future__ import annotations

import json
import random
from typing import Any

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.documents.company import COPIES, IDENTITIES, Company
from posttrain.domains.documents.filing import Filing, statements
from posttrain.domains.documents.frame import FilingTask, Question, SheetTask
from posttrain.types import Task, Verdict
from posttrain.verify.structure import parse_json, schema_errors


def _schema(keys: list[str]) -> dict[str, Any]:
    return {"type": "object", "required": keys, "additionalProperties": False,
            "properties": {k: {"type": "integer"} for k in keys}}  # fmt: skip


def judge_values(task: Task, text: str, what: str) -> Verdict:
    gold: dict[str, int] = task.meta["gold"]
    got = parse_json(text)
    if got is None or schema_errors(got, _schema(sorted(gold))):
        return verdict(False, what, components={"format": 0.0}, why="the reply is not a JSON object with exactly the keys asked and integer values")  # fmt: skip
    right = sum(got[k] == v for k, v in gold.items())
    share = right / len(gold)
    return verdict(right == len(gold), what, reward=share, components={"format": 1.0, "values": share}, why=f"{right}/{len(gold)} values right")  # fmt: skip


def value_decoys(gold: dict[str, int]) -> list[str]:
    keys = sorted(gold)
    first = {**gold, keys[0]: gold[keys[0]] + 1}
    zeros = dict.fromkeys(gold, 0)
    missing = {k: gold[k] for k in keys[1:]} if len(keys) > 1 else {"total": gold[keys[0]]}
    as_text = {k: f"{v:,}" for k, v in gold.items()}
    return [json.dumps(x) for x in (first, zeros, missing, as_text)]


def _relations(keys: set[str]) -> list[tuple[tuple[int, str], ...]]:
    """Each identity among `keys` as signed terms summing to zero."""
    out = []
    for total, parts in IDENTITIES.items():
        terms = ((-1, total), *parts)
        if all(k in keys for _, k in terms):
            out.append(terms)
    out += [((1, c), (-1, o)) for c, o in COPIES.items() if c in keys and o in keys]
    return out


def _solvable(blanks: set[tuple[str, int]], keys: set[str], years: list[int]) -> bool:
    """Can every blank be filled one at a time, each from an identity with one unknown?"""
    open_ = set(blanks)
    relations = _relations(keys)
    progress = True
    while open_ and progress:
        progress = False
        for year in years:
            for terms in relations:
                unknown = [k for _, k in terms if (k, year) in open_]
                if len(unknown) == 1:
                    open_.discard((unknown[0], year))
                    progress = True
    return not open_


class MissingCells(SheetTask):
    """Blanked statement cells, each derivable from the identities and the printed cells."""

    id = "documents/missing-cells-v1"
    axes = Axes("table", "none", "single", "structure")
    instructions = 'Reply with one JSON object and nothing else, mapping each blank cell\'s id to its integer value (for example: {"IS-03@2023": 1250}).'  # fmt: skip

    def ask(self, rng: random.Random, company: Company, unit: str, difficulty: int) -> Question:
        sheets = statements(company, unit, cash_flow=difficulty >= 5)
        keys = {r.key for s in sheets for r in s.rows}
        related = sorted({k for terms in _relations(keys) for _, k in terms})
        slots = [(k, y) for k in related for y in company.years]
        rng.shuffle(slots)
        blanks: set[tuple[str, int]] = set()
        for slot in slots:
            if len(blanks) == 1 + difficulty // 2:
                break
            if _solvable(blanks | {slot}, keys, company.years):
                blanks.add(slot)
        gold = {}
        for sheet in sheets:
            for row in sheet.rows:
                for i, year in enumerate(company.years):
                    if (row.key, year) in blanks:
                        gold[f"{row.id}@{year}"] = row.values[i]
                        row.values[i] = None
        text = "Some cells are blank (`?`). Using the accounting identities (totals are the sums of their lines, subtotals follow the statement's order, figures printed in two statements agree), what are the blank cells' values?"  # fmt: skip
        return Question(text, json.dumps(gold, sort_keys=True), {"gold": gold}, sheets)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_values(task, text, "every blank cell's value")

    def wrong(self, task: Task) -> list[str]:
        return value_decoys(task.meta["gold"])


BRIDGE = ("operating", "investing", "financing", "net_change")


class CashBridge(FilingTask):
    """The cash-flow statement's totals for a year, derived from the other statements."""

    id = "documents/cash-bridge-v1"
    axes = Axes("document", "none", "single", "structure")
    cash_flow = False
    instructions = 'Reply with one JSON object and nothing else, with the integer keys "operating", "investing", "financing" and "net_change" (inflows positive, outflows negative).'  # fmt: skip

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        year = rng.choice(company.years[1:])
        gold = {"operating": company.value("cfo", year), "investing": company.value("cfi", year),
                "financing": company.value("cff", year), "net_change": company.value("net_change", year)}  # fmt: skip
        text = (
            f"The cash-flow statement is not included. Derive {year}'s cash flows in {filing.unit}s "
            f"by the indirect method from the printed statements: operating = net income + "
            f"depreciation and amortization - increase in accounts receivable - increase in "
            f"inventories + increase in accounts payable + increase in accrued liabilities; "
            f"investing = -(purchases of property and equipment), where purchases = closing minus "
            f"opening property, plant and equipment, net, plus depreciation and amortization; "
            f"financing = increase in long-term debt + increase in common stock and paid-in "
            f"capital - dividends paid, where dividends paid = opening retained earnings + net "
            f"income - closing retained earnings; net_change = operating + investing + financing "
            f"(which equals the change in cash and cash equivalents)."
        )
        return Question(text, json.dumps(gold), {"gold": gold})

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_values(task, text, "the four cash-flow totals")

    def wrong(self, task: Task) -> list[str]:
        gold = task.meta["gold"]
        flipped = {**gold, "investing": -gold["investing"]}
        return [*value_decoys(gold), json.dumps(flipped)]


DOMAINS = (MissingCells(), CashBridge())
