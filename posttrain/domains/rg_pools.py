"""reasoning-gym generators too slow to run per task, served from pre-generated pools.

    from posttrain.domains.rg_pools import all_pooled
    domains = all_pooled()  # one `rg/<name>-v1` per pool file that ships
    task = domains[0].generate(seed=0, difficulty=4)

A pool holds, for each difficulty 1..10, `per_level` tasks exactly as the adapter
(`reasoning_gym_adapter.py`) makes them at that difficulty: seeds 0, 1, ..., the same
curriculum levels and step-down; one gzipped JSON line per task (`level`, `seed`, the
curriculum `levels`, `question`, `answer`, `metadata`) in
`data/rg_pools/<name>.jsonl.gz`. Shipped: bf, group_anagrams, word_ladder (20 per
level). Rebuild or add one with

    python -m posttrain.domains.rg_pools n_queens arc_agi --per-level 20

`PooledReasoningGymDomain` is the adapter's domain with one change: `entry` picks a
pooled task of the asked difficulty by `task_rng` instead of running the generator,
and pairs it with a dataset object built once per process (no tasks generated) for
the generator's own `score_answer`. Scoring, `NOISE_FLOOR`, corruptions, junk
handling and `difficulty_measure` (the summed curriculum levels) are the adapter's
code. Metadata that JSON turns into lists is turned back into the tuples the scorer
compares (`_REVIVE`). n_queens's scorer `eval`s the answer text; here only a Python
literal (or an exact valid board) reaches it, anything else scores 0.

Not guaranteed: a pooled domain has only `per_level` distinct tasks per difficulty
(20 in the shipped pools), so many seeds share a task: it is for evaluation and
breadth, not for long training on one domain. A build skips seeds whose generation
takes over `task_cpu_s` CPU seconds (bf has tasks that run for minutes), so a pool
leans to the faster tasks and a rebuild on another machine may differ near that
limit. The first verification in a process builds the scorer's dataset (up to
~0.6 s where it loads data files: arc_agi, word_ladder, group_anagrams). Pools are
pinned to reasoning-gym 0.1.25 like the adapter: a new version means rebuilding them
and bumping the ids.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import gzip
import io
import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from posttrain.domains.base import task_rng
from posttrain.domains.reasoning_gym_adapter import GENERATORS, ReasoningGymDomain, _entry
from posttrain.types import Task

POOL_DIR = Path(__file__).parent / "data" / "rg_pools"
# Generators from the adapter's slow list that `all_pooled` leaves out, with the reason
# (n_queens, arc_agi and zebra_puzzles join once their pool files are built).
EXCLUDED_POOLS: dict[str, str] = {
    "figlet_font": "its scorer gives 0.1 to the echoed prompt (d=1): per-letter credit",
    "sokoban": "generation too slow to pool here (about 8 s per task)",
    "jugs": "generation too slow to pool here (minutes per task at high difficulty)",
    "n_queens": "another task's board passes its scorer (d=3): puzzles share solutions",
}
# Config overrides for the dataset object that scores: word_ladder's scorer looks up
# words of the answer's length, and the pool spans lengths 3..5.
_SCORER_CONFIG: dict[str, dict[str, Any]] = {
    "word_ladder": {"min_word_length": 3, "max_word_length": 5},
}


def _grid(rows: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(row) for row in rows)


# Metadata fields the scorer compares with tuples, which JSON stored as lists.
_REVIVE: dict[str, dict[str, Callable[[Any], Any]]] = {
    "arc_agi": {"input": _grid, "output": _grid},
}


class PooledReasoningGymDomain(ReasoningGymDomain):
    """A reasoning-gym generator served from its pool: `rg/<name>-v1`, the adapter's cell."""

    def __init__(self, name: str, category: str, pool_path: str | None = None) -> None:
        super().__init__(name, category)
        self.pool_path = pool_path or str(POOL_DIR / f"{name}.jsonl.gz")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable for the self-check's fresh processes
        return (PooledReasoningGymDomain, (self.name, self.category, self.pool_path))

    def _levels(self, difficulty: int) -> dict[str, int]:
        return dict(_pool(self.pool_path)[difficulty][0]["levels"])

    def entry(self, seed: int, difficulty: int) -> tuple[Any, dict[str, Any]]:
        """(the scorer's dataset, the pooled entry this (seed, difficulty) picks)."""
        tasks = _pool(self.pool_path)[difficulty]
        item = tasks[task_rng(self.id, seed, difficulty).randrange(len(tasks))]
        return _scorer(self.name), item

    def _score(self, task: Task, text: str) -> tuple[float, str | None]:
        if self.name == "n_queens" and not _literal(text):
            # Its scorer would `eval` the text: exact boards only, never model code.
            _, item = self.entry(task.seed, task.difficulty)
            if text not in item["metadata"]["valid_answers"]:
                return 0.0, None
        return super()._score(task, text)


