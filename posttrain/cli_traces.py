"""`posttrain traces list|show`, `posttrain rescore` and `posttrain export`: a run's stored
rollouts from the command line.

    posttrain traces list runs/x --domain arith --failed --limit 20   # a table and a count
    posttrain traces show runs/x 3f2a9c                # an id or a unique prefix (>= 6 chars)
    posttrain rescore runs/x --stage grpo              # current verifiers vs stored verdicts
    posttrain export runs/x --format sft --out sft.jsonl --min-reward 1
    posttrain export runs/x --format dpo --out pairs.parquet
    posttrain export runs/x --format rl --out prompts.jsonl

`--domain` is a domain id or a family (`arith` matches `arith/...`). `rescore` prints
per-domain counts and the changed rollouts, and writes the same report to
`RUN/rescore.json`; it never changes a stored rollout (see `posttrain.eval.rescore`).
`export` writes the datasets of `posttrain.store.export` (`.jsonl` or `.parquet`);
without `--out` it writes `RUN/export-FORMAT.jsonl`. Inside the run directory `--out`
may name only a new file or an earlier export (`export-*`): the run's own files
(metrics.jsonl, alerts.jsonl, ...) are never overwritten. Every command takes `--json`
except `export`. Bad input (a missing run or trace store, an unknown id, a bad format
or suffix, an `--out` that is a file of the run, a stored row that does not read back
as a rollout, a `rescore` filter that matches no stored rollout) exits with code 2 and
one line naming it (`rescore` then leaves an earlier rescore.json alone); `rescore` and
`export` stop at such a row rather than skip it.

`traces list` prints at most 100 rows as a table unless `--limit` is given (the
count line covers every match; `--json` prints them all): rich lays a table out at
about 1,400 rows a second, so the 128k failed rollouts of a demo run took 90 s.

Not guaranteed: `traces list` orders by recording time and shows the first `--limit`
rows; `rescore` of a large run replays every multi-turn rollout, which can take minutes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.table import Column, Table

from posttrain.cli_console import console, err_console, fail, plain

if TYPE_CHECKING:
    from posttrain.store.traces import TraceStore
    from posttrain.types import Rollout

T = TypeVar("T")
traces_app = typer.Typer(help="A run's stored rollouts: list, show.", no_args_is_help=True)

RunArg = Annotated[Path, typer.Argument(help="The run directory (the one holding traces.sqlite).")]
DomainOpt = Annotated[str | None, typer.Option(help="A domain id or a family, e.g. arith.")]
StageOpt = Annotated[str | None, typer.Option(help="A stage: sft, dpo, grpo, eval/LABEL ...")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
TABLE_ROWS = 100  # rows `traces list` prints as a table without --limit (the count is of all)


@traces_app.command("list")
def traces_list(
    run: RunArg,
    domain: DomainOpt = None,
    failed: Annotated[bool, typer.Option(help="Only rollouts that did not pass.")] = False,
    stage: StageOpt = None,
    limit: Annotated[
        int | None,
        typer.Option(help=f"Show at most N rollouts (the table: {TABLE_ROWS} unless given)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Stored rollouts, in recording order: id, domain, stage, policy version, reward."""
    with _open_store(run) as store:
        rows = _call(lambda: store.query(domain, stage, True if failed else None, limit))
    if as_json:
        typer.echo(json.dumps([asdict(r) for r in rows], indent=1))
        return
    shown = rows if limit is not None else rows[:TABLE_ROWS]  # rich lays out ~1.4k rows/s
    table = Table(
        Column("id", no_wrap=True), "domain", "stage", "policy", "reward", "passed", "error"
    )
    for r in shown:
        table.add_row(plain(r.id[:12]), plain(r.domain), plain(r.stage),
                      str(r.policy_version), f"{r.reward:.3f}",
                      "yes" if r.passed else "[red]no[/]", plain(_short(r.error or "", 50)))  # fmt: skip
    console.print(table)
    passed, errors = sum(r.passed for r in rows), sum(r.error is not None for r in rows)
    console.print(f"{len(rows)} rollouts: {passed} passed, {errors} with an error", highlight=False)
    if len(shown) < len(rows):
        console.print(
            f"the table shows the first {len(shown)}: --limit N shows N, --json all of them",
            highlight=False,
        )


