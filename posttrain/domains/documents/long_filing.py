"""Long filings behind retrieval tools: `documents/long-cited-extraction-v1`, `documents/long-metric-v1`.

The filing is `narrative.long_filing` (plain text; statements, notes, segment table,
non-GAAP and quarterly distractor tables, then narrative) grown from about 10k tokens
at difficulty 1 to 200k at 10 (geometric). The model never sees it: it gets
`search_document` / `read_chunk` (`longctx_search.framework`, BM25 over ~200-token
chunks; a table is split between rows, so its header row of years sits in the
table's first chunk) and cites the chunks it read.

- `documents/long-cited-extraction-v1` — 2 + d//3 named statement figures;
  `{"<field>": {"value": <number>, "chunk": "doc#N"}, ...}`. A field scores its value
  times 0.5 + 0.5 × cited; reward is the mean; passing needs every field right and cited.
- `documents/long-metric-v1` — a metric whose operands sit in different parts of
  the filing (free cash flow per share, net debt to EBITDA, cash conversion,
  revenue per employee, backlog to revenue, dividend payout);
  `{"answer": <number, two decimals>, "citations": ["doc#N", ...]}`; 0.5 × answer +
  0.5 × citation F1 against the operands.

Traceability (as `cite.py`, with chunks for cells): a cited chunk traces a value
when one of the figures it prints equals it (signs ignored) — and here it must also
have been read in this episode. An answer given without reading any chunk scores 0.
The document is rebuilt from `task.meta["doc"]` (the filing seed and size), not stored.

Not guaranteed: a chunk printing the same figure for another reason (net income in two
statements, EBITDA's operating income) traces it; token counts are characters / 4.
"""

from __future__ import annotations

import functools
import json
import random
import re
from fractions import Fraction
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.documents.company import LABELS, Company, build_company
from posttrain.domains.documents.filing import (
    UNIT_WORDS,
    Filing,
    core_filing,
    numbers_in,
    unit_phrase,
)
from posttrain.domains.documents.frame import close_to, rounded
from posttrain.domains.documents.narrative import long_filing
from posttrain.domains.documents.tasks_cited import SKIP, STATEMENT_NAMES
from posttrain.domains.longctx_search.framework import (
    READ,
    Built,
    Corpus,
    Evidence,
    RetrievalDomain,
    Setup,
    Target,
    calls_turn,
    failed,
)
from posttrain.types import Message, Reference, Task, ToolCall, Verdict
from posttrain.verify.fuzzy import field_score
from posttrain.verify.numeric import parse_quantity, values_close
from posttrain.verify.structure import parse_json

SHEET_TITLES = {"IS": "Consolidated statement of income", "BS": "Consolidated balance sheet",
                "CF": "Consolidated statement of cash flows", "SG": "Segment information",
                "NG": "Reconciliation of non-GAAP measures"}  # fmt: skip


def filing_tokens(difficulty: int) -> int:
    """About 10k tokens at difficulty 1 to 200k at 10, geometric, rounded to hundreds."""
    return int(round(10_000 * 20 ** ((difficulty - 1) / 9), -2))


def company_of(seed: int) -> tuple[Company, str]:
    """The company and unit `long_filing(seed, ...)` draws first: cheap, no padding."""
    rng = random.Random(seed)
    company = build_company(rng, 5, 8)
    return company, rng.choice(UNIT_WORDS)


def _line_span(text: str, marker: str) -> tuple[int, int]:
    """The line of `text` that starts with `marker`."""
    start = text.find("\n" + marker) + 1
    if start <= 0:
        raise KeyError(f"no line starts with {marker!r}")
    end = text.find("\n", start)
    return start, len(text) if end < 0 else end


# A chunk's text keeps its cached hash, so repeated verifications parse each chunk once.
_figures = functools.lru_cache(maxsize=8192)(numbers_in)


def prints(corpus: Corpus, chunk_id: Any, value: float) -> bool:
    """True when the chunk prints `value` (signs ignored): the traceability rule."""
    chunk = corpus.chunks.get(chunk_id) if isinstance(chunk_id, str) else None
    return chunk is not None and any(values_close(n, abs(float(value))) for n in _figures(chunk.text))  # fmt: skip


