"""A filing: documents made of id-carrying tables and note sections, built from a `Company`.

    filing = core_filing(company, unit="thousand")
    filing.cell_id("IS", "revenue", 2023)     # "IS-01@2023"
    filing.cells()["IS-01@2023"]              # the printed value
    filing.lines()["N2-L01"]                  # the printed note sentence

Every table row has an id (`IS-03`: sheet id, row number); a cell is cited as
`ROW@COLUMN` (`IS-03@2023`). Every note or narrative line has an id (`N2-L01`). Tasks
take the core filing (statements, segment table, notes), change what they need
(blank a cell, inject an anomaly, reword a note), let `narrative.pad` add
distractor tables and narrative to the target length, then render it with
`render.render_filing`. `cells()` and `lines()` are what citations are checked
against, so they describe the printed filing, changes included.

Not guaranteed: ids are unique within one filing only; a note sentence may state
several figures; blanked cells (`None`) are absent from `cells()`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from posttrain.domains.documents.company import BALANCE, CASH_FLOW, INCOME, Company

UNIT_WORDS = ("thousand", "million")
_NUMBER = re.compile(r"(?<![\w.])\(?-?[0-9][0-9,]*(?:\.[0-9]+)?\)?")


@dataclass
class Row:
    """One table row: `values[i]` is printed under the sheet's `columns[i]` (None: blank)."""

    id: str
    label: str
    key: str  # the company's key for this figure; "" for rows that are not one
    values: list[int | None]


@dataclass
class Sheet:
    """A table with an id, a title, one column per period and id-carrying rows."""

    id: str
    title: str
    columns: list[str]
    rows: list[Row] = field(default_factory=list)

    def add(self, label: str, key: str, values: list[int | None]) -> Row:
        row = Row(f"{self.id}-{len(self.rows) + 1:02d}", label, key, values)
        self.rows.append(row)
        return row

    def row(self, key: str) -> Row:
        for row in self.rows:
            if row.key == key:
                return row
        raise KeyError(f"sheet {self.id} has no row {key!r}")


@dataclass
class Section:
    """A titled run of sentences; line i's id is `{id}-L{i+1:02d}`."""

    id: str
    title: str
    lines: list[str] = field(default_factory=list)

    def line_id(self, index: int) -> str:
        return f"{self.id}-L{index + 1:02d}"

    def add(self, text: str) -> str:
        self.lines.append(text)
        return self.line_id(len(self.lines) - 1)


Part = Sheet | Section


@dataclass
class Document:
    title: str
    parts: list[Part] = field(default_factory=list)


@dataclass
class Filing:
    """The documents of one company's annual filing, amounts in `unit`s of US dollars."""

    company: str
    unit: str
    documents: list[Document]

    def parts(self) -> list[Part]:
        return [p for d in self.documents for p in d.parts]

    def sheet(self, sheet_id: str) -> Sheet:
        for part in self.parts():
            if isinstance(part, Sheet) and part.id == sheet_id:
                return part
        raise KeyError(f"no sheet {sheet_id!r}")

    def section(self, section_id: str) -> Section:
        for part in self.parts():
            if isinstance(part, Section) and part.id == section_id:
                return part
        raise KeyError(f"no section {section_id!r}")

    def cell_id(self, sheet_id: str, key: str, column: int | str) -> str:
        return f"{self.sheet(sheet_id).row(key).id}@{column}"

    def cells(self) -> dict[str, int]:
        """Every printed cell: id -> value."""
        out = {}
        for part in self.parts():
            if isinstance(part, Sheet):
                for row in part.rows:
                    for column, value in zip(part.columns, row.values, strict=True):
                        if value is not None:
                            out[f"{row.id}@{column}"] = value
        return out

    def lines(self) -> dict[str, str]:
        """Every printed line: id -> text."""
        return {
            p.line_id(i): text
            for p in self.parts()
            if isinstance(p, Section)
            for i, text in enumerate(p.lines)
        }


def amount(value: int | None) -> str:
    """A figure as printed: `1,234`, `(1,234)` for negatives, `?` for a blank."""
    if value is None:
        return "?"
    return f"({-value:,})" if value < 0 else f"{value:,}"


def numbers_in(text: str) -> list[float]:
    """The absolute values of the figures written in a sentence (`(1,234)` reads 1234)."""
    out = []
    for match in _NUMBER.finditer(text):
        digits = match.group(0).strip("()").lstrip("-").replace(",", "")
        try:
            out.append(abs(float(digits)))
        except ValueError:
            continue
    return out


