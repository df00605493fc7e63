"""The `posttrain` command: an explicit list of subcommands, heavy modules imported lazily.

    posttrain run                      # the built-in recipe (tiny model, starter domains)
    posttrain run --smoke              # every stage on a tiny budget (< 2 minutes)
    posttrain run recipe.yaml grpo.steps=20 model.name=smollm2-135m
    posttrain domains list
    posttrain version

Bad input (unknown key, wrong type, impossible combination, missing recipe file,
unwritable run directory, unknown model or domain) exits with code 2 and one line
naming what was wrong.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="Post-train language models: SFT → DPO → GRPO on verifiable tasks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
domains_app = typer.Typer(help="The domain matrix.", no_args_is_help=True)
app.add_typer(domains_app, name="domains")
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
def domains_list() -> None:
    """List registered domains with their matrix cell."""
    from posttrain.domains import domain_ids, get_domain, load_entry_points

    load_entry_points()
    table = Table("id", "modality", "tools", "rounds", "verification")
    for name in domain_ids():
        a = get_domain(name).axes
        table.add_row(name, a.modality, a.tools, a.rounds, a.verification)
    console.print(table)


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
