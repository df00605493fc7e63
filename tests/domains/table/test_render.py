"""`table/render.py`: the three renderings hold the same cells."""

from __future__ import annotations

import csv
import io
import random
from html.parser import HTMLParser

import pytest

from posttrain.domains.table.data import SCHEMAS, Column, Table, build_table
from posttrain.domains.table.render import render


def _table() -> Table:
    return build_table(random.Random(0), SCHEMAS[3], 4)


def _grid(table: Table) -> list[list[str]]:
    header = [c.name for c in table.columns]
    return [header] + [[table.text(r, n) for n in header] for r in range(len(table.rows))]


def test_csv_reads_back_to_the_cells() -> None:
    table = _table()
    assert list(csv.reader(io.StringIO(render(table, "csv")))) == _grid(table)


def test_markdown_has_a_header_a_rule_and_a_line_per_row() -> None:
    table = _table()
    lines = render(table, "markdown").splitlines()
    assert len(lines) == len(table.rows) + 2
    assert lines[1].count("---:") == len(table.numbers())
    assert [c.strip() for c in lines[2].strip("|").split("|")] == _grid(table)[1]


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.rows[-1].append("")

    def handle_data(self, data: str) -> None:
        if self.rows and self.rows[-1] and data.strip():
            self.rows[-1][-1] += data


def test_html_parses_back_to_the_cells() -> None:
    table = _table()
    parser = _Cells()
    parser.feed(render(table, "html"))
    assert parser.rows == _grid(table)


def test_html_escapes_markup_in_cells() -> None:
    table = Table("t", (Column("Name", "key"), Column("Note", "text")), (("A & B", "<b>"),))
    text = render(table, "html")
    assert "A &amp; B" in text and "&lt;b&gt;" in text


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError):
        render(_table(), "latex")
