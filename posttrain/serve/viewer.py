"""The trace viewer: read-only HTML pages (and JSON) to browse the rollouts of one run.

    from posttrain.serve.viewer import create_viewer
    app = create_viewer(Path("runs/20260509-142301"))    # a FastAPI app
    uvicorn.run(app, host="127.0.0.1", port=8001)        # `posttrain view RUN` does this

Pages, all server-rendered, self-contained (no script, no external asset, works offline):

    /                  the rollouts, newest first, 100 a page, with a filter form
    /rollout/ID        one rollout: prompt, every turn (text, tool calls, observations,
                       scripted user turns, finish reason), verdict, components, timings
    /api/rollouts      the list as JSON, same filters; /api/rollouts/ID one rollout as JSON
                       (strict JSON: a NaN or an infinity in a rollout is given as null)

Link convention (the run report links here): every filter is a plain GET parameter, so
`http://127.0.0.1:8001/?domain=arith/addition-v1&passed=0` lists that domain's failures.
Parameters: `domain` (a domain id), `cell` (`modality/tools/rounds/verification`, or
`unregistered` for ids the registry does not know), `passed` (`1`, `0`, or `all`), `stage`
(`sft`, `dpo`, `grpo`, ...), `step_min` / `step_max` (bounds on the policy version, both
inclusive), `page` (from 1). `RolloutFilter(...).query_string()` builds one.

Filtering on domain, stage, passed and step runs in SQL; the cell filter maps the
store's distinct domains to cells in Python and becomes a `domain IN (...)` clause.
Rollouts recorded while the viewer runs show up on the next page load. A lone surrogate
in a stored text (UTF-8 cannot encode one) shows as `\\udXXX` in pages.

Not guaranteed: the store is opened with SQLite's `mode=ro`, so the viewer cannot change
a rollout, but SQLite may still create the `-wal`/`-shm` side files of a WAL database
next to it. The first request for a filter scans the table (about 0.2-0.4 s per 100k
rollouts on a warm cache, more from a cold disk); its count is then kept and extended
with newer rows only, which assumes the store is append-only (as `TraceStore` is).
There is no authentication: bind to 127.0.0.1 (the default) unless the network is trusted.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from posttrain.serve.trace_reader import (
    SQLITE_INT_MAX,
    FilterError,
    Listing,
    RolloutFilter,
    TraceReader,
    TraceViewerError,
    UnreadableRollout,
    cell_name,
    int_param,
    open_traces_readonly,
)
from posttrain.store.run_dir import RunDir
from posttrain.types import Message, Rollout, escape_surrogates, json_text

__all__ = [
    "FilterError",
    "RolloutFilter",
    "TraceViewerError",
    "cell_name",
    "create_viewer",
    "open_traces_readonly",
]

PAGE_SIZE = 100


class _JSONResponse(JSONResponse):  # ASCII-escaped when it holds a lone surrogate
    def render(self, content: Any) -> bytes:
        try:
            return json_text(content, allow_nan=False, separators=(",", ":")).encode()
        except ValueError:  # a NaN or an infinity (a component, a logprob): strict JSON has none
            return json_text(_finite(content), allow_nan=False, separators=(",", ":")).encode()


def _finite(value: Any) -> Any:
    """`value` with every NaN and infinity written as None (JSON null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def create_viewer(run_dir: str | Path, page_size: int = PAGE_SIZE) -> FastAPI:
    """The viewer app over `run_dir/traces.sqlite`, opened read-only.

    TraceViewerError (a ValueError) naming the path when the store is missing or unreadable.
    """
    from posttrain.domains import load_entry_points

    run = RunDir(Path(run_dir))  # not RunDir.open: that one writes (makes checkpoints/)
    if not run.path.is_dir():
        raise TraceViewerError(f"run directory {run.path} does not exist or is not a directory")
    reader = TraceReader(run.traces_path)
    # A broken plugin must not stop the viewer: its rollouts then show as unregistered.
    with suppress(RuntimeError):
        load_entry_points()
    app = FastAPI(title=f"posttrain traces: {run.name}", docs_url=None, redoc_url=None)

    def parse(request: Request) -> tuple[RolloutFilter, int]:
        params = dict(request.query_params)
        page = int_param("page", params.get("page", "").strip() or "1")
        if page is None or page < 1:
            raise FilterError(f"page must be 1 or more, got {page}")
        if (page - 1) * page_size > SQLITE_INT_MAX:
            raise FilterError(f"page is out of range, got {page}")
        return RolloutFilter.from_query(params), page

    @app.exception_handler(FilterError)
    def bad_filter(request: Request, exc: FilterError) -> Response:
        if request.url.path.startswith("/api/"):
            return _JSONResponse({"error": str(exc)}, status_code=400)
        return HTMLResponse(_message_page("Bad filter", str(exc)), status_code=400)

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> Response:
        filt, page = parse(request)
        listing = reader.listing(filt, page, page_size)
        return HTMLResponse(_list_page(run.name, filt, listing))

    # `:path`: a slash in an id is linked as %2F, which is decoded before routing.
    @app.get("/rollout/{rollout_id:path}", response_class=HTMLResponse)
    def detail(rollout_id: str, request: Request) -> Response:
        filt, _ = parse(request)
        try:
            found = reader.rollout(rollout_id)
        except UnreadableRollout as exc:
            return HTMLResponse(
                _message_page("Rollout unreadable", str(exc), filt), status_code=500
            )
        if found is None:
            text = f"no rollout with id {rollout_id!r} in run {run.name}"
            return HTMLResponse(_message_page("Rollout not found", text, filt), status_code=404)
        return HTMLResponse(_detail_page(found[1], found[0], filt))

    @app.get("/api/rollouts")
    def api_list(request: Request) -> Response:
        filt, page = parse(request)
        listing = reader.listing(filt, page, page_size)
        return _JSONResponse(asdict(listing))

    @app.get("/api/rollouts/{rollout_id:path}")
    def api_one(rollout_id: str) -> Response:
        try:
            found = reader.rollout(rollout_id)
        except UnreadableRollout as exc:
            return _JSONResponse({"error": str(exc)}, status_code=500)
        if found is None:
            return _JSONResponse({"error": f"no rollout with id {rollout_id!r}"}, status_code=404)
        return _JSONResponse({"stage": found[0], "rollout": found[1].to_dict()})

    return app


# ---- HTML -------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:.2em .5em;
text-align:left;vertical-align:top}tr.failed td.passed{color:#b00}tr.ok td.passed{color:#070}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em;margin:.2em 0}form label{margin-right:1em}
.message,.turn{border-left:3px solid #ccc;padding-left:.7em;margin:.7em 0}
.observation{border-color:#c90}input[type=number]{width:5em}.user-turn{border-color:#09c}.role{font-weight:bold}
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _page(title: str, body: str) -> str:
    return escape_surrogates(  # a lone surrogate in a stored text: UTF-8 cannot encode it
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{_CSS}</style></head><body>{body}</body></html>"
    )


def _message_page(title: str, text: str, filt: RolloutFilter | None = None) -> str:
    back = f'<p><a id="back" href="/{_e((filt or RolloutFilter()).query_string())}">back to the list</a></p>'
    return _page(title, f'<h1>{_e(title)}</h1><p id="message">{_e(text)}</p>{back}')


def _select(name: str, label: str, options: list[tuple[str, str]], chosen: str) -> str:
    opts = "".join(
        f'<option value="{_e(v)}"{" selected" if v == chosen else ""}>{_e(t)}</option>'
        for v, t in options
    )
    return f'<label>{label} <select id="{name}" name="{name}">{opts}</select></label>'


def _filter_form(filt: RolloutFilter, listing: Listing) -> str:
    q = filt.query()
    any_ = [("", "all")]
    passed = [("all", "all"), ("1", "passed"), ("0", "failed")]
    fields = [
        _select("domain", "domain", any_ + [(d, d) for d in listing.domains], q.get("domain", "")),
        _select("cell", "cell", any_ + [(c, c) for c in listing.cells], q.get("cell", "")),
        _select("passed", "passed", passed, q.get("passed", "all")),
        _select("stage", "stage", any_ + [(s, s) for s in listing.stages], q.get("stage", "")),
        f'<label>step from <input id="step_min" name="step_min" type="number" size="5" '
        f'value="{_e(q.get("step_min", ""))}"></label>',
        f'<label>to <input id="step_max" name="step_max" type="number" size="5" '
        f'value="{_e(q.get("step_max", ""))}"></label>',
        '<button id="apply" type="submit">filter</button> <a id="clear" href="/">clear</a>',
    ]
    return f'<form id="filters" method="get" action="/">{"".join(fields)}</form>'


def _list_page(run_name: str, filt: RolloutFilter, listing: Listing) -> str:
    heads = ["stage", "step", "domain", "cell", "difficulty", "reward", "passed", "reason", "error"]
    head = "".join(f"<th>{h}</th>" for h in heads)
    link_query = _e(filt.query_string())
    lines = []
    for r in listing.rows:
        cells = [
            r.stage, r.policy_version, f'<a class="open" href="/rollout/{_e(quote(r.id, safe=""))}'
            f'{link_query}">{_e(r.domain)}</a>', r.cell, r.difficulty, f"{r.reward:.3f}",
            "passed" if r.passed else "failed", r.reason, r.error,
        ]  # fmt: skip
        tds = "".join(
            f'<td class="{h}">{c if h == "domain" else _e(c)}</td>'
            for h, c in zip(heads, cells, strict=True)
        )
        status = "ok" if r.passed else "failed"
        lines.append(f'<tr class="rollout {status}" data-id="{_e(r.id)}">{tds}</tr>')
    pages = max(1, -(-listing.matching // listing.page_size))
    prev, next_ = (f"/{_e(filt.query_string(page=listing.page + d))}" for d in (-1, 1))
    pager = [
        f'<a id="prev" href="{prev}">previous</a>' if listing.page > 1 else "",
        f'page <span id="page">{listing.page}</span> of {pages}',
        f'<a id="next" href="{next_}">next</a>' if listing.page < pages else "",
    ]
    body = (
        f"<h1>Rollouts of {_e(run_name)}</h1>{_filter_form(filt, listing)}"
        f'<p id="counts"><span id="matching">{listing.matching}</span> matching of '
        f'<span id="total">{listing.total}</span> rollouts</p>'
        f'<table id="rollouts"><thead><tr>{head}</tr></thead><tbody>{"".join(lines)}</tbody>'
        f'</table><p class="pager">{" ".join(pager)}</p>'
    )
    return _page(f"rollouts of {run_name}", body)


def _message(m: Message, css: str) -> str:
    calls = _tool_calls(m.tool_calls) if m.tool_calls else ""
    name = f" ({_e(m.name)})" if m.name else ""
    return (
        f'<div class="message {css}" data-role="{_e(m.role)}"><span class="role">{_e(m.role)}'
        f"{name}</span><pre>{_e(m.content)}</pre>{calls}</div>"
    )


def _tool_calls(calls: list[Any]) -> str:
    items = "".join(
        f'<li class="tool-call">tool call <span class="tool-name">{_e(c.name)}</span>'
        f'<pre class="tool-args">{_e(json.dumps(c.arguments, ensure_ascii=False, indent=1))}</pre></li>'
        for c in calls
    )
    return f'<ul class="tool-calls">{items}</ul>'


def _table(css_id: str, values: Mapping[str, object]) -> str:
    if not values:
        return f'<p id="{css_id}">none</p>'
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in values.items())
    return f'<table id="{css_id}">{rows}</table>'


def _detail_page(r: Rollout, stage: str, filt: RolloutFilter) -> str:
    v = r.verdict
    first_assistant = next((i for i, m in enumerate(r.messages) if m.role == "assistant"), None)
    prompt = r.messages if first_assistant is None else r.messages[:first_assistant]
    turns = []
    for i, t in enumerate(r.turns, 1):
        replies = "".join(
            _message(m, "observation" if m.role == "tool" else "user-turn") for m in t.observations
        )
        turns.append(
            f'<section class="turn" data-turn="{i}"><h3>turn {i}</h3>'
            f'<pre class="assistant-text">{_e(t.text)}</pre>'
            f"{_tool_calls(t.tool_calls) if t.tool_calls else ''}{replies}"
            f'<p>finish reason: <span class="finish-reason">{_e(t.finish_reason)}</span>, '
            f"{len(t.token_ids)} tokens sampled</p></section>"
        )
    summary = [  # (label, class of its cell, value)
        ("task", "task", r.task_id), ("domain", "domain", r.domain),
        ("cell", "cell", cell_name(r.domain)), ("difficulty", "difficulty", r.difficulty),
        ("stage", "stage", stage), ("step (policy version)", "step", r.policy_version),
        ("reward", "reward", f"{v.reward:.4g}"),
        ("passed", "passed", "passed" if v.passed else "failed"), ("reason", "reason", v.reason),
        ("verifier error", "verifier-error", v.error), ("episode error", "error", r.error),
        ("tokens", "tokens", f"{len(r.prompt_ids)} prompt, {len(r.completion_ids)} completion"),
    ]  # fmt: skip
    summary_rows = "".join(
        f'<tr><th>{_e(k)}</th><td class="{css}">{_e(val)}</td></tr>' for k, css, val in summary
    )
    body = (
        f'<p><a id="back" href="/{_e(filt.query_string())}">back to the list</a></p>'
        f'<h1>Rollout <code id="rollout-id">{_e(r.id)}</code></h1>'
        f'<table id="summary">{summary_rows}</table>'
        f"<h2>Verdict components</h2>{_table('components', v.components)}"
        f"<h2>Timings (s)</h2>{_table('timings', r.timings)}"
        f'<h2>Prompt</h2><section id="prompt">{"".join(_message(m, "prompt") for m in prompt)}</section>'
        f'<h2>Turns</h2><section id="turns">{"".join(turns) or "<p>no turns</p>"}</section>'
    )
    return _page(f"rollout {r.id}", body)