class LongFilingDomain(RetrievalDomain):
    """A question over a long filing; sources are table rows ("IS-03") and note lines
    ("N5-L02"), each a span the reference must find."""

    def setup(self, rng: random.Random, difficulty: int) -> tuple[int, Company, str, Filing]:
        seed = rng.randrange(2**31)
        company, unit = company_of(seed)
        return seed, company, unit, core_filing(company, unit)

    def frame(self, company: Company, unit: str, tokens: int, seed: int, question: str,
              answer_format: str, answer: Any, meta: dict[str, Any]) -> Setup:  # fmt: skip
        intro = (
            f"The document is the annual filing of {company.name} (plain text). Amounts are "
            f"{unit_phrase(unit)} unless stated otherwise; figures in parentheses are "
            f"negative. Table rows carry ids such as IS-03 (IS income statement, BS balance "
            f"sheet, CF cash flows, SG segments); the header row naming the years is at the "
            f"top of each table. Note and narrative lines carry ids such as N2-L01."
        )
        return Setup(f"{intro}\n\n{question}", answer_format, f"{company.name} annual filing",
                     tokens, {"seed": seed, "tokens": tokens}, answer, meta)  # fmt: skip

    def build(self, task: Task) -> Built:
        doc = task.meta["doc"]
        _, text = long_filing(doc["seed"], doc["tokens"])
        spans: dict[str, tuple[int, int]] = {}
        for source in task.meta["sources"]:
            marker = f"[{source}] " if "-L" in source or source in SHEET_TITLES else f"{source} "
            spans[source] = _line_span(text, marker)
        return Built(text, spans)

    def source_targets(self, task: Task) -> list[Target]:
        """The table headers first (for the years), then each source row or line."""
        queries: dict[str, str] = task.meta["queries"]
        headers = sorted({s.split("-")[0] for s in queries if "-L" not in s})
        out = [Target(SHEET_TITLES[h], h, fallbacks=(f"{h} {SHEET_TITLES[h]} id line item",)) for h in headers]  # fmt: skip
        for source, query in queries.items():
            out.append(Target(query, source, fallbacks=(f"{source} {query}",)))
        return out


