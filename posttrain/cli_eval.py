"""`posttrain eval MODEL` and `posttrain compare A B`: completion rates with intervals,
and per-domain / per-cell deltas between two evaluations.

    posttrain eval smollm2-135m --domains arith --n 50
    posttrain eval runs/20261201-003956                 # its latest checkpoint, its own tasks
    posttrain eval openai:http://127.0.0.1:8000/v1 --domains tools --k 4 --concurrency 8
    posttrain compare runs/x:control runs/x             # or two results files
    posttrain report runs/x                             # (re)write runs/x/report.html

`eval` writes `results.json` and `report.html` into `--out` (default
`eval-results/<model>-<UTC time>/`). Bad input — an unknown domain or family, an
unreachable endpoint, a wrong model name, a malformed results file — exits with code
2 and one line saying what was wrong.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from posttrain.cli_console import console, fail, plain


def _interval(r: dict[str, Any]) -> str:
    return f"{r['rate']:.3f} [{r['low']:.3f}, {r['high']:.3f}] n={r['n']}"


def eval_command(
    model: Annotated[str, typer.Argument(help="tiny, smollm2-135m, a model dir, a run dir, or openai:URL[#model].")],
    domains: Annotated[list[str] | None, typer.Option("--domains", help="Ids, families or axis=value filters; repeat or comma-separate.")] = None,
    n: Annotated[int | None, typer.Option(help="Held-out tasks per domain (default 20, or the run's).")] = None,
    k: Annotated[int | None, typer.Option(help="pass@k from k sampled draws per task.")] = None,
    temperature: Annotated[float, typer.Option(help="Temperature of the pass@k draws.")] = 1.0,
    seed: Annotated[int, typer.Option(help="Task set (0 = the recipe's held-out set) and sampling seed.")] = 0,
    concurrency: Annotated[int, typer.Option(help="Requests in flight (openai:) / batch width.")] = 8,
    max_tokens: Annotated[int | None, typer.Option(help="Tokens per assistant turn (default 80, or the run's).")] = None,
    difficulties: Annotated[str | None, typer.Option(help="Comma-separated levels, e.g. 1,5,10.")] = None,
    api_key_env: Annotated[str, typer.Option(help="Environment variable holding the API key.")] = "OPENAI_API_KEY",
    out: Annotated[Path | None, typer.Option(help="Directory for results.json and report.html.")] = None,
) -> None:  # fmt: skip
    """Completion rate per domain and per matrix cell (Wilson 95%), pass@k, mean tokens."""
    from posttrain.eval.model_eval import EvalSpec, run_eval

    selectors = [s for item in domains or [] for s in item.split(",") if s.strip()]
    try:
        levels = [int(x) for x in difficulties.split(",")] if difficulties else None
    except ValueError:
        fail(f"--difficulties must be comma-separated integers, got {difficulties!r}")
        return
    spec = EvalSpec(model, selectors, n, k, None, temperature, seed, concurrency, max_tokens,
                    levels, api_key_env)  # fmt: skip
    if out is not None and out.exists() and not out.is_dir():  # before the evaluation runs
        fail(f"--out {out} is a file; give a folder for results.json and report.html")
        return
    try:
        doc = run_eval(spec)
    except Exception as exc:
        if not _user_error(exc):
            raise
        fail(str(exc))
        return
    out_dir = out or Path("eval-results") / f"{_slug(model)}-{_stamp()}"
    from posttrain.eval.report import write_eval_report
    from posttrain.eval.results import save_results

    results_path = save_results(out_dir / "results.json", doc)
    report_path = write_eval_report(doc, out_dir / "report.html", source=results_path.name)
    _print_eval(doc)
    console.print(f"results: [bold]{plain(results_path)}[/]\nreport: [bold]{plain(report_path)}[/]")


def compare_command(
    a: Annotated[str, typer.Argument(help="Baseline: a results file, a run dir, or RUN:LABEL.")],
    b: Annotated[str, typer.Argument(help="Candidate, the same kinds.")],
    alpha: Annotated[float, typer.Option(help="Significance level of the flag.")] = 0.05,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Per-domain and per-cell deltas (B − A) with paired 95% intervals and McNemar p."""
    from posttrain.eval.compare import compare_results, load_side
    from posttrain.eval.results import ResultsFileError

    if not 0 < alpha < 1:  # NaN too; 1 or more would flag every row, 0 or less none
        fail(f"--alpha must be in (0, 1), got {alpha:g}")
        return
    try:
        cmp = compare_results(load_side(a), load_side(b), alpha)
    except ResultsFileError as exc:
        fail(str(exc))
        return
    if as_json:
        print(json.dumps(cmp.to_json(), indent=1))
        return
    table = Table(
        title=f"{plain(cmp.b_label)} vs {plain(cmp.a_label)} on {cmp.shared} shared tasks"
    )
    for col in ("scope", "name", "n", "A", "B", "Δ (B−A) [95%]", "only A", "only B", "p", ""):
        table.add_column(col)
    for r in cmp.rows:
        flag = "[bold green]▲ significant[/]" if r.significant and r.delta > 0 else (
            "[bold red]▼ significant[/]" if r.significant else "")  # fmt: skip
        table.add_row(r.scope, plain(r.name), str(r.n), f"{r.a_rate:.3f}", f"{r.b_rate:.3f}",
                      f"{r.delta:+.3f} [{r.low:+.3f}, {r.high:+.3f}]", str(r.only_a),
                      str(r.only_b), f"{r.p_value:.2g}", flag)  # fmt: skip
    console.print(table)
    if cmp.only_in_a or cmp.only_in_b:
        console.print(f"not compared: {cmp.only_in_a} tasks only in A, {cmp.only_in_b} only in B")


