"""Rollouts on Ray: the local `Scheduler`'s interface over `EpisodeWorker` actors.

    ensure_ray()                                  # or ensure_ray("10.0.0.1:6379")
    factory = HFEngineFactory.from_model(model, tokenizer, seed=0)
    with RayRollouts(factory, tokenizer, get_domain, params, workers=4) as rollouts:
        rollouts.submit(tasks, policy_version=step)   # blocks beyond max_inflight_groups
        groups = rollouts.collect(8)                  # the first 8 groups to finish
        rollouts.update_weights(model.state_dict(), step + 1)

`submit` cuts each call's tasks into chunks of `chunk_groups` consecutive groups (fewer
when `max_inflight_groups` is smaller) and sends chunk c to worker c % workers: the
assignment depends only on the sequence of calls. A worker runs its chunks one at a
time, in order, through `run_episodes` (`ray_worker.py`), so with `workers=1` the
rollouts equal local `run_episodes` over the same chunks with the same engine seed. A
driver thread gathers finished chunks (`ray.wait`); `collect`, `collect_groups`, `run`,
`inflight` (groups submitted, not yet collected), staleness and backpressure behave as
in `scheduler.py`.

Faults: actors have `max_restarts=-1` and `max_task_retries=-1`: a dead worker process
is restarted (engine rebuilt by the factory) and Ray resubmits its unfinished chunks.
Results are keyed by group index and a group already delivered is dropped
(exactly-once delivery); `metrics()` counts restarts seen and chunks re-executed. A
chunk that raises, or whose worker is gone for good, becomes recorded failures (reward
0, `error` set) of all its groups: application errors are never retried.

Weights: `update_weights` puts the state dict in the object store once; each worker
loads it after the chunks already queued to it. Every chunk carries the weights current
when it was submitted, so a chunk (a retried one too) runs under one set of weights and
its rollouts' `policy_version` names them; unlike the local scheduler, groups submitted
before an update do not switch weights mid-episode.

Not guaranteed: groups arrive in the order they finish; a retried chunk's episodes run
twice (tool side effects too) and sample anew; a slow chunk holds its worker (no work
stealing); `close` shuts Ray down only when this object started it.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ray

from posttrain.domains.base import Domain
from posttrain.engines.base import Engine, SamplingParams
from posttrain.rollout.backends import ray_worker
from posttrain.rollout.backends.ray_cluster import ensure_ray
from posttrain.rollout.collector import GroupCollector
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.tools import ToolPolicy
from posttrain.types import Rollout, Task

__all__ = ["RayRollouts", "ensure_ray"]

POLL_S = 0.02  # how long the gathering thread waits on Ray before looking for new chunks
CLOSE_LOAD_WAIT_S = 10.0  # close() lets queued weight loads finish this long before killing


@dataclass
class _Group:
    index: int
    task: Task
    policy_version: int
    rollouts: list[Rollout] | None = None


@dataclass
class _Chunk:
    chunk_id: int
    rank: int
    groups: list[_Group]


class RayRollouts(GroupCollector):
    """Concurrent episodes on Ray actors, with the interface of `Scheduler`."""

    closed_message = "the Ray rollouts are closed"

    def __init__(
        self,
        engine_factory: Callable[[], Engine],
        tokenizer: Any,
        get_domain: Callable[[str], Domain],
        params: SamplingParams,
        workers: int = 2,
        max_context: int | None = None,
        over_long: OverLongPolicy | None = None,
        tool_policy: ToolPolicy | None = None,
        max_inflight_groups: int = 256,
        chunk_groups: int = 8,
        address: str | None = None,
        worker_options: dict[str, Any] | None = None,
    ) -> None:
        """`worker_options` go to each actor's `.options(...)` (`num_gpus`, `num_cpus`,
        `resources`, `scheduling_strategy`, ...), over the restart settings."""
        for name, value in (("workers", workers), ("max_inflight_groups", max_inflight_groups), ("chunk_groups", chunk_groups)):  # fmt: skip
            if value < 1:
                raise ValueError(f"RayRollouts {name} must be ≥ 1, got {value}")
        self.tokenizer, self.params = tokenizer, params
        self.max_inflight_groups = max_inflight_groups
        self.chunk_size = min(chunk_groups, max_inflight_groups)
        self.started_ray = ensure_ray(address)
        self._ledger = uuid.uuid4().hex
        options = {"max_restarts": -1, "max_task_retries": -1, **(worker_options or {})}
        actor = ray.remote(ray_worker.EpisodeWorker).options(**options)
        # Kept here so the objects outlive every restart that needs them; a list, so
        # that they reach the actor as refs it fetches, not as its arguments.
        self._shared = [ray.put(engine_factory), ray.put(tokenizer)]
        rest = (get_domain, params, max_context, over_long, tool_policy, self._ledger)
        self.actors: list[Any] = [actor.remote(r, self._shared, *rest) for r in range(workers)]
        try:
            self._incarnations = set(ray.get([a.ready.remote() for a in self.actors]))
        except ray.exceptions.RayError as exc:
            self._kill_actors()
            if self.started_ray:  # no object is left whose close() would shut it down
                ray.shutdown()
            raise RuntimeError(f"a rollout worker failed to start: {exc}") from exc
        self._cond = threading.Condition()
        self._pending: dict[ray.ObjectRef, _Chunk] = {}
        self._done: deque[_Group] = deque()
        self._delivered: set[int] = set()
        self._groups, self._chunks = itertools.count(), itertools.count()
        self._inflight, self._version, self._closed = 0, 0, False
        self._weights: ray.ObjectRef | None = None
        self._loads: list[ray.ObjectRef] = []  # weight loads not known to have finished
        self._counts = dict.fromkeys(("restarts", "tasks_retried", "duplicates_dropped", "failed_chunks", "episodes"), 0)  # fmt: skip
        self._first_submit: float | None = None
        self._thread = threading.Thread(target=self._gather, name="ray-rollouts", daemon=True)
        self._thread.start()

    # ---- the caller's side (as in `Scheduler`) ----------------------------------------

    def submit(self, tasks: Sequence[Task], policy_version: int | None = None) -> list[int]:
        """Start `params.n` episodes of each task; returns the groups' indices. Blocks
        while the chunk would take in-flight groups past `max_inflight_groups`."""
        indices: list[int] = []
        for start in range(0, len(tasks), self.chunk_size):
            part = list(tasks[start : start + self.chunk_size])
            with self._cond:
                while self._inflight + len(part) > self.max_inflight_groups and not self._closed:
                    self._cond.wait()
                self._check_open()
                version = self._version if policy_version is None else policy_version
                groups = [_Group(next(self._groups), task, version) for task in part]
                chunk_id = next(self._chunks)
                rank = chunk_id % len(self.actors)
                worker = self.actors[rank]
                ref = worker.run_chunk.remote(chunk_id, part, version, [self._weights])
                self._pending[ref] = _Chunk(chunk_id, rank, groups)
                self._inflight += len(part)
                self._first_submit = self._first_submit or time.perf_counter()
                self._cond.notify_all()
            indices += [g.index for g in groups]
        return indices

    def update_weights(self, state_dict: Any, version: int) -> None:
        """Put `state_dict` in the object store once and move on to `version`; each
        worker loads it after the chunks already queued to it, which finish under the
        weights they were submitted with. Returns without waiting for the loads. Tensors
        go to the CPU first (a pickled CUDA tensor would land on the worker's GPU 0)."""
        if isinstance(state_dict, dict):
            state_dict = {k: v.detach().cpu() if hasattr(v, "detach") else v for k, v in state_dict.items()}  # fmt: skip
        ref = ray.put(state_dict)
        with self._cond:
            self._check_open()
            self._weights, self._version = ref, version
            if self._loads:  # forget the finished ones
                _, self._loads = ray.wait(self._loads, num_returns=len(self._loads), timeout=0)
            self._loads += [worker.load_weights.remote([ref]) for worker in self.actors]

    def metrics(self) -> dict[str, float]:
        """`ray/`: workers, restarts, tasks_retried (chunks re-executed), duplicates_dropped,
        failed_chunks, inflight_groups, episodes, episodes_per_s (since the first submit)."""
        with self._cond:
            out = {f"ray/{k}": float(v) for k, v in self._counts.items()}
            wall = 0.0 if self._first_submit is None else time.perf_counter() - self._first_submit
            out["ray/inflight_groups"] = float(self._inflight)
        out["ray/workers"] = float(len(self.actors))
        out["ray/episodes_per_s"] = out["ray/episodes"] / wall if wall > 0 else 0.0
        return out

    def close(self) -> None:
        """Stop gathering and end the workers (and Ray, if this object started it);
        waiting callers get a RuntimeError."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        # A load still queued when its actor is killed makes Ray log a failed task,
        # once per worker at the end of every run: let them finish (they queue behind
        # the chunks sent before them, so this is bounded, not guaranteed).
        if self._loads:
            ray.wait(self._loads, num_returns=len(self._loads), timeout=CLOSE_LOAD_WAIT_S)
        self._kill_actors()
        ray_worker.clear_ledger(self._ledger)
        if self.started_ray:
            ray.shutdown()

    def __enter__(self) -> RayRollouts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- gathering ----------------------------------------------------------------------

    def _kill_actors(self) -> None:
        for actor in self.actors:
            ray.kill(actor)  # no restart

    def _gather(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                refs = list(self._pending)
            ready, _ = ray.wait(refs, num_returns=1, timeout=POLL_S)
            if ready:  # take every chunk finished by now, not just the first
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            for ref in ready:
                self._deliver(ref)

    def _deliver(self, ref: ray.ObjectRef) -> None:
        with self._cond:
            chunk = self._pending.pop(ref)
        result: ray_worker.ChunkResult | None = None
        try:
            result = ray.get(ref)
            groups = result.groups
        except ray.exceptions.RayError as exc:  # the chunk raised, or its worker is gone
            jobs = [(g.task, g.policy_version) for g in chunk.groups]
            groups = ray_worker.failed_groups(jobs, self.params.n, self.tokenizer, chunk.rank, exc)
        with self._cond:
            if result is None:
                self._counts["failed_chunks"] += 1
            else:
                self._counts["tasks_retried"] += int(result.reexecuted)
                if result.incarnation not in self._incarnations:  # a restarted process
                    self._counts["restarts"] += 1
                    self._incarnations.add(result.incarnation)
            for group, rollouts in zip(chunk.groups, groups, strict=True):
                if group.index in self._delivered:
                    self._counts["duplicates_dropped"] += 1
                    continue
                self._delivered.add(group.index)
                group.rollouts = rollouts
                self._inflight -= 1
                self._counts["episodes"] += len(rollouts)
                self._done.append(group)
            self._cond.notify_all()