def _sources_meta(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """meta for sources given as (source id, query); headers added for table rows."""
    queries = dict(pairs)
    headers = sorted({s.split("-")[0] for s in queries if "-L" not in s})
    return {"queries": queries, "sources": [*headers, *queries]}


class LongCitedExtraction(LongFilingDomain):
    """Named statement figures from a long filing, each with the chunk it was read in."""

    id = "documents/long-cited-extraction-v1"
    axes = Axes("document", "retrieval", "multi", "fields_citations")

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        seed, company, unit, filing = self.setup(rng, difficulty)
        sheets = ["IS", "BS", "CF"] + (["SG"] if difficulty >= 4 else [])
        pool = []
        for sheet_id in sheets:
            sheet = filing.sheet(sheet_id)
            for row in sheet.rows:
                if row.key in SKIP or len(set(row.values)) < len(row.values) or 0 in row.values:
                    continue
                pool += [(sheet_id, row.id, row.label, column) for column in sheet.columns]
        picks = rng.sample(pool, 2 + difficulty // 3)
        fields, gold, pairs, cells = [], {}, [], filing.cells()
        for sheet_id, row_id, label, column in picks:
            name = f"{re.sub('[^a-z0-9]+', '_', label.lower()).strip('_')}_{column}"
            fields.append(f'- "{name}": {label}, {column}, from the {STATEMENT_NAMES[sheet_id]}')
            gold[name] = {"value": cells[f"{row_id}@{column}"], "row": row_id}
            pairs.append((row_id, f"{label} {SHEET_TITLES[sheet_id].lower()}"))
        question = "Extract these fields:\n" + "\n".join(fields)
        answer_format = (
            'Answer with one JSON object and nothing else: for each field, {"value": <the '
            'figure as a number, negative if printed in parentheses>, "chunk": "<the id of '
            'the chunk you read it in, such as doc#12>"}.'
        )
        answer = {n: g["value"] for n, g in gold.items()}
        meta = {"gold": gold, **_sources_meta(pairs)}
        return self.frame(company, unit, filing_tokens(difficulty), seed, question, answer_format, answer, meta)  # fmt: skip

    def targets(self, task: Task) -> list[Target]:
        return self.source_targets(task)

    def final_answer(self, task: Task, chunk_ids: list[str]) -> str:
        found = dict(zip([t.span for t in self.targets(task)], chunk_ids, strict=True))
        gold = task.meta["gold"]
        return json.dumps({n: {"value": g["value"], "chunk": found[g["row"]]} for n, g in gold.items()})  # fmt: skip

    def judge(self, task: Task, final: str, evidence: Evidence, corpus: Corpus) -> Verdict:
        got = parse_json(final)
        if not isinstance(got, dict):
            return failed("The reply is not one JSON object of fields.")
        values = cited = 0.0
        for name, want in task.meta["gold"].items():
            entry = got.get(name)
            if not isinstance(entry, dict):
                continue
            right = field_score(entry.get("value"), want["value"]) == 1.0
            chunk = entry.get("chunk")
            values += right
            cited += right and isinstance(chunk, str) and chunk in evidence.read and prints(corpus, chunk, want["value"])  # fmt: skip
        n = len(task.meta["gold"])
        passed = values == cited == n
        reward = (0.5 * values + 0.5 * cited) / n
        reason = ("Every value is right and cited to a chunk that was read and prints it." if passed
                  else f"{int(values)}/{n} values right, {int(cited)}/{n} cited to a read chunk that prints them.")  # fmt: skip
        return Verdict(reward, passed, reason, {"format": 1.0, "values": values / n, "citations": cited / n})  # fmt: skip

    def wrong(self, task: Task, reference: Reference) -> list[Reference]:
        corpus = self.corpus(task)
        tools, right = reference.turns[:-1], json.loads(reference.final)
        names = list(right)
        chunk_ids = list(corpus.chunks)
        miss = next(c for c in chunk_ids if not any(prints(corpus, c, v["value"]) for v in right.values()))  # fmt: skip
        read_miss = calls_turn([ToolCall(READ, {"id": miss})])
        off = {n: dict(v) for n, v in right.items()}
        off[names[0]]["value"] += max(1, abs(off[names[0]]["value"]) // 50)
        moved = {n: {"value": v["value"], "chunk": miss} for n, v in right.items()}
        return [
            Reference([*tools, Message("assistant", json.dumps(off))]),  # one value 2% off
            Reference([*tools, read_miss, Message("assistant", json.dumps(moved))]),  # wrong chunks
            Reference.single(reference.final),  # guessed: no tool call
            Reference(
                [
                    *tools,
                    Message(
                        "assistant",
                        json.dumps({n: {"value": v["value"]} for n, v in right.items()}),
                    ),
                ]
            ),  # uncited  # fmt: skip
        ]


# name, question words, numerator, denominator; each operand: (key, sign, source kind)
METRICS = (
    (
        "fcf_per_share",
        "free cash flow per share ((net cash from operating activities plus purchases of property and equipment, a negative figure) divided by the weighted average number of shares), in US dollars",
        ("cfo", "capex"),
        ("shares",),
    ),  # fmt: skip
    (
        "net_debt_to_ebitda",
        "net debt to EBITDA ((long-term debt minus cash and cash equivalents) divided by EBITDA from the reconciliation of non-GAAP measures)",
        ("debt", "-cash"),
        ("ebitda",),
    ),  # fmt: skip
    (
        "cash_conversion",
        "cash conversion (net cash from operating activities divided by net income)",
        ("cfo",),
        ("net_income",),
    ),  # fmt: skip
    (
        "revenue_per_employee",
        "revenue per employee (revenue divided by the year-end number of employees), in {unit}s of US dollars",
        ("revenue",),
        ("employees",),
    ),  # fmt: skip
    (
        "backlog_to_revenue",
        "backlog-to-revenue ratio (year-end order backlog divided by revenue)",
        ("backlog",),
        ("revenue",),
    ),  # fmt: skip
    (
        "payout_ratio",
        "dividend payout ratio (dividends paid, as stated in the notes, divided by net income)",
        ("-dividends",),
        ("net_income",),
    ),  # fmt: skip
)
LINE_SOURCES = {"shares": ("N5", "weighted average"), "employees": ("M1", "employees"),
                "backlog": ("M1", "backlog"), "dividends": ("N5", "Dividends paid")}  # fmt: skip
QUERY_WORDS = {"shares": "weighted average number of shares outstanding",
               "employees": "ended the year with employees", "backlog": "order backlog at the end of",
               "dividends": "dividends paid totalled", "ebitda": "EBITDA reconciliation of non-GAAP measures"}  # fmt: skip
ROW_SOURCES = {"cfo": "CF", "capex": "CF", "debt": "BS", "cash": "BS", "net_income": "IS", "revenue": "IS"}  # fmt: skip


class LongMetric(LongFilingDomain):
    """A metric from operands in different parts of a long filing, with the chunks cited."""

    id = "documents/long-metric-v1"
    axes = Axes("document", "retrieval", "multi", "numeric")

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        seed, company, unit, filing = self.setup(rng, difficulty)
        year = rng.choice(company.years)
        v = company.books[company.years.index(year)]
        options = [m for m in METRICS if (m[0] != "payout_ratio" or v["dividends"]) and (m[0] != "net_debt_to_ebitda" or v["operating_income"] + v["dna"] > 0)]  # fmt: skip
        name, words, top, bottom = rng.choice(options)
        figures = {**v, "ebitda": v["operating_income"] + v["dna"]}

        def total(keys: tuple[str, ...]) -> int:
            return sum(-figures[k[1:]] if k.startswith("-") else figures[k] for k in keys)

        exact = Fraction(total(top), total(bottom))
        pairs, operands = [], []
        for key in (k.lstrip("-") for k in (*top, *bottom)):
            operands.append(abs(figures[key]))
            if key in LINE_SOURCES:
                section_id, pick = LINE_SOURCES[key]
                section = filing.section(section_id)
                line = next(i for i, t in enumerate(section.lines) if pick in t and str(year) in t)
                pairs.append((section.line_id(line), f"{QUERY_WORDS[key]} {year}"))
            elif key == "ebitda":
                pairs.append(("NG-03", QUERY_WORDS[key]))
            else:
                sheet_id = ROW_SOURCES[key]
                row = filing.sheet(sheet_id).row(key)
                pairs.append((row.id, f"{LABELS[key]} {SHEET_TITLES[sheet_id].lower()}"))
        question = f"Question: What was {company.name}'s {words.format(unit=unit)} for {year}? Use the figures as printed."  # fmt: skip
        answer_format = (
            'Answer with one JSON object and nothing else: {"answer": <the number rounded to '
            'two decimals>, "citations": [<the id of each chunk holding a figure you used, '
            'such as "doc#12">]}.'
        )
        answer = float(rounded(exact, 2))
        meta = {"exact": [exact.numerator, exact.denominator], "operands": operands, "metric": name,
                "rows": [s for s, _ in pairs], **_sources_meta(pairs)}  # fmt: skip
        return self.frame(company, unit, filing_tokens(difficulty), seed, question, answer_format, answer, meta)  # fmt: skip

    def targets(self, task: Task) -> list[Target]:
        return self.source_targets(task)

    def final_answer(self, task: Task, chunk_ids: list[str]) -> str:
        found = dict(zip([t.span for t in self.targets(task)], chunk_ids, strict=True))
        citations = list(dict.fromkeys(found[s] for s in task.meta["rows"]))
        return json.dumps({"answer": task.answer, "citations": citations})

    def judge(self, task: Task, final: str, evidence: Evidence, corpus: Corpus) -> Verdict:
        got = parse_json(final)
        if not isinstance(got, dict) or "answer" not in got:
            return failed('The reply is not one JSON object {"answer": ..., "citations": [...]}.')
        value = got["answer"]
        if isinstance(value, str):
            quantity = parse_quantity(value)
            value = quantity.value if quantity and not quantity.scale else None
        numerator, denominator = task.meta["exact"]
        right = isinstance(value, (int, float)) and not isinstance(value, bool) and close_to(value, Fraction(numerator, denominator), 2)  # fmt: skip
        refs = got.get("citations")
        f1 = 0.0
        operands = [float(x) for x in task.meta["operands"]]
        if isinstance(refs, list) and refs:
            usable = [r for r in refs if isinstance(r, str) and r in evidence.read]
            useful = sum(any(prints(corpus, r, x) for x in operands) for r in usable)
            covered = sum(any(prints(corpus, r, x) for r in usable) for x in operands)
            if useful and covered:
                precision, recall = useful / len(refs), covered / len(operands)
                f1 = 2 * precision * recall / (precision + recall)
        passed = right and f1 == 1.0
        reason = f"The answer is {'right' if right else 'wrong'}; citation F1 {f1:.2f} (read chunks printing the operands)."  # fmt: skip
        return Verdict(0.5 * right + 0.5 * f1, passed, reason, {"format": 1.0, "answer": float(right), "citations": f1})  # fmt: skip

    def wrong(self, task: Task, reference: Reference) -> list[Reference]:
        corpus = self.corpus(task)
        tools, right = reference.turns[:-1], json.loads(reference.final)
        operands = task.meta["operands"]
        miss = next(c for c in corpus.chunks if not any(prints(corpus, c, x) for x in operands))
        read_miss = calls_turn([ToolCall(READ, {"id": miss})])
        answer, citations = right["answer"], right["citations"]
        return [
            Reference(
                [
                    *tools,
                    Message(
                        "assistant",
                        json.dumps({"answer": round(answer + 0.01, 2), "citations": citations}),
                    ),
                ]
            ),  # fmt: skip
            Reference(
                [
                    *tools,
                    read_miss,
                    Message("assistant", json.dumps({"answer": answer, "citations": [miss]})),
                ]
            ),  # fmt: skip
            Reference.single(reference.final),  # guessed: no tool call
            Reference(
                [
                    *tools,
                    read_miss,
                    Message(
                        "assistant",
                        json.dumps({"answer": round(answer + 1, 2), "citations": [miss]}),
                    ),
                ]
            ),  # fmt: skip
        ]


DOMAINS = (LongCitedExtraction(), LongMetric())
