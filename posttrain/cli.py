"""The `posttrain` command: an explicit list of subcommands, heavy modules imported lazily.

    posttrain run                      # the built-in recipe (tiny model, starter domains)
    posttrain run --smoke              # every stage on a tiny budget (< 2 minutes)
    posttrain run recipe.yaml grpo.steps=20 model.name=smollm2-135m
    posttrain domains list [--family F] [--axis modality=table] [--json]
    posttrain domains show ID          # axes; tasks at difficulty 1 and 5, the reference's verdict
    posttrain domains sample ID --n 3 --difficulty 2 [--seed 0] [--json]
    posttrain domains matrix           # domains per axis value (zeros too) and per occupied cell
    posttrain domains check [ID...] [--difficulties 1,5,10]   # the domain self-check
    posttrain sandbox doctor           # which isolation layers this machine offers, and why
    posttrain sandbox exec --timeout 5 --mem 256 -- python3 -c 'print(1)'
    posttrain sandbox bench            # warm pool vs fresh bwrap vs plain subprocess
    posttrain version

Bad input (unknown key, wrong type, impossible combination, missing recipe file,
unwritable run directory, unknown model or domain) exits with code 2 and one line
naming what was wrong.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from posttrain.domains import Domain
    from posttrain.types import Task

app = typer.Typer(
    help="Post-train language models: SFT → DPO → GRPO on verifiable tasks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
domains_app = typer.Typer(help="The domain matrix.", no_args_is_help=True)
app.add_typer(domains_app, name="domains")
sandbox_app = typer.Typer(help="Isolated execution: doctor, exec, bench.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")
console = Console()
err_console = Console(stderr=True)


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


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
    recipe = args.pop(0) if args and "=" not in args[0] else None
    overrides = (SMOKE_OVERRIDES if smoke else []) + args
    try:
        config = load_config(recipe, overrides)
    except ConfigError as exc:
        _fail(str(exc))
        return
    os.environ.setdefault("OMP_NUM_THREADS", str(config.model.threads))
    from posttrain.store import RunDirError

    console.print(f"[bold]posttrain run[/] model={config.model.name} domains={len(config.domains)}")
    reporter = _RichReporter()
    try:
        from posttrain.train.recipe import run_recipe

        with reporter.progress:
            result = run_recipe(config, reporter)
    except (ConfigError, RunDirError) as exc:
        _fail(str(exc))
        return
    _print_results(result)
    console.print(
        f"\nrun directory: [bold]{result.run_dir}[/] (summary.md, metrics.jsonl, checkpoints/)"
    )


@domains_app.command("list")
def domains_list(
    family: Annotated[
        str | None, typer.Option(help="Only this family (the id part before '/').")
    ] = None,
    axis: Annotated[
        list[str] | None,
        typer.Option(help="axis=value, e.g. modality=table; repeat to combine (AND)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="A JSON list of {id, family, axes, max_turns}.")
    ] = False,
) -> None:
    """List registered domains with their matrix cell."""
    from posttrain.domains import all_domains, load_entry_points
    from posttrain.domains.matrix import family_of, filter_domains, parse_axis_filter

    load_entry_points()
    try:
        filters = dict(parse_axis_filter(text) for text in axis or [])
        domains = filter_domains(all_domains(), family=family, axes_filters=filters)
    except ValueError as exc:
        _fail(str(exc))
        return
    if not domains:
        families = sorted({family_of(d.id) for d in all_domains()})
        err_console.print(f"no domains match (families: {', '.join(families)})", highlight=False)
    if as_json:
        rows = [
            {
                "id": d.id,
                "family": family_of(d.id),
                **dataclasses.asdict(d.axes),
                "max_turns": d.max_turns,
            }
            for d in domains
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    if not domains:
        return
    table = Table("id", "modality", "tools", "rounds", "verification")
    for d in domains:
        a = d.axes
        table.add_row(d.id, a.modality, a.tools, a.rounds, a.verification)
    console.print(table)


@domains_app.command("show")
def domains_show(
    domain_id: Annotated[str, typer.Argument(help="A registered domain id.")],
    seed: Annotated[int, typer.Option(help="Task seed.")] = 0,
) -> None:
    """The domain's axes, then a task at difficulties 1 and 5 with the reference's verdict."""
    domain = _get_domain_or_fail(domain_id)
    console.print(f"[bold]{domain.id}[/]", highlight=False)
    for name, value in {**dataclasses.asdict(domain.axes), "max_turns": domain.max_turns}.items():
        console.print(f"  {name:<13}{value}", highlight=False)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from rich.markup import escape

    from posttrain.domains.check import _replay
    from posttrain.models.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.model_max_length = 1 << 30  # a reference may be longer than the tiny model's window
    tasks = [domain.generate(seed, difficulty) for difficulty in (1, 5)]
    references = [domain.reference(task) for task in tasks]
    rollouts = _replay(domain, list(zip(tasks, references, strict=True)), tokenizer)
    for task, reference, rollout in zip(tasks, references, rollouts, strict=True):
        console.print(f"\n[bold]difficulty {task.difficulty}[/]  {task.id}", highlight=False)
        _print_prompt(task)
        calls = sum(len(turn.tool_calls) for turn in reference.turns)
        after = f" (after {calls} tool call{'s' if calls != 1 else ''})" if calls else ""
        console.print(f"  reference{after}:", highlight=False)
        _print_verbatim(reference.final, indent=4)
        v = rollout.verdict
        mark = "[green]pass[/]" if v.passed else "[red]FAIL[/]"
        why = escape(v.error or rollout.error or v.reason)
        console.print(f"  verdict: {mark}, reward {v.reward:g} — {why}", highlight=False)


@domains_app.command("sample")
def domains_sample(
    domain_id: Annotated[str, typer.Argument(help="A registered domain id.")],
    n: Annotated[int, typer.Option("--n", "-n", help="How many tasks.")] = 3,
    difficulty: Annotated[int, typer.Option(help="1..10.")] = 2,
    seed: Annotated[int, typer.Option(help="The first task's seed; seeds run seed..seed+n-1.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One Task JSON object per line.")] = False,
) -> None:
    """Generate n tasks and print each prompt and its answer."""
    if not 1 <= difficulty <= 10:
        _fail(f"--difficulty must be an integer in 1..10, got {difficulty}")
    if n < 1:
        _fail(f"--n must be at least 1, got {n}")
    domain = _get_domain_or_fail(domain_id)
    for i, task_seed in enumerate(range(seed, seed + n)):
        task = domain.generate(task_seed, difficulty)
        if as_json:
            typer.echo(task.to_json())
            continue
        if i:
            console.print()
        console.print(f"[bold]{task.id}[/]", highlight=False)
        _print_prompt(task)
        answer = task.answer if isinstance(task.answer, str) else json.dumps(task.answer)
        console.print("  answer:", highlight=False)
        _print_verbatim(answer, indent=4)


@domains_app.command("matrix")
def domains_matrix() -> None:
    """Domains per value of each axis (zeros shown), then every occupied cell."""
    from rich.columns import Columns

    from posttrain.domains import all_domains, load_entry_points
    from posttrain.domains.matrix import AXES, TOTAL_CELLS, count_by_axis, occupied_cells

    load_entry_points()
    domains = all_domains()
    tables = []
    for axis, counts in count_by_axis(domains).items():
        table = Table(axis, "domains", title=f"by {axis}")
        for value, count in counts.items():
            table.add_row(value, str(count), style=None if count else "dim")
        tables.append(table)
    console.print(Columns(tables, padding=(0, 2)))
    cells = occupied_cells(domains)
    cell_table = Table(*AXES, "domains", title="occupied cells")
    for cell, ids in cells.items():
        cell_table.add_row(*cell, ", ".join(ids))
    console.print(cell_table)
    console.print(
        f"{len(domains)} domains, {len(cells)} occupied cells of {TOTAL_CELLS} possible",
        highlight=False,
    )


def _get_domain_or_fail(domain_id: str) -> Domain:
    from posttrain.domains import get_domain, load_entry_points

    load_entry_points()
    try:
        return get_domain(domain_id)
    except KeyError as exc:
        _fail(str(exc.args[0]))  # exits
        raise


def _print_prompt(task: Task) -> None:
    console.print("  prompt:", highlight=False)
    for message in task.prompt:
        console.print(f"    {message.role}:", highlight=False)
        _print_verbatim(message.content, indent=6)


def _print_verbatim(text: str, indent: int) -> None:
    """Domain text as it is: no markup, emoji codes or wrapping (prompts hold code)."""
    lines = "\n".join(" " * indent + line for line in (text.splitlines() or [""]))
    console.print(lines, markup=False, highlight=False, emoji=False, soft_wrap=True)


@sandbox_app.command("doctor")
def sandbox_doctor() -> None:
    """Which isolation layers are active on this machine, which are missing and why."""
    from posttrain.sandbox import doctor
    from posttrain.sandbox.layers import best_mode

    table = Table("layer", "active", "detail")
    for layer in doctor():
        mark = "[green]yes[/]" if layer.active else "[red]no[/]"
        table.add_row(layer.name, mark, layer.detail)
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

    try:
        spec = SandboxSpec(isolation=isolation, memory_mb=mem, timeout_s=timeout)
        with Sandbox(spec) as sandbox:
            result = sandbox.exec(cmd, timeout=timeout)
    except (ValueError, SandboxUnavailable) as exc:
        _fail(str(exc))
        return
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    for flag, why in ((result.timed_out, f"timed out after {timeout} s"), (result.oom, "out of memory"),
                      (result.stdout_truncated or result.stderr_truncated, "output truncated")):  # fmt: skip
        if flag:
            err_console.print(f"[yellow]sandbox:[/] {why}")
    if result.error:
        err_console.print(f"[red]sandbox:[/] {result.error}")
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


@domains_app.command("check")
def domains_check(
    ids: Annotated[list[str] | None, typer.Argument(help="Domain ids (default: all).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every registered domain.")] = False,
    difficulties: Annotated[str, typer.Option(help="Comma-separated, 1..10.")] = "1,5",
    seeds: Annotated[str, typer.Option(help="Comma-separated task seeds.")] = "0,1",
) -> None:
    """Check domains against the contract: API, determinism, reference, corruptions, junk."""
    from posttrain.domains import all_domains, get_domain, load_entry_points

    load_entry_points()
    try:
        levels = [int(x) for x in difficulties.split(",") if x.strip()]
        seed_list = [int(x) for x in seeds.split(",") if x.strip()]
    except ValueError:
        _fail(
            f"--difficulties and --seeds take comma-separated integers, got {difficulties!r}, {seeds!r}"
        )
        return
    if not levels or any(not 1 <= d <= 10 for d in levels) or not seed_list:
        _fail(
            f"--difficulties must be integers in 1..10 and --seeds non-empty, got {difficulties!r}"
        )
        return
    try:
        domains = all_domains() if all_ or not ids else [get_domain(i) for i in ids]
    except KeyError as exc:
        _fail(str(exc.args[0]))
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from posttrain.domains.check import PROPERTIES, check_domains

    results = check_domains(domains, difficulties=levels, seeds=seed_list)
    table = Table("domain", "checks passed", "failed")
    by_domain: dict[str, list[Any]] = {}
    for r in results:
        by_domain.setdefault(r.domain, []).append(r)
    for name, rows in by_domain.items():
        bad = [r.property for r in rows if not r.ok]
        table.add_row(
            name,
            f"{len(rows) - len(bad)}/{len(PROPERTIES)}",
            "[red]" + ", ".join(bad) + "[/]" if bad else "[green]none[/]",
        )
    console.print(table)
    failed = [r for r in results if not r.ok]
    for r in failed:
        err_console.print(f"[red]FAIL[/] {r.domain} {r.property}: {r.detail}", highlight=False)
    console.print(
        f"{len(by_domain)} domains, {len(results) - len(failed)}/{len(results)} checks pass"
    )
    if failed:
        raise typer.Exit(code=1)


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

    def evaluated(self, result: Any) -> None:
        self.progress.update(self.task, completed=1)
        cells = "  ".join(
            f"{name.split('/')[-1]} {score.completed.rate:.2f}"
            for name, score in result.per_domain.items()
        )
        self.progress.console.print(
            f"  held-out [bold]{result.label:<10}[/] all {result.overall}   {cells}",
            highlight=False,
        )


def _print_results(result: Any) -> None:
    if not result.evals:
        return
    domains = list(next(iter(result.evals.values())).per_domain)
    table = Table(title="held-out completion rate (greedy, n, Wilson 95%)")
    table.add_column("checkpoint")
    for d in domains:
        table.add_column(d)
    table.add_column("all")
    for label, ev in result.evals.items():
        table.add_row(label, *[str(ev.per_domain[d].completed) for d in domains], str(ev.overall))
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
