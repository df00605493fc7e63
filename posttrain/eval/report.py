"""The HTML reports: one self-contained page per run (`runs/<id>/report.html`) and one
per `posttrain eval` results file.

    from posttrain.eval.report import write_eval_report, write_run_report
    write_run_report(Path("runs/20260509-142301"))        # -> .../report.html
    write_eval_report(load_results("eval.json"), Path("eval.html"))

The run report reads only the run directory (`store.run_dir` names the files):
`config.yaml`, `checkpoints/*/trainer_state.json` (stage seconds), `metrics.jsonl`,
`evals/*.json`, `alerts.jsonl` and `traces.sqlite` (opened read-only). Sections: the
header (model, domains, stages and seconds), per-domain completion of every evaluated
checkpoint with Wilson 95% intervals, paired comparisons (exact McNemar, Newcombe
interval of the difference), GRPO learning curves per domain family and the
continuous held-out curve, the matrix heat map of the final evaluation, GRPO reward
histograms early vs late, throughput, alerts, and where to look at failures in the
trace viewer (`posttrain view RUN`). Every plot carries its data beside it
(`report_plots`); a missing or unreadable file is said in its section, never fatal.

Not guaranteed: paired comparisons use the tasks two results files share (by task id)
and say when that is fewer than either file holds; nothing checks that both used the
same settings. The viewer links assume the viewer's default address (127.0.0.1:8001).
Reading 100k+ GRPO rollouts takes seconds (one SQL query, rewards only).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from posttrain.eval.report_plots import (
    cell_heatmap,
    cell_order,
    domain_bars,
    esc,
    learning_curves,
    missing,
    reward_histograms,
    throughput_figure,
)
from posttrain.eval.report_run import RunFiles, load_run, stage_steps_seconds
from posttrain.eval.results import FINAL_ORDER
from posttrain.eval.stats import paired_compare, paired_difference_interval
from posttrain.store.atomic import atomic_write_text
from posttrain.store.run_dir import RunDir

TRAINING_STAGES = ("sft", "dpo", "grpo", "control")
COMPARISONS = (
    ("control", "grpo"),
    ("sft", "grpo"),
    ("sft", "dpo"),
    ("dpo", "grpo"),
    ("untrained", "sft"),
    ("untrained", "grpo"),
)  # (a, b): "b vs a"
VIEWER_URL = "http://127.0.0.1:8001/"


CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1150px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.8em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{display:inline-block;margin:.5em 1em .5em 0}figcaption{font-size:.85em;color:#555}
.missing{color:#8a5a00;background:#fff6e0;padding:.4em .6em;border-left:3px solid #e0a800}
.none{color:#2a6a2a;background:#eef8ee;padding:.4em .6em;border-left:3px solid #4a4}
code{background:#f3f3f3;padding:0 .2em}
"""


