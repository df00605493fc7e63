"""`posttrain domains ...` and `posttrain score`: the domain matrix from the command line.

    posttrain domains list [--family F] [--axis modality=table] [--json]
    posttrain domains show ID          # axes; tasks at difficulty 1 and 5, the reference's verdict
    posttrain domains sample ID --n 3 --difficulty 2 [--seed 0] [--json]
    posttrain domains matrix           # domains per axis value (zeros too) and per occupied cell
    posttrain domains check [ID...] [--difficulties 1,5,10]   # the domain self-check
    posttrain domains bench [ID...]    # tasks/s and verifications/s per domain
    posttrain score --domain ID completions.jsonl [--recipe R.yaml] [--json]

`posttrain.cli` mounts these; heavy modules are imported inside the commands.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from posttrain.cli_console import console, err_console, fail, plain

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from posttrain.domains import Domain
    from posttrain.types import Task

domains_app = typer.Typer(help="The domain matrix.", no_args_is_help=True)


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
    from posttrain.domains import all_domains
    from posttrain.domains.matrix import family_of, filter_domains, parse_axis_filter

    _load_plugins()
    try:
        filters = dict(parse_axis_filter(text) for text in axis or [])
        domains = filter_domains(all_domains(), family=family, axes_filters=filters)
    except ValueError as exc:
        fail(str(exc))
        return
    if not domains:
        families = sorted({family_of(d.id) for d in all_domains()})
        if family is not None and family not in families:
            fail(f"unknown family {family!r}; families: {', '.join(families)}")
            return
        err_console.print(f"no domains match (families: {plain(', '.join(families))})",
                          highlight=False)  # fmt: skip
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
        table.add_row(plain(d.id), a.modality, a.tools, a.rounds, a.verification)
    console.print(table)


@domains_app.command("show")
def domains_show(
    domain_id: Annotated[str, typer.Argument(help="A registered domain id.")],
    seed: Annotated[int, typer.Option(help="Task seed.")] = 0,
) -> None:
    """The domain's axes, then a task at difficulties 1 and 5 with the reference's verdict."""
    domain = _get_domain_or_fail(domain_id)
    console.print(f"[bold]{plain(domain.id)}[/]", highlight=False)
    for name, value in {**dataclasses.asdict(domain.axes), "max_turns": domain.max_turns}.items():
        console.print(f"  {name:<13}{value}", highlight=False)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from posttrain.domains.check import replay_solutions
    from posttrain.models.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.model_max_length = 1 << 30  # a reference may be longer than the tiny model's window
    tasks = [domain.generate(seed, difficulty) for difficulty in (1, 5)]
    references = [domain.reference(task) for task in tasks]
    rollouts = replay_solutions(domain, list(zip(tasks, references, strict=True)), tokenizer)
    for task, reference, rollout in zip(tasks, references, rollouts, strict=True):
        console.print(f"\n[bold]difficulty {task.difficulty}[/]  {plain(task.id)}", highlight=False)
        _print_prompt(task)
        calls = sum(len(turn.tool_calls) for turn in reference.turns)
        after = f" (after {calls} tool call{'s' if calls != 1 else ''})" if calls else ""
        console.print(f"  reference{after}:", highlight=False)
        _print_verbatim(reference.final, indent=4)
        v = rollout.verdict
        mark = "[green]pass[/]" if v.passed else "[red]FAIL[/]"
        why = plain(v.error or rollout.error or v.reason)
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
        fail(f"--difficulty must be an integer in 1..10, got {difficulty}")
    if n < 1:
        fail(f"--n must be at least 1, got {n}")
    domain = _get_domain_or_fail(domain_id)
    for i, task_seed in enumerate(range(seed, seed + n)):
        task = domain.generate(task_seed, difficulty)
        if as_json:
            typer.echo(task.to_json())
            continue
        if i:
            console.print()
        console.print(f"[bold]{plain(task.id)}[/]", highlight=False)
        _print_prompt(task)
        answer = task.answer if isinstance(task.answer, str) else json.dumps(task.answer)
        console.print("  answer:", highlight=False)
        _print_verbatim(answer, indent=4)


@domains_app.command("matrix")
def domains_matrix() -> None:
    """Domains per value of each axis (zeros shown), then every occupied cell."""
    from rich.columns import Columns

    from posttrain.domains import all_domains
    from posttrain.domains.matrix import AXES, TOTAL_CELLS, count_by_axis, occupied_cells

    _load_plugins()
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
        cell_table.add_row(*cell, plain(", ".join(ids)))
    console.print(cell_table)
    console.print(
        f"{len(domains)} domains, {len(cells)} occupied cells of {TOTAL_CELLS} possible",
        highlight=False,
    )


@domains_app.command("check")
def domains_check(
    ids: Annotated[list[str] | None, typer.Argument(help="Domain ids (default: all).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every registered domain.")] = False,
    difficulties: Annotated[str, typer.Option(help="Comma-separated, 1..10.")] = "1,5",
    seeds: Annotated[str, typer.Option(help="Comma-separated task seeds.")] = "0,1",
) -> None:
    """Check domains against the contract: API, determinism, reference, corruptions, junk."""
    from posttrain.domains import all_domains, get_domain

    _load_plugins()
    try:
        levels = [int(x) for x in difficulties.split(",") if x.strip()]
        seed_list = [int(x) for x in seeds.split(",") if x.strip()]
    except ValueError:
        fail(
            f"--difficulties and --seeds take comma-separated integers, got {difficulties!r}, {seeds!r}"
        )
        return
    if not levels or any(not 1 <= d <= 10 for d in levels) or not seed_list:
        fail(
            f"--difficulties must be integers in 1..10 and --seeds non-empty, got {difficulties!r}"
        )
        return
    try:
        domains = all_domains() if all_ or not ids else [get_domain(i) for i in ids]
    except KeyError as exc:
        fail(str(exc.args[0]))
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from posttrain.domains.check import PROPERTIES, check_domains

    with _progress(len(domains)) as advance:
        results = check_domains(domains, difficulties=levels, seeds=seed_list, on_domain=advance)
    table = Table("domain", "checks passed", "failed")
    by_domain: dict[str, list[Any]] = {}
    for r in results:
        by_domain.setdefault(r.domain, []).append(r)
    for name, rows in by_domain.items():
        bad = [r.property for r in rows if not r.ok]
        table.add_row(
            plain(name),
            f"{len(rows) - len(bad)}/{len(PROPERTIES)}",
            "[red]" + ", ".join(bad) + "[/]" if bad else "[green]none[/]",
        )
    console.print(table)
    failed = [r for r in results if not r.ok]
    for r in failed:
        err_console.print(f"[red]FAIL[/] {plain(r.domain)} {r.property}: {plain(r.detail)}",
                          highlight=False)  # fmt: skip
    console.print(
        f"{len(by_domain)} domains, {len(results) - len(failed)}/{len(results)} checks pass"
    )
    if failed:
        raise typer.Exit(code=1)


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[str, list[Any]], None]]:
    """A progress bar on stderr for a check of several domains; it goes when done."""
    with Progress(
        TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
        console=err_console, transient=True, disable=total < 2,
    ) as bar:  # fmt: skip
        task = bar.add_task("task hashes in two fresh processes first", total=total)

        def advance(domain: str, _results: list[Any]) -> None:
            bar.update(task, advance=1, description=domain)

        yield advance


def _load_plugins() -> None:
    """Register the entry points' domains; a broken plugin is named on stderr, and the
    command goes on without it."""
    from posttrain.domains import load_entry_points

    try:
        load_entry_points()
    except RuntimeError as exc:
        err_console.print(f"warning: skipped broken domain plugins: {exc}", markup=False)


def _get_domain_or_fail(domain_id: str) -> Domain:
    from posttrain.domains import get_domain

    _load_plugins()
    try:
        return get_domain(domain_id)
    except KeyError as exc:
        fail(str(exc.args[0]))  # exits
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


@domains_app.command("bench")
def domains_bench(
    ids: Annotated[list[str] | None, typer.Argument(help="Domain ids (default: all).")] = None,
    family: Annotated[str | None, typer.Option(help="Only this family.")] = None,
    tasks: Annotated[int, typer.Option(help="Tasks per domain per run.")] = 20,
    repeats: Annotated[int, typer.Option(help="Runs per domain; figures are medians.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="A JSON list of results.")] = False,
) -> None:
    """Tasks/s and verifications/s per domain (median of runs), with the machine's load."""
    from posttrain.domains import all_domains, get_domain
    from posttrain.domains.bench import bench_domains, machine_load
    from posttrain.domains.matrix import family_of, filter_domains

    _load_plugins()
    if tasks < 1 or repeats < 1:
        fail(f"--tasks and --repeats must be at least 1, got {tasks}, {repeats}")
    try:
        domains = [get_domain(i) for i in ids] if ids else all_domains()
    except KeyError as exc:
        fail(str(exc.args[0]))
        return
    domains = filter_domains(domains, family=family)
    if not domains:  # only a family can leave none; an empty bench would exit 0
        families = sorted({family_of(d.id) for d in all_domains()})
        known = family in families
        fail(f"no domain of family {family!r} among these ids" if known
             else f"unknown family {family!r}; families: {', '.join(families)}")  # fmt: skip
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    before = machine_load()
    if as_json:
        results = bench_domains(domains, tasks=tasks, repeats=repeats)
        typer.echo(json.dumps([dataclasses.asdict(r) for r in results], indent=2))
        return
    header = f"{'domain':<44} {'tasks/s':>10} {'verif./s':>10} {'gen ms':>8} {'verify ms':>9}"
    console.print(header, highlight=False)

    def row(r: Any) -> None:  # one line per domain as soon as it is measured
        if r.error:
            console.print(f"{r.domain:<44} FAILED: {r.error}", highlight=False, markup=False)
            return
        mark = (" (sandbox)" if r.uses_sandbox else "") + (
            "" if r.all_passed else " REFERENCES FAILED"
        )
        console.print(f"{r.domain:<44} {r.tasks_per_s:>10,.0f} {r.verifications_per_s:>10,.0f} "
                      f"{r.generate_ms_median:>8.3f} {r.verify_ms_median:>9.3f}{mark}",
                      highlight=False, markup=False)  # fmt: skip

    results = bench_domains(domains, tasks=tasks, repeats=repeats, on_result=row)
    after = machine_load()
    direct = [r for r in results if not r.uses_sandbox and not r.error]
    if direct:
        # Verifications per second over all of them: total verifications / total verify time.
        overall = len(direct) / sum(1.0 / r.verifications_per_s for r in direct)
        slowest = min(direct, key=lambda r: r.verifications_per_s)
        console.print(
            f"non-sandbox domains: {overall:,.0f} verifications/s over all {len(direct)}; "
            f"slowest {plain(slowest.domain)} at {slowest.verifications_per_s:,.0f}/s",
            highlight=False,
        )
    console.print(f"{tasks} tasks × {repeats} runs per domain; {before} before, {after} after",
                  highlight=False)  # fmt: skip
    broken = [r.domain for r in results if r.error]
    if broken:
        err_console.print(f"[red]{len(broken)} domains failed:[/] {plain(', '.join(broken))}")
        raise typer.Exit(code=1)


