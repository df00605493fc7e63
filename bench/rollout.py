"""The rollout scheduler against the lockstep loop and a synchronous FIFO baseline.

    python bench/rollout.py [--tasks 500 --n 4 --batches 6 --batch-groups 8 --workers 8]

(a) overhead: the starter domains' references replayed (`ReplayEngine`, no sandbox)
    through `Scheduler.run`, every batch recorded in a real `TraceStore` (SQLite WAL,
    synchronous=FULL) — episodes/s, and ms per episode over the same episodes through
    the lockstep `run_episodes` with the same store.
(b) long tail: a tool domain whose tool call takes a heavy-tailed time (5 ms ×
    difficulty × Pareto(α=1.3), capped at 100×), `--workers` tool calls at a time in
    both arms. FIFO: each batch of `--batch-groups` groups is submitted and waited for
    whole (`order="fifo"`). Ours: longest-first with aging, twice the batch in flight,
    each batch the first `--batch-groups` groups to finish; the rest carry on. Both arms
    complete the same `--batches` × `--batch-groups` groups; ours reports the
    staleness (policy versions) of what it trained on and the groups left in flight.
(c) the real HF engine (`--hf-model`: the untrained tiny model, or a trained checkpoint
    such as the SFT stage of `recipes/tool-grpo-tiny.yaml` with `sft.max_steps=600`,
    which calls the calculator) sampling addition and calculator tasks: the same two
    arms. An untrained model writes every turn to the budget and never calls a tool.
(d) multi-turn prefix-cache reuse vs re-encoding the history (`bench/prefix_reuse.py`'s
    `measure`, 8 four-turn episodes, greedy, `--prefix-model`).
(e) the Ray backend: (a)'s episodes on 2 local Ray workers (`bench/rollout_ray.py`).

Same threads (OMP 1, torch 1) and concurrency for both arms, printed with each row;
before the first arm is timed, (a) replays one chunk and (b), (c) run one batch
untimed, so the arm timed first does not pay alone for the process's first calls. The
last line is a JSON object.

Not guaranteed: the figures move with other jobs on the cores; (b) sleeps, so it
measures scheduling, not compute.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from posttrain.domains import STARTER_DOMAINS, get_domain  # noqa: E402
from posttrain.domains.calculator import CalculatorDomain, CalculatorSession  # noqa: E402
from posttrain.engines import ReplayEngine, SamplingParams  # noqa: E402
from posttrain.rollout.episode import run_episodes  # noqa: E402
from posttrain.rollout.scheduler import Scheduler, SchedulerConfig  # noqa: E402
from posttrain.store.traces import TraceStore  # noqa: E402
from posttrain.types import Observation, Task, ToolCall  # noqa: E402

REPLAY = SamplingParams(max_tokens=256, temperature=0.0)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---- (a) overhead ---------------------------------------------------------------------------


def overhead(tokenizer: Any, n_tasks: int, n: int, chunk: int = 64) -> dict[str, float]:
    tasks = [
        get_domain(STARTER_DOMAINS[i % len(STARTER_DOMAINS)]).generate(i, 1 + i % 10)
        for i in range(n_tasks)
    ]
    engine = ReplayEngine(tokenizer)
    for task in tasks:
        engine.add(task.id, get_domain(task.domain).reference(task))
    params = SamplingParams(max_tokens=256, temperature=0.0, n=n)
    episodes = n_tasks * n
    # Untimed: the first pass in a process pays for lazy imports and caches (verifiers,
    # tokenizer); without it the lockstep arm, timed first, paid alone.
    run_episodes(tasks[:chunk], engine, tokenizer, params, get_domain)
    with tempfile.TemporaryDirectory() as tmp:
        with TraceStore(Path(tmp) / "lockstep.sqlite") as store:
            start = time.perf_counter()
            for i in range(0, n_tasks, chunk):
                groups = run_episodes(tasks[i : i + chunk], engine, tokenizer, params, get_domain)
                store.record([r for g in groups for r in g], stage="bench")
            lockstep_s = time.perf_counter() - start
        with TraceStore(Path(tmp) / "scheduled.sqlite") as store:
            cfg = SchedulerConfig(engine_slots=256)
            with Scheduler(engine, tokenizer, get_domain, params, cfg) as sched:
                start = time.perf_counter()
                for i in range(0, n_tasks, chunk):
                    groups = sched.run(tasks[i : i + chunk])
                    store.record([r for g in groups for r in g], stage="bench")
                scheduled_s = time.perf_counter() - start
            stored = store.count()
    assert stored == episodes, f"{stored} of {episodes} rollouts stored"
    row = {
        "episodes": float(episodes),
        "episodes_per_s": episodes / scheduled_s,
        "lockstep_episodes_per_s": episodes / lockstep_s,
        "overhead_ms": 1000 * (scheduled_s - lockstep_s) / episodes,
    }
    log(f"(a) {episodes} replayed episodes, trace store on, chunks of {chunk} tasks × n={n}:")
    log(f"    scheduler {row['episodes_per_s']:.0f} episodes/s, lockstep "
        f"{row['lockstep_episodes_per_s']:.0f}/s, overhead {row['overhead_ms']:.3f} ms/episode")  # fmt: skip
    return row


# ---- (b) long tail --------------------------------------------------------------------------


class SlowToolSession(CalculatorSession):
    """The calculator, each call taking a heavy-tailed time fixed by the task's seed."""

    def call(self, tool_call: ToolCall) -> Observation:
        rng = random.Random(f"{self.task.seed}:{len(self.calls)}")
        time.sleep(0.005 * self.task.difficulty * min(100.0, rng.paretovariate(1.3)))
        return super().call(tool_call)


