"""Render a `Table` as Markdown, HTML or CSV: the three renderings of the `table/*` tasks.

    from posttrain.domains.table.render import FORMATS, render
    text = render(table, "html")

The rendering is a parameter of a task (drawn from its rng and kept in
`task.meta["format"]`), not a domain of its own: the same question has the same answer
in every rendering. Cells are written as `Table.text` gives them (numbers with their
column's fixed decimals, no thousands separators). Markdown right-aligns number columns;
HTML escapes `&`, `<`, `>` and quotes; CSV quotes only where the csv module must.

Not guaranteed: cells holding "|" or line breaks would break the Markdown table (the
generators never make them); the HTML is a bare `<table>` without styling.
"""

from __future__ import annotations

import csv
import html
import io

from posttrain.domains.table.data import Table

FORMATS = ("markdown", "html", "csv")
FORMAT_NAMES = {"markdown": "Markdown", "html": "HTML", "csv": "CSV"}


def _grid(table: Table) -> list[list[str]]:
    names = [c.name for c in table.columns]
    return [[table.text(r, name) for name in names] for r in range(len(table.rows))]


def render_markdown(table: Table) -> str:
    header = "| " + " | ".join(c.name for c in table.columns) + " |"
    rule = "|" + "|".join("---:" if c.kind == "number" else "---" for c in table.columns) + "|"
    body = ["| " + " | ".join(row) + " |" for row in _grid(table)]
    return "\n".join([header, rule, *body])


def render_html(table: Table) -> str:
    def cells(tag: str, values: list[str]) -> str:
        return "".join(f"<{tag}>{html.escape(v)}</{tag}>" for v in values)

    lines = ["<table>", "  <thead>", f"    <tr>{cells('th', [c.name for c in table.columns])}</tr>"]
    lines += ["  </thead>", "  <tbody>"]
    lines += [f"    <tr>{cells('td', row)}</tr>" for row in _grid(table)]
    lines += ["  </tbody>", "</table>"]
    return "\n".join(lines)


def render_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in table.columns])
    writer.writerows(_grid(table))
    return out.getvalue().rstrip("\n")


def render(table: Table, fmt: str) -> str:
    """The table in `fmt`, one of `FORMATS`."""
    if fmt == "markdown":
        return render_markdown(table)
    if fmt == "html":
        return render_html(table)
    if fmt == "csv":
        return render_csv(table)
    raise ValueError(f"unknown table format {fmt!r}; expected one of {FORMATS}")
