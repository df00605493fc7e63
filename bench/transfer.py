"""Breadth transfer, leave-one-family-out: does GRPO on many families help a family it never saw?

    OMP_NUM_THREADS=1 python bench/transfer.py               # the defaults, about 15-20 min
    flags: --domains ID,ID,... --heldout arith --alone num --sft-steps 600
           --grpo-steps 150 --grpo-minutes 12 --max-difficulty 4 --eval-tasks 200
           --seed 0 --out-dir runs/transfer --name NAME
           --set KEY=VALUE (repeatable: any recipe override, given to all three runs)

Three runs of the recipe (`run_recipe`), one process, one thread, into
OUT_DIR/NAME/{start,breadth,alone}:

1. start: SFT of the built-in tiny model on references of EVERY chosen domain (the
   held-out family F included, so the model knows every format) for a fixed number of
   steps (no plateau stop; the recipe keeps the best-validation weights of its checks),
   short of saturation so that GRPO has room.
2. breadth: GRPO from start's checkpoint on every chosen family except F.
3. alone: GRPO from the same checkpoint on one family only (`--alone`, one of the
   breadth families), with identical `grpo.*` settings (checked, and printed): same
   steps, wall-clock cap, batch, learning rate and sampling.

The defaults: F = arith (`arith/addition-v1`) against the numeric families num
(`num/subtract-signed-v1`), tools (`tools/calculator-v1`: products through a
calculator call) and list (`list/sort-v1`: digits in order); alone = num, the family
closest to F. Every stage and the held-out set use difficulties 1..4: over 1..10 the
tiny model after 600 SFT steps passes 0.05 of additions (no room to measure transfer
in either direction); over 1..4 about 0.25.

All three runs hold the same domain list and evaluation settings; the arms leave
families out of training through `mixture` weights of 0, not by dropping domains. So
the recipe's own held-out evaluation (greedy, `--eval-tasks` tasks per domain) scores
every checkpoint on the SAME tasks, and every training stream excludes those prompts.
start's figures are run 1's `sft` evaluation, each arm's its `grpo` evaluation; runs
2 and 3 also score start again (their `untrained` evaluation), reported as
`start_rescored_disagreements` (greedy decoding of the same weights: expect 0). A
prompt the held-out stream drew twice counts once (the first task), so n is the
number of distinct prompts (`heldout_tasks`: drawn and distinct).

Groups of held-out tasks: `heldout` (F's domains: transfer), `in_family` (every
breadth family's domains: where breadth trained) and `alone_family` (the alone
family's domains: where both arms trained). Per group: completion rates with Wilson
95% intervals, and exact McNemar tests on the paired outcomes of breadth vs start,
alone vs start and breadth vs alone (`B_vs_A`: `only_a` tasks only A passed,
`only_b` only B, `diff` = B's rate - A's).

Output: progress lines, a table, and as the last line one JSON object (also saved
as OUT_DIR/NAME/transfer.json): `heldout_family`, `breadth_families`,
`alone_family`, `groups` (domain ids), `heldout_tasks`, `rates` (checkpoint → group
→ successes, n, rate, low, high; plus `per_domain`), `tests` (group → comparison →
n, a_rate, b_rate, only_a, only_b, diff, p), `task_ids_sha256` per checkpoint,
`start_rescored_disagreements`, `training` (each run's stage stats: steps, seconds,
rewards), `grpo_families_seen` (the families each arm's GRPO logged: the check that
the mixture left the others out), `run_dirs`, `settings` (the GRPO block in full),
`wall_s`.

Not guaranteed: one seed, one SFT checkpoint and one GRPO run per arm. The tests are
paired over tasks, not over training runs: a difference says "these two checkpoints
differ on these tasks", not "the method always does this". Nine tests per run, no
multiple-comparison correction. Step budgets are equal; if the wall-clock cap stops
an arm first it gets fewer steps (`training` shows both counts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from posttrain.config import RunConfig, load_config
from posttrain.domains import get_domain
from posttrain.domains.matrix import family_of
from posttrain.eval.evaluate import EvalResult
from posttrain.eval.stats import PairedComparison, Rate, paired_compare, rate
from posttrain.train.mixture import heldout_tasks, prompt_key
from posttrain.train.recipe import RecipeResult, run_recipe

DEFAULT_DOMAINS = [
    "arith/addition-v1",
    "num/subtract-signed-v1",
    "tools/calculator-v1",
    "list/sort-v1",
]

# Identical for both arms (`--set grpo.KEY=VALUE` changes them for both).
GRPO_SETTINGS = [
    "grpo.batch_size=64",
    "grpo.group_size=8",
    "grpo.minibatch_size=64",
    "grpo.lr=3e-5",  # the best of 3e-5..5e-4 from an SFT checkpoint (docs/benchmarks.md)
    "grpo.temperature=1.0",  # at 0.5 (tried over difficulties 1..10) few groups had spread
    "grpo.adaptive_floor=0.05",  # as measured (the built-in recipe now uses 0.01)
    "grpo.adaptive_cost=false",  # as measured (the built-in recipe weighs cells by length)
]

CHECKPOINTS = ("start", "breadth", "alone")
COMPARISONS = (("start", "breadth"), ("start", "alone"), ("alone", "breadth"))
GROUPS = ("heldout", "in_family", "alone_family")


class PrintReporter:
    """The recipe's progress as plain lines, prefixed with the run's label."""

    def __init__(self, label: str, every: int = 10) -> None:
        self.label, self.every, self.current = label, every, ""

    def stage(self, name: str, total: float) -> None:
        self.current = name
        print(f"[{self.label}] {name}", flush=True)

    def update(self, done: float, stats: dict[str, float]) -> None:
        if int(done) % self.every == 0:
            keys = ("loss", "val_loss", "reward", "pass_rate", "rollout_s", "update_s")
            shown = {k: round(v, 3) for k, v in stats.items() if k in keys}
            print(f"[{self.label}] {self.current} {int(done)} {shown}", flush=True)

    def evaluated(self, result: EvalResult) -> None:
        print(f"[{self.label}] eval {result.label}: {result.overall} "
              f"({result.seconds:.0f} s)", flush=True)  # fmt: skip

    def warn(self, message: str) -> None:
        print(f"[{self.label}] warning: {message}", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--domains", default=",".join(DEFAULT_DOMAINS), help="comma-separated ids")
    p.add_argument("--heldout", default="arith", help="family F, left out of breadth's GRPO")
    p.add_argument("--alone", default="num", help="the one family the alone arm trains on")
    p.add_argument("--sft-steps", type=int, default=600, help="start checkpoint's SFT steps")
    p.add_argument("--grpo-steps", type=int, default=150, help="GRPO steps of each arm")
    p.add_argument(
        "--grpo-minutes",
        type=float,
        default=12.0,
        help="wall-clock cap of each arm (a safety stop: steps are the budget)",
    )
    p.add_argument("--max-difficulty", type=int, default=4,
                   help="every stage and the held-out tasks use difficulties 1..this")  # fmt: skip
    p.add_argument("--eval-tasks", type=int, default=200, help="held-out tasks per domain")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", default="runs/transfer")
    p.add_argument("--name", default=None, help="run directory name (default: UTC time)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a recipe override for all three runs (repeatable)")  # fmt: skip
    return p.parse_args(argv)


def split_families(domains: list[str], heldout: str, alone: str) -> tuple[list[str], list[str]]:
    """(breadth families in first-seen order, F's domain ids); SystemExit on a bad choice."""
    families = list(dict.fromkeys(family_of(d) for d in domains))
    if heldout not in families:
        raise SystemExit(f"--heldout {heldout!r} is not a family of --domains ({families})")
    breadth = [f for f in families if f != heldout]
    if not breadth:
        raise SystemExit("--domains needs at least one family besides --heldout")
    if alone not in breadth:
        raise SystemExit(f"--alone {alone!r} must be one of the breadth families {breadth}")
    return breadth, [d for d in domains if family_of(d) == heldout]


def grpo_families(run_dir: Path) -> list[str]:
    """The families GRPO drew tasks from, read back from the run's logged metrics
    (`by_family/<family>/...` keys): the check that the mixture left the others out."""
    seen: set[str] = set()
    with (run_dir / "metrics.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["stage"] == "grpo":
                seen.update(k.split("/")[1] for k in record["values"] if k.startswith("by_family/"))
    return sorted(seen)


def distinct_tasks(config: RunConfig) -> dict[str, str]:
    """Task id -> domain of the run's held-out tasks, in order, keeping the first task
    of each prompt: at low difficulty the held-out stream draws some prompts twice, and
    greedy decoding scores both copies alike, so they would count one outcome twice."""
    e = config.eval
    tasks = heldout_tasks([get_domain(d) for d in config.domains], e.tasks_per_domain,
                          e.seed_offset, e.difficulties)  # fmt: skip
    seen: set[str] = set()
    distinct = {}
    for task in tasks:
        if (key := prompt_key(task)) not in seen:
            seen.add(key)
            distinct[task.id] = task.domain
    return distinct


def outcomes(result: EvalResult, tasks: dict[str, str], domains: list[str]) -> list[bool]:
    """Pass/fail of `result` on those of `tasks` (id -> domain) from `domains`, in order."""
    return [result.passed[i] for i, domain in tasks.items() if domain in domains]


def rate_doc(r: Rate) -> dict[str, Any]:
    return {"successes": r.successes, "n": r.n, "rate": round(r.rate, 4),
            "low": round(r.low, 4), "high": round(r.high, 4)}  # fmt: skip


def comparison_doc(c: PairedComparison) -> dict[str, Any]:
    return {"n": c.n, "a_rate": round(c.a_rate, 4), "b_rate": round(c.b_rate, 4),
            "only_a": c.only_a, "only_b": c.only_b, "diff": round(c.diff, 4),
            "p": c.p_value}  # fmt: skip


def task_digest(result: EvalResult) -> str:
    return hashlib.sha256("\n".join(result.passed).encode()).hexdigest()


def disagreements(a: EvalResult, b: EvalResult) -> int:
    if list(a.passed) != list(b.passed):
        raise RuntimeError(f"{a.label} and {b.label} were scored on different tasks")
    return sum(x != y for x, y in zip(a.passed.values(), b.passed.values(), strict=True))


def print_table(doc: dict[str, Any]) -> None:
    groups = doc["groups"]
    print()
    print(f"held-out family F = {doc['heldout_family']}; breadth trains on "
          f"{', '.join(doc['breadth_families'])}; alone on {doc['alone_family']}")  # fmt: skip
    for g in GROUPS:
        print(f"  {g:13} {', '.join(groups[g])}")
    print()
    print(f"{'checkpoint':10} " + " ".join(f"{g:>26}" for g in GROUPS))
    for name in CHECKPOINTS:
        cells = []
        for g in GROUPS:
            r = doc["rates"][name][g]
            cells.append(f"{r['rate']:.3f} [{r['low']:.3f},{r['high']:.3f}] n={r['n']}")
        print(f"{name:10} " + " ".join(f"{c:>26}" for c in cells))
    print()
    domains = [d for g in ("heldout", "in_family") for d in groups[g]]
    width = max(len(d) for d in domains)
    print(f"{'domain':{width}} " + " ".join(f"{c:>8}" for c in CHECKPOINTS))
    for d in domains:
        rates = [doc["rates"][c]["per_domain"][d]["rate"] for c in CHECKPOINTS]
        print(f"{d:{width}} " + " ".join(f"{x:8.3f}" for x in rates))
    print()
    print("paired tests (exact McNemar; only a / only b: tasks only a / only b passed)")
    print(f"{'group':13} {'comparison':18} {'a -> b':>15} {'only a/b':>9} {'p':>8}")
    for g in GROUPS:
        for key, t in doc["tests"][g].items():
            change = f"{t['a_rate']:.3f} -> {t['b_rate']:.3f}"
            print(f"{g:13} {key:18} {change:>15} {t['only_a']:>4}/{t['only_b']:<4} "
                  f"{t['p']:8.3g}")  # fmt: skip
    print()


def recipes(args: argparse.Namespace, domains: list[str], breadth: list[str],
            root: Path) -> dict[str, RunConfig]:  # fmt: skip
    """The three runs' configs: start (SFT on every domain), then the two GRPO arms from
    start's checkpoint, which differ in their mixture weights only."""
    levels = "[" + ",".join(str(k) for k in range(1, args.max_difficulty + 1)) + "]"
    common = [
        f"domains=[{','.join(domains)}]",
        f"sft.max_difficulty={args.max_difficulty}",
        f"grpo.difficulties={levels}",
        f"eval.difficulties={levels}",
        f"seed={args.seed}",
        f"eval.tasks_per_domain={args.eval_tasks}",
        "eval.every_steps=0",  # no monitor evaluations during GRPO: the budget goes to training
        "dpo.enabled=false",
        "control.enabled=false",
        f"out_dir={root}",
    ]
    sft = [
        "model.name=tiny",
        "grpo.enabled=false",
        f"sft.max_steps={args.sft_steps}",
        "sft.max_minutes=600",  # the step count is the budget, not the clock
        "sft.patience=1000000",  # and no plateau stop
    ]
    grpo = GRPO_SETTINGS + [f"grpo.steps={args.grpo_steps}",
                            f"grpo.max_minutes={args.grpo_minutes}"]  # fmt: skip
    checkpoint = root / "start" / "checkpoints" / "sft"
    zeroed = {
        "breadth": [args.heldout],
        "alone": [args.heldout] + [f for f in breadth if f != args.alone],
    }
    configs = {"start": load_config(None, common + sft + args.set + ["name=start"])}
    for label, families in zeroed.items():
        mixture = "{" + ", ".join(f"{f}: 0" for f in families) + "}"
        arm = [f"model.name={checkpoint}", "sft.enabled=false", f"mixture={mixture}"]
        configs[label] = load_config(None, common + arm + grpo + args.set + [f"name={label}"])
    if configs["breadth"].grpo != configs["alone"].grpo:
        raise SystemExit("--set gave the two arms different grpo settings")
    return configs


def figures(runs: dict[str, RecipeResult], tasks: dict[str, str],
            groups: dict[str, list[str]]) -> dict[str, Any]:  # fmt: skip
    """Rates per checkpoint and group on the distinct held-out `tasks`, the paired
    tests, and the checks that pair them."""
    evals = {"start": runs["start"].evals["sft"],
             "breadth": runs["breadth"].evals["grpo"],
             "alone": runs["alone"].evals["grpo"]}  # fmt: skip
    digests = {name: task_digest(e) for name, e in evals.items()}
    if len(set(digests.values())) != 1 or not set(tasks) <= set(evals["start"].passed):
        raise RuntimeError(f"the checkpoints were scored on different tasks: {digests}")
    domains = list(dict.fromkeys(tasks.values()))

    def rate_of(e: EvalResult, ds: list[str]) -> dict[str, Any]:
        passed = outcomes(e, tasks, ds)
        return rate_doc(rate(sum(passed), len(passed)))

    rates: dict[str, Any] = {}
    for name, e in evals.items():
        rates[name] = {g: rate_of(e, ds) for g, ds in groups.items()}
        rates[name]["per_domain"] = {d: rate_of(e, [d]) for d in domains}
    tests = {
        g: {f"{b}_vs_{a}": comparison_doc(paired_compare(outcomes(evals[a], tasks, ds),
                                                   outcomes(evals[b], tasks, ds)))
            for a, b in COMPARISONS}
        for g, ds in groups.items()
    }  # fmt: skip
    rescored = {arm: disagreements(evals["start"], runs[arm].evals["untrained"])
                for arm in ("breadth", "alone")}  # fmt: skip
    drawn = {"drawn": len(evals["start"].passed), "distinct": len(tasks)}
    return {"heldout_tasks": drawn, "rates": rates, "tests": tests,
            "task_ids_sha256": digests, "start_rescored_disagreements": rescored}  # fmt: skip


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.perf_counter()
    torch.set_num_threads(1)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    domains = [d.strip() for d in args.domains.split(",") if d.strip()]
    breadth, heldout_domains = split_families(domains, args.heldout, args.alone)
    groups = {
        "heldout": heldout_domains,
        "in_family": [d for d in domains if family_of(d) != args.heldout],
        "alone_family": [d for d in domains if family_of(d) == args.alone],
    }
    root = Path(args.out_dir) / (args.name or datetime.now(UTC).strftime("%Y%m%d-%H%M%S"))
    configs = recipes(args, domains, breadth, root)
    grpo_settings = configs["breadth"].grpo.model_dump(mode="json")
    print(f"domains: {domains}; F = {args.heldout}; breadth = {breadth}; alone = {args.alone}")
    print(f"runs under {root}")
    print(f"GRPO settings of both arms: {json.dumps(grpo_settings)}", flush=True)

    runs: dict[str, RecipeResult] = {}
    for label, config in configs.items():
        t0 = time.perf_counter()
        runs[label] = run_recipe(config, PrintReporter(label))
        print(f"[{label}] done in {time.perf_counter() - t0:.0f} s: {runs[label].run_dir}",
              flush=True)  # fmt: skip
    stage = {"start": "sft", "breadth": "grpo", "alone": "grpo"}
    doc = {
        "heldout_family": args.heldout,
        "breadth_families": breadth,
        "alone_family": args.alone,
        "groups": groups,
        **figures(runs, distinct_tasks(configs["start"]), groups),
        "training": {
            label: {k: round(v, 4) for k, v in runs[label].stages[s].items()}
            for label, s in stage.items()
        },
        "grpo_families_seen": {
            arm: grpo_families(runs[arm].run_dir) for arm in ("breadth", "alone")
        },
        "run_dirs": {label: str(r.run_dir) for label, r in runs.items()},
        "settings": {
            "domains": domains,
            "seed": args.seed,
            "sft_steps": args.sft_steps,
            "max_difficulty": args.max_difficulty,
            "eval_tasks_per_domain": args.eval_tasks,
            "extra_overrides": args.set,
            "grpo": grpo_settings,
            "threads": torch.get_num_threads(),
        },
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print_table(doc)
    line = json.dumps(doc)
    (root / "transfer.json").write_text(line + "\n", encoding="utf-8")
    print(line, flush=True)
    return doc


if __name__ == "__main__":
    main()
