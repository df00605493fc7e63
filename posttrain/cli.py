"""The `posttrain` command: an explicit list of subcommands, heavy modules imported lazily.

    posttrain run                      # the built-in recipe (tiny model, starter domains)
    posttrain run --smoke              # every stage on a tiny budget (< 2 minutes)
    posttrain run recipe.yaml grpo.steps=20 model.name=smollm2-135m
    posttrain domains list [--family F] [--axis modality=table] [--json]
    posttrain domains show ID          # axes; tasks at difficulty 1 and 5, the reference's verdict
    posttrain domains sample ID --n 3 --difficulty 2 [--seed 0] [--json]
    posttrain domains matrix           # domains per axis value (zeros too) and per occupied cell
    posttrain domains check [ID...] [--difficulties 1,5,10]   # the domain self-check
    posttrain domains bench [ID...]    # tasks/s and verifications/s per domain
    posttrain score --domain ID completions.jsonl   # score saved completions, per component
    posttrain eval MODEL --domains arith --n 50 [--k 4]   # completion rates, intervals, report
    posttrain compare A B              # per-domain / per-cell deltas of two evaluations
    posttrain report RUN               # (re)write the run's report.html
    posttrain serve CHECKPOINT [--port 8000] [--api-key-env VAR]   # OpenAI-compatible server
    posttrain view RUN [--port 8001]   # browse the run's rollouts (read-only)
    posttrain traces list RUN [--domain D] [--failed] [--stage S] [--limit N] [--json]
    posttrain traces show RUN ID [--json]   # one rollout: turns, tool calls, tokens, verdict
    posttrain rescore RUN [--domain D] [--stage S] [--json]   # current verifiers vs stored verdicts
    posttrain export RUN --format sft|dpo|rl [--out FILE.jsonl|.parquet] [--min-reward R]
    posttrain sandbox doctor           # which isolation layers this machine offers, and why
    posttrain sandbox exec --timeout 5 --mem 256 -- python3 -c 'print(1)'
    posttrain sandbox bench            # warm pool vs fresh bwrap vs plain subprocess
    posttrain version

`posttrain run`'s first argument is the recipe when it has no `=` or names an existing
file (`runs/lr=1e-3/r.yaml`); the others are `key.path=value` overrides.

Bad input (unknown key, wrong type, impossible combination, missing recipe file,
unwritable run directory, unknown model or domain) exits with code 2 and one line
naming what was wrong. `posttrain run` stopped by SIGTERM or SIGUSR1 saves the stage's
state at its next step boundary and exits with 128 + the signal's number (143 for
SIGTERM), printing how to resume (`train/preemption.py`).
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer
from rich.table import Table

from posttrain.cli_console import console, err_console, fail, plain
from posttrain.cli_domains import domains_app, score
from posttrain.cli_eval import compare_command, eval_command, report_command
from posttrain.cli_serve import serve
from posttrain.cli_traces import export_command, rescore_command, traces_app
from posttrain.cli_view import view

app = typer.Typer(
    help="Post-train language models: SFT → DPO → GRPO on verifiable tasks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(domains_app, name="domains")
app.command("score")(score)
app.command("eval")(eval_command)
app.command("compare")(compare_command)
app.command("report")(report_command)
app.command("serve")(serve)
app.command("view")(view)
app.add_typer(traces_app, name="traces")
app.command("rescore")(rescore_command)
app.command("export")(export_command)
sandbox_app = typer.Typer(help="Isolated execution: doctor, exec, bench.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")


@app.command()
def version() -> None:
    """Print the posttrain version."""
    from posttrain import __version__

    console.print(f"posttrain {__version__}")


@app.command(context_settings={"allow_extra_args": False})
def run(
    args: Annotated[
        list[str] | None,
        typer.Argument(help="An optional RECIPE.yaml, then overrides like grpo.steps=20."),
    ] = None,
    smoke: Annotated[bool, typer.Option(help="Every stage with a tiny budget.")] = False,
) -> None:
    """Run the recipe: SFT → DPO → GRPO with held-out evaluation and a control arm."""
    from posttrain.config import SMOKE_OVERRIDES, ConfigError, load_config

    args = list(args or [])
    recipe = args.pop(0) if args and _is_recipe(args[0]) else None
    overrides = (SMOKE_OVERRIDES if smoke else []) + args
    try:
        config = load_config(recipe, overrides)
    except ConfigError as exc:
        fail(str(exc))
        return
    os.environ.setdefault("OMP_NUM_THREADS", str(config.model.threads))
    from posttrain.store import RunDirError
    from posttrain.train.preemption import Preempted
    from posttrain.train.recipe import QuietReporter, run_recipe
    from posttrain.train.step_guard import NonFiniteGradients

    if os.environ.get("RANK", "0") != "0":  # a torchrun rank besides 0: rank 0 speaks
        try:
            run_recipe(config, QuietReporter())
        except (ConfigError, RunDirError) as exc:
            fail(str(exc))
        except Preempted as exc:
            raise typer.Exit(code=exc.exit_code) from None
        except NonFiniteGradients:  # rank 0 says what happened
            raise typer.Exit(code=1) from None
        return
    console.print(f"[bold]posttrain run[/] model={plain(config.model.name)} "
                  f"domains={len(config.domains)}")  # fmt: skip
    reporter = _RichReporter()
    try:
        with reporter.progress:
            result = run_recipe(config, reporter)
    except (ConfigError, RunDirError) as exc:
        fail(str(exc))
        return
    except Preempted as exc:  # SIGTERM / SIGUSR1 (`train/preemption.py`)
        console.print(f"[yellow]{plain(exc)}[/]")
        raise typer.Exit(code=exc.exit_code) from None
    except NonFiniteGradients as exc:  # training diverged: what happened, not a traceback
        err_console.print(f"[red]error:[/] {plain(exc)}")
        raise typer.Exit(code=1) from None
    _print_results(result)
    console.print(
        f"\nrun directory: [bold]{plain(result.run_dir)}[/] (summary.md, metrics.jsonl, "
        "checkpoints/)"
    )
    console.print(f"report: [bold]{plain(result.run_dir / 'report.html')}[/]")


def _is_recipe(first: str) -> bool:
    """Whether `posttrain run`'s first argument is the recipe: it has no `=`, or it names
    an existing file (`runs/lr=1e-3/r.yaml`), which no override does; an override is
    `key.path=value`."""
    from pathlib import Path

    return "=" not in first or Path(first).is_file()


@sandbox_app.command("doctor")
def sandbox_doctor() -> None:
    """Which isolation layers are active on this machine, which are missing and why."""
    from posttrain.sandbox import doctor
    from posttrain.sandbox.layers import best_mode

    table = Table("layer", "active", "detail")
    for layer in doctor():
        mark = "[green]yes[/]" if layer.active else "[red]no[/]"
        table.add_row(layer.name, mark, plain(layer.detail))
    console.print(table)
    mode = best_mode()
    if mode is None:
        console.print(
            "sandbox mode: [red]none available[/] — sandboxes refuse to run untrusted code"
        )
    else:
        fallback = "" if mode == "bwrap" else " (fallback: bubblewrap unavailable)"
        console.print(f"sandbox mode: [bold]{mode}[/]{fallback}")


@sandbox_app.command("exec", context_settings={"allow_interspersed_args": False})
def sandbox_exec(
    cmd: Annotated[list[str], typer.Argument(help="The command and its arguments (after --).")],
    timeout: Annotated[float, typer.Option(help="Wall-clock limit in seconds.")] = 10.0,
    mem: Annotated[int, typer.Option(help="Memory limit in MB.")] = 1024,
    isolation: Annotated[str, typer.Option(help="auto, bwrap, unshare or none.")] = "auto",
) -> None:
    """Run one command isolated, print its output, exit with its exit code."""
    import sys

    from posttrain.sandbox import Sandbox, SandboxSpec, SandboxUnavailable
    from posttrain.sandbox.results import MAX_LIMITS, check_limit, check_seconds

    try:  # the options by their names, before a sandbox starts
        check_seconds("--timeout", timeout)
        check_limit("--mem (MB)", mem, MAX_LIMITS["memory_mb"])
    except ValueError as exc:
        fail(str(exc))
        return
    try:
        spec = SandboxSpec(isolation=isolation, memory_mb=mem, timeout_s=timeout)
        with Sandbox(spec) as sandbox:
            result = sandbox.exec(cmd, timeout=timeout)
    except (ValueError, SandboxUnavailable) as exc:
        fail(str(exc))
        return
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    for flag, why in ((result.timed_out, f"timed out after {timeout} s"), (result.oom, "out of memory"),
                      (result.stdout_truncated or result.stderr_truncated, "output truncated")):  # fmt: skip
        if flag:
            err_console.print(f"[yellow]sandbox:[/] {why}")
    if result.error:
        err_console.print(f"[red]sandbox:[/] {plain(result.error)}")
    code = result.exit_code if result.exit_code >= 0 else 128 + (result.signal or 0)
    raise typer.Exit(code=124 if result.timed_out else code)


@sandbox_app.command("bench")
def sandbox_bench(
    trivial: Annotated[int, typer.Option(help="Trivial snippets per method.")] = 300,
    pytest_files: Annotated[int, typer.Option("--pytest", help="pytest files per method.")] = 60,
) -> None:
    """Warm pool vs fresh bwrap vs plain subprocess (the full run: bench/sandbox.py)."""
    from posttrain.sandbox.bench import run_bench

    run_bench(n_trivial=trivial, n_pytest=pytest_files, out=console.print)


class _RichReporter:
    """Rich progress bars, one per stage, and a table after each evaluation."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description:<22}"),
            BarColumn(),
            TextColumn("{task.completed:>6.0f}/{task.total:<6.0f}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[stats]}"),
            console=console,
        )
        self.task: Any = None

    def stage(self, name: str, total: float) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=self.progress.tasks[-1].total)
        self.task = self.progress.add_task(name, total=total, stats="")

    def update(self, done: float, stats: dict[str, float]) -> None:
        shown = "  ".join(f"{k}={v:.3g}" for k, v in list(stats.items())[:4])
        self.progress.update(self.task, completed=done, stats=shown)

    def warn(self, message: str) -> None:
        self.progress.console.print(f"[yellow]alert:[/] {plain(message)}", highlight=False)

    def evaluated(self, result: Any) -> None:
        self.progress.update(self.task, completed=1)
        cells = "  ".join(
            f"{plain(name.split('/')[-1])} {score.completed.rate:.2f}"
            for name, score in result.per_domain.items()
        )
        self.progress.console.print(
            f"  held-out [bold]{plain(f'{result.label:<10}')}[/] all {result.overall}   {cells}",
            highlight=False,
        )