def score(
    completions: Annotated[
        str, typer.Argument(help="JSONL of {seed, difficulty|task|row, completion|turns}.")
    ],  # fmt: skip
    domain_id: Annotated[str, typer.Option("--domain", help="The domain to score against.")],
    recipe: Annotated[
        str | None, typer.Option(help="A recipe whose `datasets:` define the domain.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One verdict JSON object per line.")
    ] = False,  # fmt: skip
) -> None:
    """Score saved completions against a domain's verifier and print every component."""
    from posttrain.config import ConfigError, load_config
    from posttrain.domains.scoring import (
        ScoreInputError,
        read_completions,
        score_completions,
        summarize,
    )

    if recipe is not None:
        from posttrain.train.recipe_inputs import register_datasets

        try:
            register_datasets(load_config(recipe))
        except ConfigError as exc:
            fail(str(exc))
    domain = _get_domain_or_fail(domain_id)
    if Path(completions).is_dir():  # read_completions would say it "does not exist"
        fail(f"completions file {completions!r} is a directory, not a file")
    try:
        items = read_completions(completions, domain)
    except ScoreInputError as exc:
        fail(str(exc))
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    scored = score_completions(domain, items)
    if as_json:
        for s in scored:
            v = s.rollout.verdict
            row = {"line": s.line, "task_id": s.task_id, **v.to_dict(), "episode_error": s.rollout.error}  # fmt: skip
            typer.echo(json.dumps(row))
        return
    names = sorted({k for s in scored for k in s.rollout.verdict.components})
    table = Table("line", "task", "reward", "passed", *map(plain, names), "reason")
    for s in scored:
        v = s.rollout.verdict
        parts = [f"{v.components[k]:g}" if k in v.components else "" for k in names]
        why = v.error or s.rollout.error or v.reason
        table.add_row(str(s.line), plain(s.task_id), f"{v.reward:g}", "yes" if v.passed else "no",
                      *parts, plain(why), style=None if v.passed else "red")  # fmt: skip
    console.print(table)
    summary = summarize(scored)
    shown = "  ".join(f"{plain(k)} {v:.3f}" for k, v in summary.components.items())
    console.print(
        f"{summary.n} completions: passed {summary.passed}, mean reward "
        f"{summary.mean_reward:.3f}; component means: {shown}"
        + (f"; {summary.errors} verifier/episode errors" if summary.errors else ""),
        highlight=False,
    )