class SlowToolDomain(CalculatorDomain):
    id = "bench/slow-tool-v1"

    def generate(self, seed: int, difficulty: int) -> Task:
        task = super().generate(seed, difficulty)
        task.id = task.id.replace(CalculatorDomain.id, self.id)
        task.domain = self.id
        return task

    def open(self, task: Task, sandbox: object | None = None) -> CalculatorSession:
        return SlowToolSession(task)


def arms(
    make_tasks: Any,
    engine: Any,
    tokenizer: Any,
    params: SamplingParams,
    get: Any,
    batches: int,
    per_batch: int,
    workers: int,
    max_context: int | None = None,
    extra: int | None = None,
) -> dict[str, float]:
    """Total time for `batches` batches of `per_batch` groups: FIFO vs ours, which keeps
    `extra` (default `per_batch`) more groups in flight."""
    extra = per_batch if extra is None else extra
    tasks = make_tasks()
    if len(tasks) < batches * per_batch + extra + per_batch:
        raise ValueError(
            f"arms: {len(tasks)} tasks are too few for {batches} batches of {per_batch}"
        )
    stream = iter(tasks)
    common: dict[str, Any] = {"env_workers": workers, "verify_workers": 2, "engine_slots": 64}
    fifo = SchedulerConfig(order="fifo", **common)
    # One untimed batch from the end of the list (no arm reaches it), so that the first
    # arm does not pay alone for the process's first engine calls and imports.
    with Scheduler(engine, tokenizer, get, params, fifo, max_context=max_context) as sched:
        sched.run(tasks[-per_batch:])
    with Scheduler(engine, tokenizer, get, params, fifo, max_context=max_context) as sched:
        start = time.perf_counter()
        for _ in range(batches):
            sched.run([next(stream) for _ in range(per_batch)])
        fifo_s = time.perf_counter() - start
    stream = iter(make_tasks())
    ours = SchedulerConfig(order="longest_first", **common)
    staleness: list[float] = []
    with Scheduler(engine, tokenizer, get, params, ours, max_context=max_context) as sched:
        start = time.perf_counter()
        for version in range(batches):
            sched.set_policy_version(version)
            sched.submit([next(stream) for _ in range(per_batch + extra - sched.inflight)])
            for group in sched.collect(per_batch):
                staleness += [r.timings["staleness"] for r in group]
        ours_s = time.perf_counter() - start
        left = sched.inflight
    return {
        "fifo_s": fifo_s,
        "ours_s": ours_s,
        "ratio_vs_fifo": ours_s / fifo_s,
        "staleness_mean": sum(staleness) / len(staleness),
        "staleness_max": max(staleness),
        "carried_groups": float(left),
    }