def report_command(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
) -> None:
    """(Re)write a run's report.html from its files (runs while training, too)."""
    from posttrain.eval.report import ReportError, write_run_report

    try:
        path = write_run_report(run)
    except ReportError as exc:
        fail(str(exc))
        return
    console.print(f"report: [bold]{plain(path)}[/]")


def _print_eval(doc: dict[str, Any]) -> None:
    has_k = doc.get("pass_at_k") is not None
    k = doc["pass_at_k"]["k"] if has_k else None
    table = Table(title=f"{plain(doc['model'])}: completion rate (greedy, Wilson 95%)")
    for col in ("domain", "cell", "completed", "mean tokens", *([f"pass@{k}"] if has_k else [])):
        table.add_column(col)
    for name, d in doc["per_domain"].items():
        extra = [f"{d['pass_at_k']:.3f}"] if has_k and d["pass_at_k"] is not None else []
        table.add_row(plain(name), "/".join(d["cell"]), _interval(d["completed"]),
                      f"{d['mean_tokens']:.1f}", *extra)  # fmt: skip
    console.print(table)
    cells = Table(title="per matrix cell (modality/tools/rounds/verification)")
    for col in ("cell", "domains", "completed", *([f"pass@{k}"] if has_k else [])):
        cells.add_column(col)
    for name, c in doc["per_cell"].items():
        extra = [f"{c['pass_at_k']:.3f}"] if has_k and c["pass_at_k"] is not None else []
        cells.add_row(name, str(len(c["domains"])), _interval(c["completed"]), *extra)
    console.print(cells)
    overall = f"all: {_interval(doc['overall'])}; mean tokens {doc['mean_tokens']:.1f}"
    if has_k:
        overall += f"; pass@{k} {doc['pass_at_k']['overall']:.3f}"
    console.print(overall)


def _user_error(exc: Exception) -> bool:
    """Errors that are the user's input or environment, printed as one line."""
    from posttrain.engines.openai import EndpointError
    from posttrain.eval.model_eval import EvalSpecError
    from posttrain.models.loading import ModelNotFoundError
    from posttrain.serve import CheckpointNotFoundError

    return isinstance(
        exc, EvalSpecError | EndpointError | CheckpointNotFoundError | ModelNotFoundError
    )


def _slug(model: str) -> str:
    """The folder name's model part: a path's last part (`runs/x` → `x`), and for
    `openai:URL[#model]` the endpoint's host and port and the model (`openai-127.0.0.1-8000-tiny`;
    a URL's last path part, `v1`, would name every endpoint alike)."""
    if model.startswith("openai:"):
        url, _, served = model.removeprefix("openai:").partition("#")
        host = url.split("://", 1)[-1].split("/", 1)[0].replace(":", "-")
        name = "-".join(part for part in ("openai", host, served) if part)
    else:
        name = model.rstrip("/").split("/")[-1] or model
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)[:60]


def _stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