def page(title: str, sections: Sequence[str]) -> str:
    """A complete, self-contained HTML document: inline CSS, no external assets."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
        + "\n".join(sections)
        + "\n</body></html>\n"
    )


def section(section_id: str, title: str, *parts: str) -> str:
    return (
        f'<section id="{esc(section_id)}"><h2>{esc(title)}</h2>\n' + "\n".join(parts) + "</section>"
    )


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], raw: bool = False) -> str:
    """An HTML table (no header row when every header is empty); cells are escaped unless
    `raw` (then they are trusted HTML). Numbers are right-aligned; floats show 3 decimals."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    head = f"<thead><tr>{head}</tr></thead>" if any(header) else ""
    body = []
    for row in rows:
        cells = []
        for cell in row:
            if isinstance(cell, float):
                cells.append(f'<td class="num">{cell:.3f}</td>')
            elif isinstance(cell, int) and not isinstance(cell, bool):
                cells.append(f'<td class="num">{cell}</td>')
            else:
                cells.append(f"<td>{cell if raw else esc(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table>{head}<tbody>" + "".join(body) + "</tbody></table>"


class ReportError(ValueError):
    """The report cannot be written at all (no such run directory); says which."""


def write_run_report(run_dir: str | Path | RunDir) -> Path:
    """Write `report.html` of the run at `run_dir`, atomically; returns its path."""
    path = Path(run_dir)
    if not path.is_dir():
        raise ReportError(f"run directory {path} does not exist or is not a directory")
    run = RunDir(path)
    marks = (run.config_path, run.metrics_path, run.checkpoints, run.evals_dir, run.traces_path)
    if not any(p.exists() for p in marks):
        raise ReportError(
            f"{path} is not a posttrain run directory: it has none of config.yaml, "
            "metrics.jsonl, checkpoints/, evals/ or traces.sqlite"
        )
    r = load_run(run)
    sections = []
    for build in (_overview_section, _checkpoints_section, _paired_section, _curves_section, _matrix_section,
                  _rewards_section, _throughput_section, _alerts_section, _traces_section):  # fmt: skip
        try:
            sections.append(build(r))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            # A hand-edited or half-written file costs its section, not the report.
            name = build.__name__.strip("_").removesuffix("_section")
            sections.append(section(name, name, missing(f"This section failed: {exc!r}")))
    atomic_write_text(run.report_path, page(f"posttrain run {run.name}", sections))
    return run.report_path


def write_eval_report(results: dict[str, Any], path: Path, source: str = "results") -> Path:
    """Write the HTML report of one results file (`eval.results` format) to `path`,
    atomically; `source` names the file in the embedded series. Returns `path`."""
    label = str(results.get("label", "eval"))
    overall = results.get("overall") or {}
    head = [("label", label), ("model", results.get("model", "")),
            ("created", results.get("created", "")), ("seconds", results.get("seconds", "")),
            ("overall completion", _rate_text(overall)), ("mean of domains", results.get("mean", "")),
            ("mean tokens", results.get("mean_tokens", ""))]  # fmt: skip
    settings = results.get("settings") or {}
    sections = [
        f"<h1>posttrain evaluation: {esc(label)}</h1>",
        section(
            "overview",
            "Overview",
            table(["", ""], head),
            table(["setting", "value"], [(k, json.dumps(v)) for k, v in settings.items()])
            if settings
            else missing("No settings recorded."),
        ),
        section(
            "domains",
            "Per-domain completion (greedy, Wilson 95%)",
            domain_bars("eval-domains", {label: results}, {label: source}),
            _domain_table(results),
        ),
        section("matrix", "Matrix cells", *_cell_parts(results, source, label, "eval-matrix")),
        section("pass-at-k", "pass@k", _pass_at_k_text(results)),
    ]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, page(f"posttrain eval {label}", sections))
    return path


# ---- sections -----------------------------------------------------------------------


def _overview_section(r: RunFiles) -> str:
    run = RunDir(r.path)
    model = r.config.get("model")
    model = model.get("name") if isinstance(model, dict) else model
    domains = [str(d) for d in r.config.get("domains") or []]
    if not domains:
        domains = list(dict.fromkeys(d for doc in r.evals.values() for d in doc["per_domain"]))
    facts = [("run", run.name), ("directory", str(run.path)), ("model", model or "unknown"),
             ("domains", ", ".join(domains) or "unknown")]  # fmt: skip
    stages = []
    for stage in TRAINING_STAGES:
        rows = r.rows(stage)
        steps, seconds, how = stage_steps_seconds(run, stage, rows)
        if rows or seconds is not None:
            stages.append((stage, steps, "" if seconds is None else seconds, how))
    for label, doc in r.evals.items():
        stages.append(
            (f"eval/{label}", len(doc["tasks"]), doc.get("seconds", ""), f"evals/{label}.json")
        )
    parts = [table(["", ""], facts)]
    if "config" in r.notes:
        parts.append(missing(r.notes["config"]))
    parts.append(
        table(["stage", "steps / tasks", "seconds", "from"], stages)
        if stages
        else missing("No stage ran: nothing was logged or evaluated.")
    )
    return f"<h1>posttrain run {esc(run.name)}</h1>\n" + section("overview", "Overview", *parts)


