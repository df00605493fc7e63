"""Cited answers (fields + citations): every value names the cell or line it came from.

- `documents/extract-cited-v1` — extract 3 to 8 named figures (a statement line for a
  year) into JSON, `{"<field>": {"value": <number>, "cell": "<ROW@COLUMN>"}}`. A field
  scores `value` (the number, by `verify.fuzzy.field_score`) times `0.5 + 0.5 * cited`,
  where `cited` is `cite.traces` of its cell: an uncited or wrongly cited right value
  earns half, a wrong value nothing. Reward is the mean over fields; passing needs
  every value right and every citation tracing.
- `documents/crossdoc-cited-v1` — a per-share or per-employee figure whose operands
  sit in different documents of the filing (net income in the statements, shares in
  the notes, employees or backlog in management's discussion); the answer is
  `{"answer": <number>, "citations": [<ids>]}`. Reward is 0.5 for the number
  (two decimals) plus 0.5 × `cite.citation_f1` of the citations against the operands.

Difficulty grows the filing (years, segments, distractor tables from difficulty 3,
narrative to ~2k tokens per difficulty level) and, for extraction, the field count.

Not guaranteed: a citation to any cell printing the same figure counts as traced
(net income is printed in two statements); numbers may be JSON numbers or strings
that are one quantity ("(4,860)").
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from typing import Any

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.documents.cite import SourceIndex, citation_f1, traces
from posttrain.domains.documents.company import Company
from posttrain.domains.documents.filing import Filing
from posttrain.domains.documents.frame import FilingTask, Question, close_to, rounded
from posttrain.types import Task, Verdict
from posttrain.verify.fuzzy import field_score
from posttrain.verify.numeric import parse_quantity
from posttrain.verify.structure import parse_json

STATEMENT_NAMES = {"IS": "income statement", "BS": "balance sheet", "CF": "cash-flow statement",
                   "SG": "segment table"}  # fmt: skip
SKIP = {"goodwill", "common_stock", "stock_issued", "cf_net_income", "cf_dna", "cash_end", "cfi"}


def _index(task: Task) -> SourceIndex:
    return SourceIndex.from_meta(task.meta["sources"])


class ExtractCited(FilingTask):
    """Named statement figures to JSON, each with the cell it was read from."""

    id = "documents/extract-cited-v1"
    axes = Axes("document", "none", "single", "fields_citations")
    cites = True
    instructions = (
        'Reply with one JSON object and nothing else: for each field, {"value": <the figure '
        'as a number, negative if printed in parentheses>, "cell": "<the ROW@COLUMN id of the '
        'cell it was read from>"}.'
    )

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        sheets = ["IS", "BS", "CF"] + (["SG"] if difficulty >= 4 else [])
        pool = []
        for sheet_id in sheets:
            sheet = filing.sheet(sheet_id)
            for row in sheet.rows:
                values = row.values
                if row.key in SKIP or len(set(values)) < len(values) or 0 in values:
                    continue
                for column in sheet.columns:
                    pool.append((sheet_id, row.key, row.label, column))
        picks = rng.sample(pool, min(len(pool), 3 + difficulty // 2))
        fields, gold, printed = [], {}, filing.cells()
        for sheet_id, key, label, column in picks:
            name = f"{key.replace(':', '_')}_{column}"
            cell = filing.cell_id(sheet_id, key, column)
            fields.append(f'- "{name}": {label}, {column}, from the {STATEMENT_NAMES[sheet_id]}')
            gold[name] = {"value": printed[cell], "cell": cell}
        text = "Extract these fields:\n" + "\n".join(fields)
        return Question(text, json.dumps(gold), {"gold": gold})

    def judge(self, task: Task, text: str) -> Verdict:
        gold: dict[str, dict[str, Any]] = task.meta["gold"]
        got = parse_json(text)
        if not isinstance(got, dict):
            return verdict(False, "one JSON object of cited fields", components={"format": 0.0}, why="the reply is not one JSON object")  # fmt: skip
        index = _index(task)
        values = cited = 0.0
        for name, want in gold.items():
            entry = got.get(name)
            if not isinstance(entry, dict):
                continue
            right = field_score(entry.get("value"), want["value"]) == 1.0
            traced = right and traces(index, entry.get("cell"), want["value"])
            values += right
            cited += traced
        n = len(gold)
        reward = (values * 0.5 + cited * 0.5) / n
        passed = values == cited == n
        return verdict(passed, "every field's value with a cell that prints it", reward=reward,
                       components={"format": 1.0, "values": values / n, "citations": cited / n},
                       why=f"{int(values)}/{n} values right, {int(cited)}/{n} traced")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        gold: dict[str, dict[str, Any]] = task.meta["gold"]
        cells = _index(task).cells
        names = list(gold)

        def other_column(cell: str) -> str:
            row, _, column = cell.partition("@")
            columns = sorted({c.partition("@")[2] for c in cells if c.startswith(row + "@")})
            return f"{row}@{columns[(columns.index(column) + 1) % len(columns)]}"

        shifted_cell = {n: {"value": gold[n]["value"], "cell": gold[names[(i + 1) % len(names)]]["cell"]} for i, n in enumerate(names)}  # fmt: skip
        uncited = {n: {"value": g["value"]} for n, g in gold.items()}
        off = {n: dict(g) for n, g in gold.items()}
        first = gold[names[0]]
        off[names[0]] = {
            "value": first["value"] + max(1, abs(first["value"]) // 50),
            "cell": first["cell"],
        }
        other_year = {n: {"value": cells[other_column(g["cell"])], "cell": other_column(g["cell"])} for n, g in gold.items()}  # fmt: skip
        return [json.dumps(x) for x in (shifted_cell, uncited, off, other_year)]


# name, question words, numerator key, denominator key, numerator source, denominator source
RATIOS = (
    (
        "eps",
        "earnings per share (net income divided by the weighted average number of shares), in US dollars",
        "net_income",
        "shares",
    ),  # fmt: skip
    (
        "dps",
        "dividends paid per share (dividends paid divided by the weighted average number of shares), in US dollars",
        "dividends",
        "shares",
    ),  # fmt: skip
    (
        "bvps",
        "book value per share (total equity divided by the weighted average number of shares), in US dollars",
        "total_equity",
        "shares",
    ),  # fmt: skip
    (
        "rpe",
        "revenue per employee (revenue divided by the year-end number of employees), in {unit}s of US dollars",
        "revenue",
        "employees",
    ),  # fmt: skip
    (
        "backlog",
        "backlog-to-revenue ratio (year-end order backlog divided by revenue)",
        "backlog",
        "revenue",
    ),  # fmt: skip
)


class CrossDocCited(FilingTask):
    """A figure computed from operands in two documents, with both sources cited."""

    id = "documents/crossdoc-cited-v1"
    axes = Axes("document", "none", "single", "fields_citations")
    cites = True
    instructions = (
        'Reply with one JSON object and nothing else: {"answer": <the number rounded to two '
        'decimals>, "citations": [<the id of each cell or line holding a figure you used>]}.'
    )

    def ask(self, rng: random.Random, company: Company, filing: Filing, difficulty: int) -> Question:  # fmt: skip
        year = rng.choice(company.years)
        options = [r for r in RATIOS if r[2] != "dividends" or company.value("dividends", year)]
        name, words, top, bottom = rng.choice(options)
        a, b = abs(company.value(top, year)), company.value(bottom, year)
        exact = Fraction(a, b)
        answer = rounded(exact, 2)
        sources = []
        for key in (top, bottom):
            if key in ("shares",):
                section, pick = filing.section("N5"), "weighted average"
            elif key in ("employees", "backlog"):
                section, pick = (
                    filing.section("M1"),
                    "employees" if key == "employees" else "backlog",
                )
            else:
                sheet = {"net_income": "IS", "revenue": "IS", "total_equity": "BS", "dividends": "CF"}[key]  # fmt: skip
                sources.append(filing.cell_id(sheet, key, year))
                continue
            line = next(i for i, t in enumerate(section.lines) if pick in t and str(year) in t)
            sources.append(section.line_id(line))
        text = f"What was {company.name}'s {words.format(unit=filing.unit)} for {year}? Use the figures as printed."  # fmt: skip
        gold = {"answer": float(answer), "citations": sources}
        params = {"exact": [exact.numerator, exact.denominator], "operands": [a, b], "gold": gold, "metric": name}  # fmt: skip
        return Question(text, json.dumps(gold), params)

    def judge(self, task: Task, text: str) -> Verdict:
        got = parse_json(text)
        if not isinstance(got, dict) or "answer" not in got:
            return verdict(False, "one JSON object with an answer and citations", components={"format": 0.0}, why="the reply is not that JSON object")  # fmt: skip
        value = got["answer"]
        if isinstance(value, str):
            quantity = parse_quantity(value)
            value = quantity.value if quantity and not quantity.scale else None
        numerator, denominator = task.meta["exact"]
        right = isinstance(value, (int, float)) and not isinstance(value, bool) and close_to(value, Fraction(numerator, denominator), 2)  # fmt: skip
        cited = citation_f1(_index(task), got.get("citations"), [float(x) for x in task.meta["operands"]])  # fmt: skip
        return verdict(right and cited == 1.0, "the figure, with citations of exactly the cells and lines used",
                       reward=0.5 * right + 0.5 * cited, components={"format": 1.0, "answer": float(right), "citations": cited},
                       why=f"answer {'right' if right else 'wrong'}, citation F1 {cited:.2f}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        gold = task.meta["gold"]
        answer, sources = gold["answer"], gold["citations"]
        index = _index(task)
        operands = task.meta["operands"]
        decoys = [c for c in index.cells if not any(traces(index, c, v) for v in operands)][:2]
        return [
            json.dumps({"answer": answer, "citations": decoys}),  # right number, wrong cells
            json.dumps({"answer": answer, "citations": []}),
            json.dumps({"answer": answer, "citations": sources[:1]}),  # one source missing
            json.dumps({"answer": round(answer + 0.01, 2), "citations": decoys}),
        ]


DOMAINS = (ExtractCited(), CrossDocCited())
