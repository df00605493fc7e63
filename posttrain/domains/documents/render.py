"""Render a `Filing` (or one part of it) as plain text, Markdown or HTML, ids shown.

    text = render_filing(filing, "markdown")
    one = render_part(filing.sheet("IS"), "html")

The rendering is a task parameter (kept in `task.meta["format"]`), never a domain
of its own: the same question has the same answer in each. Every rendering shows
the ids citations use — a table's rows start with their id column, the header
names the periods, and each note line starts with `[N2-L01]` — so `ROW@COLUMN`
and line ids can be read off in any of the three. Negative figures print in
parentheses, blanks as `?`.

Not guaranteed: plain text pads columns to fixed widths but long labels are not
wrapped; the HTML is bare (no styles), with text escaped.
"""

from __future__ import annotations

import html as _html

from posttrain.domains.documents.filing import Filing, Part, Sheet, amount

FORMATS = ("text", "markdown", "html")
FORMAT_NAMES = {"text": "plain text", "markdown": "Markdown", "html": "HTML"}


def _escape(text: str) -> str:
    return _html.escape(text, quote=False)


def _text_sheet(sheet: Sheet) -> str:
    width = max([len("line item"), *(len(r.label) for r in sheet.rows)])
    cells = [[amount(v) for v in r.values] for r in sheet.rows]
    col = max([len(c) for c in sheet.columns] + [len(c) for row in cells for c in row]) + 1
    head = f"{'id':<6} | {'line item':<{width}} | " + " | ".join(f"{c:>{col}}" for c in sheet.columns)  # fmt: skip
    body = [
        f"{r.id:<6} | {r.label:<{width}} | " + " | ".join(f"{c:>{col}}" for c in row)
        for r, row in zip(sheet.rows, cells, strict=True)
    ]
    return "\n".join([f"[{sheet.id}] {sheet.title}", head, *body])


def _markdown_sheet(sheet: Sheet) -> str:
    head = "| id | line item | " + " | ".join(sheet.columns) + " |"
    rule = "|---|---|" + "---:|" * len(sheet.columns)
    body = [f"| {r.id} | {r.label} | " + " | ".join(amount(v) for v in r.values) + " |" for r in sheet.rows]  # fmt: skip
    return "\n".join([f"#### [{sheet.id}] {sheet.title}", "", head, rule, *body])


def _html_sheet(sheet: Sheet) -> str:
    e = _escape
    head = "<tr><th>id</th><th>line item</th>" + "".join(f"<th>{e(c)}</th>" for c in sheet.columns) + "</tr>"  # fmt: skip
    body = [
        f'<tr id="{r.id}"><td>{r.id}</td><td>{e(r.label)}</td>'
        + "".join(f"<td>{amount(v)}</td>" for v in r.values)
        + "</tr>"
        for r in sheet.rows
    ]
    return "\n".join([f'<table id="{sheet.id}">', f"<caption>[{sheet.id}] {e(sheet.title)}</caption>", head, *body, "</table>"])  # fmt: skip


def render_part(part: Part, fmt: str) -> str:
    """One table or section in `fmt`, one of `FORMATS`."""
    if isinstance(part, Sheet):
        if fmt == "text":
            return _text_sheet(part)
        if fmt == "markdown":
            return _markdown_sheet(part)
        if fmt == "html":
            return _html_sheet(part)
    else:
        ids = [part.line_id(i) for i in range(len(part.lines))]
        if fmt == "text":
            return "\n".join([f"[{part.id}] {part.title}", *(f"[{i}] {t}" for i, t in zip(ids, part.lines, strict=True))])  # fmt: skip
        if fmt == "markdown":
            return "\n".join([f"#### [{part.id}] {part.title}", "", *(f"- [{i}] {t}" for i, t in zip(ids, part.lines, strict=True))])  # fmt: skip
        if fmt == "html":
            e = _escape
            lines = [f'<p id="{i}">[{i}] {e(t)}</p>' for i, t in zip(ids, part.lines, strict=True)]
            return "\n".join([f'<section id="{part.id}">', f"<h4>[{part.id}] {e(part.title)}</h4>", *lines, "</section>"])  # fmt: skip
    raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def document_heading(index: int, count: int, title: str, fmt: str) -> str:
    words = f"Document {index} of {count}: {title}"
    if fmt == "markdown":
        return f"## {words}"
    if fmt == "html":
        return f"<h2>{_escape(words)}</h2>"
    return f"===== {words} ====="


def render_filing(filing: Filing, fmt: str) -> str:
    """Every document of the filing, parts separated by blank lines."""
    blocks = []
    count = len(filing.documents)
    for i, document in enumerate(filing.documents, 1):
        blocks.append(document_heading(i, count, document.title, fmt))
        blocks += [render_part(p, fmt) for p in document.parts]
    return "\n\n".join(blocks)


def render_sheets(sheets: list[Sheet], fmt: str) -> str:
    """Tables alone, for the table-only tasks."""
    return "\n\n".join(render_part(s, fmt) for s in sheets)
