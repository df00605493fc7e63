"""The Ray backend's throughput against the lockstep loop, on replayed references.

    python bench/rollout_ray.py [--tasks 500 --n 4 --workers 2 --chunk 8]

The starter domains' references (`ReplayEngine`, no sandbox) run through `RayRollouts`
(`--workers` actors, chunks of `--chunk` groups, every group collected by `run`) and,
as the baseline in the same run, through the lockstep `run_episodes` in this process.
Episodes/s is timed from the first submit to the last group collected: starting Ray
and the actors is timed apart (`ray_start_s`, `actors_start_s`). `ray_throughput` is
the function `bench/rollout.py` calls for its `ray_episodes_per_s`. The last line
printed is a JSON object.

Not guaranteed: the figures move with other jobs on the cores; replay costs almost
nothing, so this measures the backend's overhead (pickling, actor calls, the gathering
thread), not inference; with 2 cores the workers and the driver share them.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import ray  # noqa: E402

from posttrain.domains import STARTER_DOMAINS, get_domain  # noqa: E402
from posttrain.engines import ReplayEngine, SamplingParams  # noqa: E402
from posttrain.rollout.backends.ray_backend import RayRollouts, ensure_ray  # noqa: E402
from posttrain.rollout.episode import run_episodes  # noqa: E402
from posttrain.types import Task  # noqa: E402


def starter_tasks(n_tasks: int) -> list[Task]:
    """The starter domains in turn, seed i, difficulty 1 + i % 10 (as `bench/rollout.py`)."""
    return [
        get_domain(STARTER_DOMAINS[i % len(STARTER_DOMAINS)]).generate(i, 1 + i % 10)
        for i in range(n_tasks)
    ]


def replay_factory(tokenizer: Any, tasks: list[Task]) -> Any:
    """A picklable zero-arg factory of a `ReplayEngine` playing the tasks' references."""
    scripts = {t.id: [m.content for m in get_domain(t.domain).reference(t).turns] for t in tasks}
    return functools.partial(ReplayEngine, tokenizer, scripts)


def ray_throughput(tokenizer: Any, n_tasks: int, n: int, workers: int = 2, chunk: int = 8) -> float:
    """Episodes/s of `RayRollouts` replaying `n_tasks` starter tasks × `n` samples, from
    the first submit to the last group; starts (and then stops) a local Ray if none runs."""
    return _measure(tokenizer, n_tasks, n, workers, chunk)["ray_episodes_per_s"]


def _measure(tokenizer: Any, n_tasks: int, n: int, workers: int, chunk: int) -> dict[str, float]:
    tasks = starter_tasks(n_tasks)
    params = SamplingParams(max_tokens=256, temperature=0.0, n=n)
    start = time.perf_counter()
    started = ensure_ray()
    row = {"ray_start_s": time.perf_counter() - start}
    try:
        start = time.perf_counter()
        factory = replay_factory(tokenizer, tasks)
        with RayRollouts(
            factory, tokenizer, get_domain, params, workers=workers, chunk_groups=chunk
        ) as rollouts:
            row["actors_start_s"] = time.perf_counter() - start
            start = time.perf_counter()
            groups = rollouts.run(tasks)
            elapsed = time.perf_counter() - start
            metrics = rollouts.metrics()
    finally:
        if started:
            ray.shutdown()
    passed = sum(r.verdict.passed for g in groups for r in g)
    assert passed == n_tasks * n, f"{passed} of {n_tasks * n} replayed episodes passed"
    row["ray_episodes_per_s"] = n_tasks * n / elapsed
    row["ray_restarts"] = metrics["ray/restarts"]
    return row


def lockstep_throughput(tokenizer: Any, n_tasks: int, n: int, chunk: int) -> float:
    """The baseline: the same episodes through `run_episodes` in this process."""
    tasks = starter_tasks(n_tasks)
    engine = replay_factory(tokenizer, tasks)()
    params = SamplingParams(max_tokens=256, temperature=0.0, n=n)
    start = time.perf_counter()
    for i in range(0, n_tasks, chunk):
        run_episodes(tasks[i : i + chunk], engine, tokenizer, params, get_domain)
    return n_tasks * n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=8)
    args = parser.parse_args()
    from posttrain.models.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    row = _measure(tokenizer, args.tasks, args.n, args.workers, args.chunk)
    row["lockstep_episodes_per_s"] = lockstep_throughput(tokenizer, args.tasks, args.n, args.chunk)
    row["ratio_vs_lockstep"] = row["ray_episodes_per_s"] / row["lockstep_episodes_per_s"]
    episodes = args.tasks * args.n
    print(
        f"{episodes} replayed episodes, {args.workers} workers, chunks of {args.chunk}: "
        f"Ray {row['ray_episodes_per_s']:.0f} episodes/s, lockstep in-process "
        f"{row['lockstep_episodes_per_s']:.0f}/s (×{row['ratio_vs_lockstep']:.2f}); "
        f"Ray start {row['ray_start_s']:.1f} s, actors {row['actors_start_s']:.1f} s",
        file=sys.stderr,
    )
    print(json.dumps({**row, "tasks": args.tasks, "n": args.n, "workers": args.workers}))


if __name__ == "__main__":
    main()