def _checkpoints_section(r: RunFiles) -> str:
    title = "Held-out completion per domain and checkpoint (greedy, Wilson 95%)"
    errors = [missing(e) for e in r.eval_errors]
    if not r.evals:
        return section(
            "checkpoints",
            title,
            *errors,
            missing("No held-out evaluation results (evals/*.json) in this run."),
        )
    sources = {label: f"evals/{label}.json" for label in r.evals}
    rows = [(label, _rate_text(doc["overall"]), doc["overall"].get("n", ""), doc.get("mean", ""),
             doc.get("mean_tokens", ""), _maybe((doc.get("pass_at_k") or {}).get("overall")))
            for label, doc in r.evals.items()]  # fmt: skip
    header = ["checkpoint", "completion [95%]", "n", "mean of domains", "mean tokens", "pass@k"]
    return section(
        "checkpoints",
        title,
        *errors,
        domain_bars("checkpoints", r.evals, sources),
        table(header, rows),
    )


def _paired_section(r: RunFiles) -> str:
    title = "Paired comparisons (same tasks; exact McNemar)"
    rows: list[tuple[Any, ...]] = []
    for a, b in COMPARISONS:
        if a not in r.evals or b not in r.evals:
            continue
        a_pass = {t["id"]: t["passed"] for t in r.evals[a]["tasks"]}
        b_pass = {t["id"]: t["passed"] for t in r.evals[b]["tasks"]}
        shared = [i for i in a_pass if i in b_pass]
        if not shared:
            rows.append((f"{b} vs {a}", 0, "no shared tasks", "", "", "", "", "", ""))
            continue
        cmp = paired_compare([a_pass[i] for i in shared], [b_pass[i] for i in shared])
        both = sum(1 for i in shared if a_pass[i] and b_pass[i])
        neither = cmp.n - both - cmp.only_a - cmp.only_b
        low, high = paired_difference_interval(both, cmp.only_a, cmp.only_b, neither)
        note = "" if len(shared) == len(a_pass) == len(b_pass) else " (shared tasks only)"
        rows.append((f"{b} vs {a}{note}", cmp.n, cmp.a_rate, cmp.b_rate, cmp.diff,
                     f"[{low:+.3f}, {high:+.3f}]", cmp.only_a, cmp.only_b, f"{cmp.p_value:.3g}"))  # fmt: skip
    if not rows:
        return section(
            "paired",
            title,
            missing(
                "Needs two evaluated checkpoints of a pair "
                "(GRPO vs control, GRPO vs SFT, DPO vs SFT, ...)."
            ),
        )
    header = ["comparison (b vs a)", "tasks", "rate a", "rate b", "b − a", "95% interval",
              "only a", "only b", "p (McNemar)"]  # fmt: skip
    return section("paired", title, table(header, rows))


def _curves_section(r: RunFiles) -> str:
    title = "Learning curves"
    if "metrics" in r.notes:
        return section("curves", title, missing(r.notes["metrics"]))
    stages: dict[str, list[dict[str, Any]]] = {}
    for row in r.metrics:
        stages.setdefault(str(row.get("stage")), []).append(row)
    parts = [] if "grpo" in stages else [missing("No GRPO steps in metrics.jsonl.")]
    return section("curves", title, *parts, *learning_curves(stages))


def _matrix_section(r: RunFiles) -> str:
    title = "Matrix coverage: pass rate per cell (final evaluation)"
    label = next((x for x in (*FINAL_ORDER, *r.evals) if x in r.evals), None)
    if label is None:
        return section("matrix", title, missing("No held-out evaluation results (evals/*.json)."))
    return section(
        "matrix", title, *_cell_parts(r.evals[label], f"evals/{label}.json", label, "matrix")
    )


def _cell_parts(doc: dict[str, Any], source: str, label: str, figure_id: str) -> list[str]:
    cells = doc.get("per_cell") or {}
    rows = []
    for key in cell_order(cells):
        c = cells[key]
        domains = ", ".join(c.get("domains", []))
        rows.append((key, domains, _rate_text(c["completed"]), c["completed"]["n"],
                     _maybe(c.get("pass_at_k"))))  # fmt: skip
    header = ["cell", "domains", "completion [95%]", "n", "pass@k"]
    return [cell_heatmap(figure_id, doc, source, label), table(header, rows)]