def long_tail(tokenizer: Any, batches: int, per_batch: int, workers: int) -> dict[str, float]:
    domain = SlowToolDomain()

    def make_tasks() -> list[Task]:
        return [domain.generate(seed, 1 + seed % 10) for seed in range(batches * per_batch * 3)]

    engine = ReplayEngine(tokenizer)
    for task in make_tasks():
        engine.add(task.id, domain.reference(task))
    row = arms(make_tasks, engine, tokenizer, REPLAY, lambda _: domain, batches, per_batch, workers)
    log(f"(b) long tail: {batches} batches × {per_batch} groups, {workers} tool calls at a time:"
        f" FIFO {row['fifo_s']:.2f} s, ours {row['ours_s']:.2f} s, ratio {row['ratio_vs_fifo']:.2f},"
        f" staleness mean {row['staleness_mean']:.2f} max {row['staleness_max']:.0f},"
        f" {row['carried_groups']:.0f} groups carried")  # fmt: skip
    return row


# ---- (c) the HF engine ----------------------------------------------------------------------


def hf_mixed(batches: int, per_batch: int, workers: int, model_name: str) -> dict[str, float]:
    from posttrain.engines import HFEngine
    from posttrain.models.loading import load_policy

    torch.set_num_threads(1)
    policy = load_policy(model_name, seed=0)
    model, tokenizer = policy.model.eval(), policy.tokenizer
    engine = HFEngine(model, tokenizer, seed=0)
    names = ["arith/addition-v1", "tools/calculator-v1"]

    def make_tasks() -> list[Task]:
        return [
            get_domain(names[s % 2]).generate(s, 1 + s % 10) for s in range(batches * per_batch * 3)
        ]

    params = SamplingParams(max_tokens=80, temperature=1.0, n=4)
    row = arms(
        make_tasks, engine, tokenizer, params, get_domain, batches, per_batch, workers,
        extra=max(1, per_batch // 4),
    )  # fmt: skip
    log(f"(c) HF engine, {model_name}, addition + calculator, n=4, 80 tokens/turn: FIFO "
        f"{row['fifo_s']:.2f} s, ours {row['ours_s']:.2f} s, ratio {row['ratio_vs_fifo']:.2f}")  # fmt: skip
    return row


def ray_row(tokenizer: Any, n_tasks: int, n: int) -> float:
    """(e): the same replayed episodes as (a) on 2 Ray workers (`bench/rollout_ray.py`)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from rollout_ray import ray_throughput

    log(f"(e) Ray backend, 2 workers, chunks of 8 groups, {n_tasks * n} replayed episodes:")
    return ray_throughput(tokenizer, n_tasks, n)


def prefix_reuse(model: str) -> float:
    """(d): 8 four-turn episodes, greedy, `bench/prefix_reuse.py`'s settings."""
    sys.path.insert(0, str(Path(__file__).parent))
    from prefix_reuse import measure

    settings = argparse.Namespace(
        episodes=8, turns=4, prompt_tokens=400, sample_tokens=32, env_tokens=64, repeats=1
    )
    log(f"(d) multi-turn prefix reuse, {model}, 8 episodes × 4 turns (bench/prefix_reuse.py):")
    return measure(model, settings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--batch-groups", type=int, default=8)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--skip-hf", action="store_true")
    parser.add_argument(
        "--hf-model", default="tiny", help="(c)'s model: tiny (untrained) or a model directory"
    )
    parser.add_argument("--skip-prefix", action="store_true")
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--prefix-model", default="tiny", help="tiny or smollm2-135m")
    args = parser.parse_args()
    from posttrain.models.tiny import build_tokenizer

    torch.set_num_threads(1)
    log(f"threads: OMP {os.environ['OMP_NUM_THREADS']}, torch {torch.get_num_threads()}")
    tokenizer = build_tokenizer()
    a = overhead(tokenizer, args.tasks, args.n)
    b = long_tail(tokenizer, args.batches, args.batch_groups, args.workers)
    c = None
    if not args.skip_hf:
        c = hf_mixed(args.batches, args.batch_groups, args.workers, args.hf_model)
    d = None if args.skip_prefix else prefix_reuse(args.prefix_model)
    e = None if args.skip_ray else ray_row(tokenizer, args.tasks, args.n)
    result = {
        "episodes_per_s": round(a["episodes_per_s"], 1),
        "overhead_ms": round(a["overhead_ms"], 4),
        "longtail_ratio_vs_fifo": round(b["ratio_vs_fifo"], 3),
        "longtail_staleness_mean": round(b["staleness_mean"], 3),
        "hf_mixed_ratio_vs_fifo": None if c is None else round(c["ratio_vs_fifo"], 3),
        "prefix_reuse_speedup": None if d is None else round(d, 3),
        "ray_episodes_per_s": None if e is None else round(e, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