def _print_results(result: Any) -> None:
    if not result.evals:
        return
    domains = list(next(iter(result.evals.values())).per_domain)
    table = Table(title="held-out completion rate (greedy, n, Wilson 95%)")
    table.add_column("checkpoint")
    for d in domains:
        table.add_column(plain(d))  # a dataset's id is the user's
    table.add_column("all")
    for label, ev in result.evals.items():
        table.add_row(
            plain(label), *[str(ev.per_domain[d].completed) for d in domains], str(ev.overall)
        )
    console.print(table)
    if result.comparisons:
        cmp_table = Table(title="paired tests on the same tasks (exact McNemar)")
        for col in ("comparison", "rate a → b", "only a", "only b", "p"):
            cmp_table.add_column(col)
        for name, c in result.comparisons.items():
            cmp_table.add_row(
                name,
                f"{c.a_rate:.3f} → {c.b_rate:.3f}",
                str(c.only_a),
                str(c.only_b),
                f"{c.p_value:.2g}",
            )
        console.print(cmp_table)
    if "dpo" in result.stages:
        s = result.stages["dpo"]
        console.print(
            f"DPO held-out preference accuracy: {s['preference_accuracy_before']:.3f} → "
            f"{s['preference_accuracy_after']:.3f} ({s['val_pairs']:.0f} pairs)"
        )
