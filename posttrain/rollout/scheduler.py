"""The rollout scheduler: episodes run concurrently through three bounded stages.

    sched = Scheduler(engine, tokenizer, get_domain, params, SchedulerConfig(env_workers=8))
    sched.submit(tasks, policy_version=step)   # n episodes per task; blocks when full
    groups = sched.collect(4)                  # the first 4 whole groups to finish
    sched.set_policy_version(step + 1)         # unfinished groups carry on (partial rollouts)
    sched.close()

An episode (the state machine of `rollout/episode.py`, the same one `run_episodes`
steps in lockstep) moves between three stages, each with its own bounded pool, so
one never blocks another:

- **engine**: one thread owns the engine. It takes up to `engine_slots` sequences of
  waiting work per call, by priority: a group's first turn (one request, `n` samples
  sharing the prefill) or one episode's next turn. A call that raises a transient
  error (`OSError`: connection, timeout) is retried with exponential backoff; after
  `engine_retries` it ends those episodes as recorded failures. A refusal that may be
  one request's (`engine_calls.shared_failure`) is not retried: the batch is split
  until the requests that fail alone are found (`rollout/engine_calls.py`), and only
  their episodes fail; any other error ends the call's episodes as recorded failures.
- **env**: `env_workers` threads serve tool calls and scripted users (sandboxes).
- **verify**: `verify_workers` threads run the verifiers (a raising verifier is a
  `Verdict.error`, `episode.finish`).

On these threads any BaseException a domain's code raises (`sys.exit()` included; no
Ctrl-C lands there) ends its episode as a recorded failure, so every group completes.

Priority is longest-first with aging: an episode's predicted length is the mean
episode time of its (domain, difficulty) so far (`LengthModel`), and each second of
waiting adds `aging` seconds to it, so long tasks start early and short ones never
starve. The key `predicted − aging × enqueued_at` orders the heap for all time,
because every waiting item gains the same `aging × now`. `order="fifo"` is the plain
first-come baseline.

Over-provisioning is the caller's: submit more groups than a batch needs, `collect`
the batch, and the rest keep running into the next one. Each rollout's
`timings["staleness"]` is the policy version when it was collected minus the one it
started under; `timings["queue_s"]` its time waiting for the engine.
`episode_timeout_s` ends an over-long episode as a recorded failure at its next stage
boundary; its clock starts when its group gets an in-flight slot (sessions open then,
not while `submit` waits). An episode that cannot start (prompt too long, session that
does not open) is recorded at `submit`; its group's other samples run. `metrics()`
gives, per stage, queue depth, utilization and latency.

Not guaranteed: `episode_timeout_s` is checked between stages, so it cannot interrupt a
tool call, a scripted user's turn or a verifier already running: the tool guard bounds
the first two (`ToolPolicy`: a hung user turn ends its episode as a session failure and
frees its env worker), the sandbox its own work; a hung verifier holds a verify worker; `collect` returns groups in the order
they finish, not the order they were submitted (`run` restores that order); the
engine's own batch composition, hence sampling with a fixed seed, depends on timing.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from posttrain.domains.base import Domain
from posttrain.engines.base import Completion, Engine, GenerationRequest, SamplingParams
from posttrain.rollout.collector import GroupCollector
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.rollout.engine_calls import describe, generate_apart
from posttrain.rollout.episode import (
    EpisodeState,
    close_sessions,
    environment_step,
    finish,
    first_request,
    next_request,
    open_group,
    record_turn,
    release_caches,
)
from posttrain.rollout.length_model import LengthModel
from posttrain.rollout.stage_stats import StageStats
from posttrain.tools import ToolPolicy
from posttrain.types import Rollout, Task

__all__ = ["LengthModel", "Scheduler", "SchedulerConfig"]


@dataclass(frozen=True)
class SchedulerConfig:
    engine_slots: int = 64  # sequences per engine call
    env_workers: int = 4  # concurrent environment steps (tools, sandboxes, users)
    verify_workers: int = 2  # concurrent verifications
    max_inflight_groups: int = 256  # backpressure: `submit` blocks beyond this
    episode_timeout_s: float | None = None
    engine_retries: int = 3
    retry_backoff_s: float = 0.05
    aging: float = 1.0  # predicted seconds credited per second waited
    order: Literal["longest_first", "fifo"] = "longest_first"

    def __post_init__(self) -> None:
        for name in ("engine_slots", "env_workers", "verify_workers", "max_inflight_groups"):
            if getattr(self, name) < 1:
                raise ValueError(f"SchedulerConfig.{name} must be ≥ 1, got {getattr(self, name)}")
        for name in ("engine_retries", "retry_backoff_s", "aging"):
            if not getattr(self, name) >= 0:  # NaN too
                raise ValueError(f"SchedulerConfig.{name} must be ≥ 0, got {getattr(self, name)}")
        if self.episode_timeout_s is not None and not self.episode_timeout_s > 0:
            raise ValueError(f"SchedulerConfig.episode_timeout_s must be > 0, got {self.episode_timeout_s}")  # fmt: skip
        if self.order not in ("longest_first", "fifo"):
            raise ValueError(f"SchedulerConfig.order must be longest_first or fifo, got {self.order!r}")  # fmt: skip


@dataclass
class _Group:
    index: int
    task: Task
    episodes: list[EpisodeState]
    policy_version: int
    remaining: int
    rollouts: list[Rollout | None] = field(default_factory=list)


@dataclass(order=True)
class _Work:
    key: float
    seq: int
    group: _Group = field(compare=False)
    episode: EpisodeState | None = field(compare=False)  # None: the group's first turn
    enqueued: float = field(compare=False, default=0.0)

    @property
    def rows(self) -> int:
        return len(self.group.episodes) if self.episode is None else 1


class Scheduler(GroupCollector):
    """Concurrent episodes over bounded engine, environment and verifier pools.

    Threads (`GroupCollector`): `submit` from any number of threads; one consumer
    (`collect`, `collect_groups`, `run`) at a time, a second concurrent one gets a
    RuntimeError; `close` from any thread at any time. A `submit` that `close`
    overtakes raises RuntimeError: a group still opening its sessions is not started
    (they are closed), groups already queued are abandoned with the rest."""

    def __init__(
        self,
        engine: Engine,
        tokenizer: Any,
        get_domain: Callable[[str], Domain],
        params: SamplingParams,
        config: SchedulerConfig | None = None,
        max_context: int | None = None,
        over_long: OverLongPolicy | None = None,
        lengths: LengthModel | None = None,
        tool_policy: ToolPolicy | None = None,
    ) -> None:
        self.engine, self.tokenizer, self.get_domain = engine, tokenizer, get_domain
        self.params, self.cfg = params, config or SchedulerConfig()
        self.one = SamplingParams(params.max_tokens, params.temperature, params.top_p, 1, params.stop)  # fmt: skip
        self.max_context, self.over_long = max_context, over_long or OverLongPolicy()
        self.lengths = lengths or LengthModel()
        self.tool_policy = tool_policy
        self.stats = {name: StageStats(name) for name in ("engine", "env", "verify")}
        self._cond = threading.Condition()
        self._heap: list[_Work] = []
        self._seq = itertools.count()
        self._groups = itertools.count()
        self._done: deque[_Group] = deque()
        self._running: dict[int, _Group] = {}  # groups not yet finished, by index
        self._finished: list[EpisodeState] = []  # episodes whose engine caches can go
        self._inflight = 0
        self._version = 0
        self._closed = False
        self._engine_lock = threading.Lock()  # held during an engine call
        self._env = ThreadPoolExecutor(self.cfg.env_workers, thread_name_prefix="rollout-env")
        self._verify = ThreadPoolExecutor(self.cfg.verify_workers, thread_name_prefix="rollout-verify")  # fmt: skip
        self._thread = threading.Thread(target=self._engine_loop, name="rollout-engine", daemon=True)  # fmt: skip
        self._started = time.perf_counter()
        self._thread.start()

    # ---- the caller's side --------------------------------------------------------------

    def submit(self, tasks: Sequence[Task], policy_version: int | None = None) -> list[int]:
        """Start `params.n` episodes of each task; returns the groups' indices. Blocks
        while `max_inflight_groups` groups are running (backpressure)."""
        indices = []
        for task in tasks:
            # The slot comes first: a group waiting for one holds no session (sandboxes
            # are resources) and its episode clock (`episode_timeout_s`) has not started.
            with self._cond:
                while self._inflight >= self.cfg.max_inflight_groups and not self._closed:
                    self._cond.wait()
                self._check_open()
                self._inflight += 1
                index = next(self._groups)
                version = self._version if policy_version is None else policy_version
            try:
                group_eps = open_group(
                    task, self.params.n, self.get_domain, self.tokenizer, self.params,
                    self.max_context, self.over_long, self.tool_policy,
                )  # fmt: skip
            except BaseException:  # open_group records the world's failures; this is a bug
                with self._cond:
                    self._inflight -= 1
                    self._cond.notify_all()
                raise
            group = _Group(index, task, group_eps, version, len(group_eps))
            group.rollouts = [None] * len(group_eps)
            # The hand-off is atomic with respect to `close` (the condition's lock is
            # reentrant): a group is either wholly queued before the pools stop, and
            # `close` abandons it with the rest, or not queued at all.
            with self._cond:
                if not self._closed:
                    self._running[index] = group
                    # Episodes that could not start (prompt too long, session not opened)
                    # go straight to recording; the others share the group's first turn.
                    for i, ep in enumerate(group_eps):
                        if ep.done:
                            self._to_verify(group, i)
                    if not all(ep.done for ep in group_eps):
                        self._enqueue(group, None)
                    indices.append(index)
                    continue
                self._inflight -= 1
                self._cond.notify_all()
            close_sessions(group_eps)
            raise RuntimeError(
                f"{self.closed_message}: close() ran while submit was opening task "
                f"{task.id}'s sessions; that group was not started (its sessions are closed)"
            )
        return indices

    def update_weights(self, state_dict: Any, version: int) -> None:
        """Load new weights into the engine between two engine calls, and move on to
        `version` (episodes in flight continue under the new weights)."""
        with self._engine_lock:
            self.engine.update_weights(state_dict)
        self.set_policy_version(version)

    def metrics(self) -> dict[str, float]:
        """Per stage: queue depth (now and max), utilization, calls and latency."""
        wall = time.perf_counter() - self._started
        workers = {"engine": 1, "env": self.cfg.env_workers, "verify": self.cfg.verify_workers}
        out: dict[str, float] = {"sched/inflight_groups": float(self.inflight)}
        for name, stats in self.stats.items():
            out.update(stats.as_metrics(wall, workers[name]))
        return out

    def close(self) -> None:
        """Stop the engine thread and the pools, and close the sessions of the episodes
        left unfinished; waiting callers get a RuntimeError."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        self._env.shutdown(wait=True, cancel_futures=True)
        self._verify.shutdown(wait=True, cancel_futures=True)
        release_caches(self.engine, self._finished)
        self._finished = []
        with self._cond:
            unfinished = [
                ep
                for group in self._running.values()
                for ep, rollout in zip(group.episodes, group.rollouts, strict=True)
                if rollout is None
            ]
            self._running.clear()
        close_sessions(unfinished)

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the stages ---------------------------------------------------------------------

    def _enqueue(self, group: _Group, episode: EpisodeState | None) -> None:
        now = time.perf_counter()
        if self.cfg.order == "fifo":
            key = now
        else:
            predicted = self.lengths.predict(group.task.domain, group.task.difficulty)
            key = -(predicted - self.cfg.aging * (now - self._started))
        with self._cond:
            heapq.heappush(self._heap, _Work(key, next(self._seq), group, episode, now))
            self.stats["engine"].queued(len(self._heap))
            self._cond.notify_all()

    def _take(self) -> list[_Work] | None:
        """Up to `engine_slots` sequences of the most urgent work (none when there were
        only caches to release); None once closed."""
        with self._cond:
            while not self._heap and not self._finished and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            finished, self._finished = self._finished, []
        with self._engine_lock:  # the engine's KV caches of finished episodes go first
            release_caches(self.engine, finished)
        with self._cond:
            if not self._heap:
                return []
            batch = [heapq.heappop(self._heap)]
            rows = batch[0].rows
            while self._heap and rows + self._heap[0].rows <= self.cfg.engine_slots:
                work = heapq.heappop(self._heap)
                batch.append(work)
                rows += work.rows
            self.stats["engine"].queued(len(self._heap))
            return batch

    def _engine_loop(self) -> None:
        while (batch := self._take()) is not None:
            if not batch:
                continue
            # The batch's running episodes belong to this stage until each is handed on
            # (`passed`); a failure partway fails only the rest, so none is recorded twice.
            owned = {ep for w in batch for ep in self._episodes(w) if not ep.done}
            passed: set[EpisodeState] = set()
            try:
                self._serve(batch, passed)
            except BaseException as exc:  # a bug (or an engine's SystemExit) here must fail
                # episodes, not hang the run: no Ctrl-C reaches this thread
                reason = f"scheduler failed: {type(exc).__name__}: {exc}"
                for w in batch:
                    for ep in self._episodes(w):
                        if ep in owned and ep not in passed:
                            ep.error, ep.done = reason, True
                            self._after_turn(w.group, ep)

    def _serve(self, batch: list[_Work], passed: set[EpisodeState]) -> None:
        """One engine call for `batch`; each result goes on to its next stage, and each
        episode handed on joins `passed`. Episodes already done (their session did not
        open) are skipped, their samples' KV caches released: they were recorded at `submit`."""
        now = time.perf_counter()
        live = [w for w in batch if not self._timed_out(w, now, passed)]
        if not live:
            return
        for w in live:
            for ep in self._episodes(w):
                ep.queue_s += now - w.enqueued
        start = time.perf_counter()
        # A request the engine refuses fails alone (the batch is split to find it); the
        # results' shape is checked before anything is dispatched: each fails once.
        outcomes = generate_apart(self.engine, [self._request(w) for w in live], self._call)
        elapsed = time.perf_counter() - start
        self.stats["engine"].served(elapsed, len(live))
        rows = sum(w.rows for w in live)
        for w, outcome in zip(live, outcomes, strict=True):
            for k, ep in enumerate(self._episodes(w)):
                if ep.done:  # recorded at `submit`, but the engine may keep its sample's cache
                    with self._cond:
                        self._finished.append(ep)
                    continue
                if isinstance(outcome, Exception):
                    ep.error, ep.done = f"engine failed: {describe(outcome)}", True
                    self._after_turn(w.group, ep)
                else:
                    ep.model_seconds += elapsed / rows
                    self._after_generation(w.group, ep, outcome[k])
                passed.add(ep)

    def _call(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        """One engine call; an `OSError` (connection, timeout: infrastructure) is retried
        with exponential backoff, up to `engine_retries` times, then raised."""
        delay, attempt = self.cfg.retry_backoff_s, 0
        while True:
            try:
                with self._engine_lock:
                    return self.engine.generate(requests)
            except OSError as exc:
                if attempt == self.cfg.engine_retries:
                    exc.add_note(f"after {attempt} retries")
                    raise
            self.stats["engine"].retried()
            time.sleep(delay)
            delay *= 2
            attempt += 1

    def _request(self, w: _Work) -> GenerationRequest:
        if w.episode is None:
            return first_request(w.group.episodes, self.params)
        return next_request(w.episode, self.one)

    def _episodes(self, w: _Work) -> list[EpisodeState]:
        return w.group.episodes if w.episode is None else [w.episode]

    def _timed_out(self, w: _Work, now: float, passed: set[EpisodeState]) -> bool:
        """Whether `w`'s episodes ran past `episode_timeout_s`; if so they end (as
        recorded failures) and join `passed`."""
        limit = self.cfg.episode_timeout_s
        eps = self._episodes(w)
        if limit is None or now - eps[0].started <= limit:
            return False
        for ep in eps:
            if ep.done:  # its session did not open: recorded at `submit`
                continue
            ep.error, ep.done = f"episode timed out after {limit:g}s", True
            self._after_turn(w.group, ep)
            passed.add(ep)
        return True

    def _after_generation(self, group: _Group, ep: EpisodeState, completion: Completion) -> None:
        parsed = record_turn(ep, completion)
        if ep.done:
            self._after_turn(group, ep)
            return

        def step() -> None:
            start = time.perf_counter()
            try:
                environment_step(ep, parsed, self.tokenizer, self.max_context, self.params.max_tokens)  # fmt: skip
            except BaseException as exc:  # a bug, or a session's KeyboardInterrupt: on a worker
                # thread, where no Ctrl-C lands, its episode ends recorded, never lost
                ep.error, ep.done = f"environment step failed: {type(exc).__name__}: {exc}", True
            self.stats["env"].served(time.perf_counter() - start, 1)
            self._after_turn(group, ep)

        self._submit(self._env, "env", step)

    def _after_turn(self, group: _Group, ep: EpisodeState) -> None:
        limit = self.cfg.episode_timeout_s
        if not ep.done and limit is not None and time.perf_counter() - ep.started > limit:
            ep.error, ep.done = f"episode timed out after {limit:g}s", True
        if not ep.done:
            self._enqueue(group, ep)
            return
        with self._cond:
            self._finished.append(ep)  # the engine thread releases its KV cache
            self._cond.notify_all()
        self._to_verify(group, next(i for i, e in enumerate(group.episodes) if e is ep))

    def _to_verify(self, group: _Group, i: int) -> None:
        def verify() -> None:
            start = time.perf_counter()
            ep = group.episodes[i]
            try:
                rollout = finish(ep, group.policy_version)
            except BaseException as exc:  # finish guards verifiers; a worker thread (no
                # Ctrl-C lands here) records any escape, so its group always completes
                ep.error = f"recording failed: {type(exc).__name__}: {exc}"
                close_sessions([ep])
                rollout = finish(ep, group.policy_version)  # no domain code left to run
            rollout.timings["queue_s"] = ep.queue_s
            self.stats["verify"].served(time.perf_counter() - start, 1)
            task = group.task
            self.lengths.observe(task.domain, task.difficulty, rollout.timings["episode_s"])
            with self._cond:
                group.rollouts[i] = rollout
                group.remaining -= 1
                if group.remaining == 0:
                    self._inflight -= 1
                    self._done.append(group)
                    self._running.pop(group.index, None)
                self._cond.notify_all()

        self._submit(self._verify, "verify", verify)

    def _submit(self, pool: ThreadPoolExecutor, stage: str, job: Callable[[], None]) -> None:
        """`job` on `pool`, counted in `stage`'s queue depth until a worker takes it."""
        stats = self.stats[stage]
        stats.enqueued(+1)

        def run() -> None:
            stats.enqueued(-1)
            job()

        pool.submit(run)