def _literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except Exception:  # SyntaxError, ValueError, RecursionError on deep nesting ...
        return False
    return True


@functools.cache
def _pool(path: str) -> dict[int, list[dict[str, Any]]]:
    """The pool file's entries by difficulty, in file order, metadata revived."""
    revive = _REVIVE.get(Path(path).name.removesuffix(".jsonl.gz"), {})
    by_level: dict[int, list[dict[str, Any]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            for key, convert in revive.items():
                item["metadata"][key] = convert(item["metadata"][key])
            by_level.setdefault(item["level"], []).append(item)
    missing = [d for d in range(1, 11) if not by_level.get(d)]
    if missing:
        raise ValueError(f"{path}: no tasks at difficulties {missing}")
    return by_level


@functools.cache
def _scorer(name: str) -> Any:
    """A dataset object whose `score_answer` scores pooled entries (built once, no tasks)."""
    from reasoning_gym import factory

    with contextlib.redirect_stdout(io.StringIO()):
        return factory.create_dataset(name, seed=0, size=1, **_SCORER_CONFIG.get(name, {}))


def category_of(name: str) -> str:
    """The adapter's category for a generator (it decides the matrix cell)."""
    for category, names in GENERATORS.items():
        if name in names:
            return category
    raise KeyError(f"{name!r} is not a reasoning-gym generator in the adapter's list")


class _TooSlow(Exception):
    """One task's generation ran past the build's time limit."""


def _too_slow(signum: int, frame: Any) -> None:
    raise _TooSlow


def build_pool(name: str, per_level: int, out_path: str | Path | None = None, task_cpu_s: float = 5.0) -> Path:  # fmt: skip
    """Generate `per_level` tasks at each difficulty 1..10 exactly as the adapter does
    (seeds 0, 1, ...; a seed whose generation takes over `task_cpu_s` CPU seconds is
    skipped: a few generators have tasks that run for minutes) and write them, gzipped
    JSON lines, byte-reproducibly. Runs in the main thread (it times tasks by SIGPROF)."""
    adapter = ReasoningGymDomain(name, category_of(name))
    path = Path(out_path) if out_path is not None else POOL_DIR / f"{name}.jsonl.gz"
    lines = []
    previous = signal.signal(signal.SIGPROF, _too_slow)
    try:
        for difficulty in range(1, 11):
            levels = adapter._levels(difficulty)
            key = tuple(sorted(levels.items()))
            kept = 0
            for seed in range(4 * per_level + 10):
                record = _timed(name, adapter.id, seed, difficulty, key, task_cpu_s)
                if record is not None:
                    record = {"level": difficulty, "levels": levels, **record}
                    lines.append(json.dumps(record, separators=(",", ":")))
                    kept += 1
                if kept == per_level:
                    break
            else:
                raise RuntimeError(f"{name}: too few tasks within {task_cpu_s} s at d={difficulty}")
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    _pool.cache_clear()
    return path


def _timed(name: str, domain_id: str, seed: int, difficulty: int, key: tuple[tuple[str, int], ...], limit_s: float) -> dict[str, Any] | None:  # fmt: skip
    """The adapter's entry for this seed as a pool record, or None past `limit_s` CPU seconds."""
    signal.setitimer(signal.ITIMER_PROF, limit_s)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # some generators print as they go
            # Uncached: a cached dataset per task would keep every loaded data file alive.
            _, item = _entry.__wrapped__(name, domain_id, seed, difficulty, key)
    except _TooSlow:
        print(f"{name}: d={difficulty} seed={seed} skipped (over {limit_s:g} CPU s)")
        return None
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return {"seed": seed, "question": item["question"], "answer": item["answer"], "metadata": item["metadata"]}  # fmt: skip


def all_pooled() -> list[PooledReasoningGymDomain]:
    """One pooled domain per generator whose pool file exists (minus `EXCLUDED_POOLS`),
    in the adapter's order."""
    return [
        PooledReasoningGymDomain(name, category)
        for category, names in GENERATORS.items()
        for name in names
        if name not in EXCLUDED_POOLS and (POOL_DIR / f"{name}.jsonl.gz").exists()
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Rebuild reasoning-gym task pools.")
    parser.add_argument("names", nargs="+", help="generator names, e.g. n_queens bf")
    parser.add_argument("--per-level", type=int, default=20, help="tasks per difficulty")
    parser.add_argument("--task-cpu-s", type=float, default=5.0, help="skip slower tasks")
    args = parser.parse_args(argv)
    for name in args.names:
        start = time.process_time()
        path = build_pool(name, args.per_level, task_cpu_s=args.task_cpu_s)
        minutes = (time.process_time() - start) / 60
        print(f"{name}: {path} {path.stat().st_size / 1024:.0f} KB, {minutes:.1f} CPU min")


if __name__ == "__main__":
    main()