def unit_phrase(unit: str) -> str:
    return f"in {unit}s of US dollars"


def statement(company: Company, sheet_id: str, title: str, lines: tuple[tuple[str, str], ...], unit: str) -> Sheet:  # fmt: skip
    sheet = Sheet(sheet_id, f"{title} ({unit_phrase(unit)})", [str(y) for y in company.years])
    for key, label in lines:
        sheet.add(label, key, [company.value(key, y) for y in company.years])
    return sheet


def segment_sheet(company: Company, unit: str, totals: bool = False) -> Sheet:
    """Segment revenue, then segment operating income (with corporate), optional totals."""
    sheet = Sheet("SG", f"Segment information ({unit_phrase(unit)})", [str(y) for y in company.years])  # fmt: skip
    years = company.years
    for s, name in enumerate(company.segments):
        sheet.add(f"Revenue - {name}", f"seg_rev:{s}", [company.segment_revenue(s, y) for y in years])  # fmt: skip
    if totals:
        sheet.add("Total segment revenue", "revenue", [company.value("revenue", y) for y in years])
    for s, name in enumerate(company.segments):
        sheet.add(f"Operating income - {name}", f"seg_oi:{s}", [company.segment_income(s, y) for y in years])  # fmt: skip
    sheet.add("Corporate and unallocated", "corp_oi", [company.value("corp_oi", y) for y in years])
    if totals:
        sheet.add("Total operating income", "operating_income", [company.value("operating_income", y) for y in years])  # fmt: skip
    return sheet


def statements(company: Company, unit: str, cash_flow: bool = True) -> list[Sheet]:
    out = [
        statement(company, "IS", "Consolidated statement of income", INCOME, unit),
        statement(company, "BS", "Consolidated balance sheet", BALANCE, unit),
    ]
    if cash_flow:
        out.append(statement(company, "CF", "Consolidated statement of cash flows", CASH_FLOW, unit))  # fmt: skip
    return out


def notes(company: Company, unit: str) -> list[Section]:
    """The notes: basis, debt, property, taxes, equity; each states figures per year."""
    name, years = company.name, company.years
    n1 = Section("N1", "Basis of presentation")
    n1.add(f"The consolidated financial statements of {name} are presented {unit_phrase(unit)} unless stated otherwise.")  # fmt: skip
    n1.add("The fiscal year ends on December 31. Figures in parentheses are negative amounts or cash outflows.")  # fmt: skip
    n2 = Section("N2", "Long-term debt")
    n3 = Section("N3", "Property, plant and equipment")
    n4 = Section("N4", "Income taxes")
    n5 = Section("N5", "Equity and shares")
    for y in years:
        v = company.books[years.index(y)]
        n2.add(f"At December 31, {y}, long-term debt was {v['debt']:,} {unit}.")
        n3.add(f"In {y}, purchases of property and equipment were {-v['capex']:,} {unit} and depreciation and amortization was {v['dna']:,} {unit}.")  # fmt: skip
        n4.add(f"Income tax expense for {y} was {v['tax']:,} {unit}.")
        n5.add(f"The weighted average number of shares outstanding in {y} was {v['shares']:,} {unit}.")  # fmt: skip
        if v["dividends"]:
            n5.add(f"Dividends paid in {y} totalled {-v['dividends']:,} {unit}.")
    return [n1, n2, n3, n4, n5]


def operations(company: Company, unit: str) -> Section:
    """Operating facts stated only in prose: employees and order backlog."""
    m1 = Section("M1", "Operations overview")
    for y in company.years:
        v = company.books[company.years.index(y)]
        m1.add(f"{company.name} ended {y} with {v['employees']:,} employees.")
        m1.add(f"The order backlog at the end of {y} was {v['backlog']:,} {unit}.")
    return m1


def core_filing(company: Company, unit: str, *, cash_flow: bool = True, segment_totals: bool = False) -> Filing:  # fmt: skip
    """Statements; notes with the segment table; management's discussion (padding goes there)."""
    return Filing(
        company.name,
        unit,
        [
            Document(
                "Consolidated financial statements", list(statements(company, unit, cash_flow))
            ),  # fmt: skip
            Document(
                "Notes to the consolidated financial statements",
                [*notes(company, unit), segment_sheet(company, unit, segment_totals)],
            ),
            Document("Management's discussion and analysis", [operations(company, unit)]),
        ],
    )
