"""Citations: parse cell and line ids, and check that a citation traces to its value.

    index = SourceIndex.from_filing(filing)        # kept in task.meta["sources"]
    traces(index, "IS-01@2023", 574188)            # True when that cell prints 574,188
    citation_f1(index, ["IS-11@2023", "N5-L02"], [24944, 179685])   # 1.0

The issue's traceability rule: a citation must name an existing table cell
(`ROW@COLUMN`) or note/narrative line (`N2-L01`) that actually contains the cited
value. A cell traces a value when the printed figure equals it; a line when one
of the figures written in it does. Signs are ignored on both, because a note
writes "dividends of 4,134" where the cash-flow statement prints (4,134).
`citation_f1` scores a list of citations against the operands an answer rests
on: precision is the share of citations that trace some operand, recall the
share of operands traced by some citation.

Not guaranteed: a cell or line that holds the same figure for another reason
still traces it (the rule is about containing the value, not meaning it);
values are compared with `verify.numeric.values_close`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from posttrain.domains.documents.filing import Filing, numbers_in
from posttrain.verify.numeric import values_close

CELL_ID = re.compile(r"[A-Z]{1,3}[0-9]*-[0-9]{2,}@[A-Za-z0-9]+")
LINE_ID = re.compile(r"[A-Z]{1,3}[0-9]*-L[0-9]{2,}")


def is_source_id(text: Any) -> bool:
    """True for a well-formed cell id (`IS-03@2023`) or line id (`N2-L01`)."""
    return isinstance(text, str) and bool(CELL_ID.fullmatch(text) or LINE_ID.fullmatch(text))


@dataclass(frozen=True)
class SourceIndex:
    """What each printed cell and line holds: cell id -> value, line id -> its figures."""

    cells: dict[str, int]
    lines: dict[str, list[float]]

    @classmethod
    def from_filing(cls, filing: Filing) -> SourceIndex:
        lines = {i: numbers_in(t) for i, t in filing.lines().items()}
        return cls(filing.cells(), {i: n for i, n in lines.items() if n})

    def to_meta(self) -> dict[str, Any]:
        return {"cells": self.cells, "lines": self.lines}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> SourceIndex:
        return cls(dict(meta["cells"]), {k: list(v) for k, v in meta["lines"].items()})


def traces(index: SourceIndex, ref: Any, value: Any) -> bool:
    """True when `ref` names a printed cell or line that contains `value` (signs ignored)."""
    if not isinstance(ref, str) or isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if ref in index.cells:
        return values_close(abs(float(index.cells[ref])), abs(float(value)))
    if ref in index.lines:
        return any(values_close(n, abs(float(value))) for n in index.lines[ref])
    return False


def citation_f1(index: SourceIndex, refs: Any, operands: list[float]) -> float:
    """F1 of the citations against the operands; 0.0 for no citations or a non-list."""
    if not isinstance(refs, list) or not refs or not operands:
        return 0.0
    useful = sum(any(traces(index, r, v) for v in operands) for r in refs)
    covered = sum(any(traces(index, r, v) for r in refs) for v in operands)
    if not useful or not covered:
        return 0.0
    precision, recall = useful / len(refs), covered / len(operands)
    return 2 * precision * recall / (precision + recall)