@traces_app.command("show")
def traces_show(
    run: RunArg,
    rollout_id: Annotated[str, typer.Argument(help="A rollout id or a unique prefix of 6+.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the rollout as JSON.")] = False,
) -> None:
    """One rollout: task, every turn with tool calls and observations, tokens, verdict."""
    from posttrain.store.export import prompt_length
    from posttrain.store.traces import MIN_PREFIX

    with _open_store(run) as store:
        rollout = _call(lambda: store.get(rollout_id))
    if rollout is None:
        short = (
            f" (a prefix needs {MIN_PREFIX}+ characters)" if len(rollout_id) < MIN_PREFIX else ""
        )
        fail(f"no rollout {rollout_id!r} in {run / 'traces.sqlite'}{short}")
        return
    if as_json:
        typer.echo(rollout.to_json())
        return
    # soft_wrap: long texts and tool arguments stay on one line each, copyable whole.
    r, out = rollout, partial(console.print, highlight=False, soft_wrap=True)
    out(f"[bold]rollout {plain(r.id)}[/]  task {plain(r.task_id)}  difficulty {r.difficulty}  "
        f"policy version {r.policy_version}")  # fmt: skip
    for m in r.messages[: prompt_length(r)]:
        out(f"[bold cyan]{m.role}:[/] {plain(m.content)}")
    for k, turn in enumerate(r.turns, start=1):
        sampled = f"{len(turn.token_ids)} tokens, {turn.finish_reason}"
        out(f"[bold]turn {k}[/] ({sampled}) [bold green]assistant:[/] {plain(turn.text)}")  # fmt: skip
        for call in turn.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False)
            out(f"  [magenta]tool call[/] {plain(call.name)}({plain(args)})")
        for obs in turn.observations:
            who = f"{obs.role}[{obs.name}]" if obs.name else obs.role
            out(f"  [yellow]{plain(who)}:[/] {plain(obs.content)}")
    n_sampled = sum(r.loss_mask)
    out(f"tokens: prompt {len(r.prompt_ids)}, completion {len(r.completion_ids)}, "
        f"sampled {n_sampled}, environment {len(r.completion_ids) - n_sampled}")  # fmt: skip
    v = r.verdict
    verdict = "[green]pass[/]" if v.passed else "[red]fail[/]"
    out(f"verdict: {verdict}, reward {v.reward:g} — {plain(v.reason)}")
    if v.components:
        out("components: " + ", ".join(f"{plain(k)} {x:g}" for k, x in v.components.items()))
    for what, error in (("verifier error", v.error), ("episode error", r.error)):
        if error:
            out(f"[red]{what}:[/] {plain(error)}")
    if r.timings:
        out("timings: " + ", ".join(f"{plain(k)} {x:.3g}" for k, x in r.timings.items()))


def rescore_command(run: RunArg, domain: DomainOpt = None, stage: StageOpt = None,
                    as_json: JsonOpt = False) -> None:  # fmt: skip
    """Verify stored rollouts again with the current verifiers; report what changed."""
    from posttrain.eval.rescore import rescore
    from posttrain.store.atomic import atomic_write_text
    from posttrain.types import json_text

    with _open_store(run) as store:
        _require_a_match(store, domain, stage)  # before rescore.json is written over
        report = rescore(_Counting(_call(lambda: store.select(domain, stage))))
    doc = {"run": str(run), "domain": domain, "stage": stage, "rescored_at": time.time(),
           **report.to_json()}  # fmt: skip
    path = run / "rescore.json"
    try:
        atomic_write_text(path, json_text(doc, indent=1) + "\n")
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    if as_json:
        typer.echo(json_text(doc, indent=1))
        return
    if not report.per_domain:
        err_console.print("no rollouts match these filters")
    table = Table("domain", "re-verified", "changed", "not re-verifiable (why)")
    for name, s in sorted(report.per_domain.items()):
        why = "; ".join(f"{n}: {reason}" for reason, n in s.not_reverifiable.items())
        table.add_row(plain(name), str(s.reverified), str(s.changed), plain(why))
    console.print(table)
    if report.changes:
        changes = Table("id", "domain", "reward old → new", "passed", "reason now")
        for c in report.changes:
            flip = f"{_yes(c.old_passed)} → {_yes(c.new_passed)}"
            changes.add_row(plain(c.id[:12]), plain(c.domain),
                            f"{c.old_reward:.3f} → {c.new_reward:.3f}",
                            flip, plain(c.new_error or c.new_reason))  # fmt: skip
        console.print(changes)
    console.print(f"{len(report.changes)} changed; report: [bold]{plain(str(path))}[/]",
                  highlight=False)  # fmt: skip