def _rewards_section(r: RunFiles) -> str:
    title = "GRPO reward distributions: early vs late steps"
    if "traces" in r.notes:
        return section("rewards", title, missing(r.notes["traces"]))
    if not r.rewards:
        return section("rewards", title, missing("traces.sqlite holds no GRPO rollouts."))
    return section("rewards", title, reward_histograms(r.rewards))


def _throughput_section(r: RunFiles) -> str:
    figure = throughput_figure(r.rows("grpo"))
    note = "No GRPO timings (rollout_s, update_s, tokens_per_s) in metrics.jsonl."
    return section("throughput", "Throughput (GRPO)", figure or missing(note))


def _alerts_section(r: RunFiles) -> str:
    note = [missing(r.notes["alerts"])] if "alerts" in r.notes else []
    if not r.alerts:
        return section("alerts", "Alerts", '<p class="none">No alerts.</p>', *note)
    keys = ["time", "stage", "step", "kind", "metric", "value", "threshold", "message"]
    rows = [[_alert_cell(a.get(k), k) for k in keys] for a in r.alerts]
    return section("alerts", f"Alerts ({len(r.alerts)})", table(keys, rows), *note)


def _traces_section(r: RunFiles) -> str:
    final = next((x for x in FINAL_ORDER if x in r.evals), None)
    per_domain = r.evals[final]["per_domain"] if final else {}
    hint = (
        f"<p>Browse every rollout: <code>posttrain view {esc(r.path)}</code>, then open "
        f"the links below (the viewer serves on <code>{esc(VIEWER_URL)}</code>).</p>"
    )
    rows = []
    for domain in dict.fromkeys([*per_domain, *r.failures]):
        done = (per_domain.get(domain) or {}).get("completed")
        failed, total = r.failures.get(domain, (0, 0))
        url = VIEWER_URL + "?" + urlencode({"domain": domain, "passed": 0})
        rows.append((esc(domain), f"{done['n'] - done['successes']} / {done['n']}" if done else "",
                     f"{failed} / {total}" if total else "",
                     f'<a href="{esc(url)}">failures of {esc(domain)}</a>'))  # fmt: skip
    parts = [hint]
    if "traces" in r.notes:
        parts.append(missing(r.notes["traces"]))
    header = ["domain", f"failed in eval/{final}" if final else "failed in evaluation",
              "failed GRPO rollouts", "trace viewer"]  # fmt: skip
    parts.append(table(header, rows, raw=True) if rows else missing("No domains to link."))
    return section("traces", "Failures and traces", *parts)


# ---- small formatting -----------------------------------------------------------------


def _domain_table(doc: dict[str, Any]) -> str:
    rows = []
    for name, d in (doc.get("per_domain") or {}).items():
        c = d.get("completed") or {}
        rows.append((name, " / ".join(d.get("cell", [])), c.get("rate", ""), c.get("low", ""),
                     c.get("high", ""), c.get("n", ""), _maybe((d.get("format") or {}).get("rate")),
                     _maybe((d.get("correct") or {}).get("rate")), d.get("mean_tokens", ""),
                     _maybe(d.get("pass_at_k"))))  # fmt: skip
    header = ["domain", "cell", "completion", "low", "high", "n", "format", "correct",
              "mean tokens", "pass@k"]  # fmt: skip
    return table(header, rows)


def _pass_at_k_text(doc: dict[str, Any]) -> str:
    p = doc.get("pass_at_k")
    if not p:
        return missing("No pass@k: the evaluation drew no extra samples (k not set).")
    rows = [("k", p.get("k", "")), ("samples per task", p.get("samples", "")),
            ("temperature", p.get("temperature", "")), ("pass@k overall", _maybe(p.get("overall")))]  # fmt: skip
    return table(["", ""], rows)


def _rate_text(rate: dict[str, Any]) -> str:
    if not rate or "rate" not in rate:
        return ""
    return f"{rate['rate']:.3f} [{rate.get('low', 0.0):.3f}, {rate.get('high', 1.0):.3f}]"


def _maybe(value: Any) -> Any:
    return "—" if value is None else value


def _alert_cell(value: Any, key: str) -> Any:
    if key == "time" and isinstance(value, int | float):
        import datetime as dt

        return dt.datetime.fromtimestamp(value, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    return "" if value is None else value