def export_command(
    run: RunArg,
    fmt: Annotated[str, typer.Option("--format", help="sft, dpo or rl.")],
    out: Annotated[Path | None, typer.Option(help="A .jsonl or .parquet file; inside RUN only a new one or an export-* one (the run's own files are never overwritten).")] = None,
    stage: StageOpt = None,
    domain: DomainOpt = None,
    min_reward: Annotated[float | None, typer.Option(help="sft/dpo: least reward kept.")] = None,
    tool_markup: Annotated[bool, typer.Option(help="Keep tool-call markup in the text instead of `tool_calls`.")] = False,
) -> None:  # fmt: skip
    """Write a Hugging Face dataset for TRL: sft (messages), dpo (pairs) or rl (prompts)."""
    from posttrain.store.export import (
        FORMATS,
        SUFFIXES,
        ExportError,
        dpo_rows,
        rl_rows,
        sft_rows,
        write_rows,
    )

    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "rl" and min_reward is not None:
        fail("--min-reward applies to sft and dpo exports, not rl")
    path = out or run / f"export-{fmt}.jsonl"
    if path.suffix not in SUFFIXES:
        fail(f"--out must end in {' or '.join(SUFFIXES)}, got {str(path)!r}")
    if _a_file_of(run, path):
        fail(f"--out {str(path)!r} is one of the run's own files; export never overwrites "
             "them: give a new file name")  # fmt: skip
    with _open_store(run) as store:
        rollouts = _Counting(_call(lambda: store.select(domain, stage)))
        if fmt == "sft":
            rows = sft_rows(rollouts, min_reward, tool_markup)
        elif fmt == "dpo":
            rows = dpo_rows(rollouts, min_reward, tool_markup)
        else:
            rows = rl_rows(rollouts)
    try:
        write_rows(rows, path)
    except ExportError as exc:
        fail(f"{exc} ({rollouts.n} rollouts read)")
        return
    unit = {"sft": "conversations", "dpo": "preference pairs", "rl": "task prompts"}[fmt]
    console.print(
        f"{len(rows)} {unit} from {rollouts.n} rollouts → [bold]{plain(str(path))}[/]",
        highlight=False,
    )


def _open_store(run: Path) -> TraceStore:
    """The run's trace store; exits with code 2 when the run or its store is missing."""
    import sqlite3

    from posttrain.store.run_dir import RunDir
    from posttrain.store.traces import TraceStore

    path = RunDir(run).traces_path
    if not run.is_dir():
        fail(f"run directory {run} does not exist or is not a directory")
    if not path.is_file():
        fail(f"{path} does not exist: no rollout was recorded in this run")
    try:
        store = TraceStore(path)
        store.count()
    except sqlite3.DatabaseError as exc:
        fail(f"{path} cannot be opened as a trace store: {exc}")
    return store


def _require_a_match(store: TraceStore, domain: str | None, stage: str | None) -> None:
    """Exit with code 2 when the filters match no stored rollout, naming them and what the
    store holds: a misspelled filter is not a report that nothing changed."""
    if (domain is None and stage is None) or _call(lambda: store.query(domain, stage, limit=1)):
        return
    given = " ".join(f"--{k} {v!r}" for k, v in (("domain", domain), ("stage", stage)) if v)
    held = "; ".join(f"{column}s: {_listed(store.distinct(column))}"
                     for column in ("domain", "stage"))  # fmt: skip
    fail(f"{given} matches no stored rollout; the store holds {held}")


def _listed(values: list[str], most: int = 20) -> str:
    shown = ", ".join(values[:most]) or "none"
    return shown if len(values) <= most else f"{shown}, ... ({len(values)} in all)"


def _call(thunk: Callable[[], T]) -> T:
    """`thunk()`, with a bad filter or an ambiguous id (ValueError) as one line, exit 2."""
    try:
        return thunk()
    except ValueError as exc:
        fail(str(exc))
        raise  # not reached: fail() exits


def _a_file_of(run: Path, path: Path) -> bool:
    """Whether `path` is an existing file inside `run` that no earlier export wrote."""
    inside = path.resolve().is_relative_to(run.resolve())
    return inside and path.exists() and not path.name.startswith("export-")


class _Counting:
    """Iterates `rollouts` once, counting them in `n`; a stored row that does not read
    back as a rollout exits with code 2, naming it."""

    def __init__(self, rollouts: Iterable[Rollout]) -> None:
        self.rollouts, self.n = rollouts, 0

    def __iter__(self) -> Iterator[Rollout]:
        from posttrain.store.traces import MalformedTraceError

        try:
            for rollout in self.rollouts:
                self.n += 1
                yield rollout
        except MalformedTraceError as exc:
            fail(str(exc))


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _yes(flag: bool) -> str:
    return "pass" if flag else "fail"
