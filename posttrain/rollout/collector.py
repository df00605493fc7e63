"""The caller's side shared by the rollout backends: finished groups handed out.

`Scheduler` (in process) and `RayRollouts` (on Ray actors) both keep finished groups
in `_done` under `_cond` and hand them out the same way: `collect(k)` the first `k`
to finish, `run(tasks)` a whole batch in task order, each rollout stamped with its
staleness (`timings["staleness"]`: policy versions between the group's start and its
hand-out). A backend sets `_cond`, `_done`, `_inflight`, `_version` and `_closed`,
and implements `submit`.

Threads: any number of threads may `submit`, and `close` may come from any thread at
any time (a `submit` or a waiting `collect`/`run` then raises RuntimeError). There is
one consumer: `collect`, `collect_groups` and `run` hand out groups from one queue
(and `run` waits for its own groups in it), so a second thread calling one of them
while another waits in one would take groups the first is counting on; it gets a
RuntimeError saying so instead. Consumers one after another, from any threads, are
fine. posttrain's one consumer is the trainer's loop (`train/rollout_source.py`).

Not guaranteed: `collect` hands groups out in the order they finish, not the order
they were submitted.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from posttrain.types import Rollout, Task


class _Finished(Protocol):
    index: int
    task: Task
    policy_version: int
    rollouts: Any  # list[Rollout | None] or None


class GroupCollector(ABC):
    """`collect`, `collect_groups`, `run`, `inflight` and `set_policy_version`."""

    _cond: threading.Condition
    _done: deque[Any]
    _inflight: int
    _version: int
    _closed: bool
    _consumer: threading.Thread | None = None  # the thread in collect_groups or run
    closed_message = "the scheduler is closed"

    @abstractmethod
    def submit(self, tasks: Sequence[Task], policy_version: int | None = None) -> list[int]:
        """Start the groups of `tasks`; their indices (each backend's own)."""

    def collect(self, k: int, timeout: float | None = None) -> list[list[Rollout]]:
        """The first `k` groups to finish (each its `n` rollouts), waiting for them;
        fewer only when `timeout` runs out. Unfinished groups keep running."""
        return [rollouts for _, rollouts in self.collect_groups(k, timeout)]

    def collect_groups(
        self, k: int, timeout: float | None = None
    ) -> list[tuple[Task, list[Rollout]]]:
        """`collect`, each group with its task."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        with self._consuming("collect"), self._cond:
            while len(self._done) < k:
                self._check_open()
                left = None if deadline is None else deadline - time.perf_counter()
                if left is not None and left <= 0:
                    break
                self._cond.wait(left)
            out = [self._done.popleft() for _ in range(min(k, len(self._done)))]
            return [(g.task, self._stamp(g)) for g in out]

    def run(self, tasks: Sequence[Task], policy_version: int | None = None) -> list[list[Rollout]]:
        """Every task's `n` rollouts, in the order of `tasks` (a synchronous batch).
        Groups submitted earlier stay where they are, for `collect`."""
        with self._consuming("run"):
            wanted = set(self.submit(tasks, policy_version))
            with self._cond:
                while len(mine := [g for g in self._done if g.index in wanted]) < len(wanted):
                    self._check_open()
                    self._cond.wait()
                self._done = deque(g for g in self._done if g.index not in wanted)
                return [self._stamp(g) for g in sorted(mine, key=lambda g: g.index)]

    @property
    def inflight(self) -> int:
        """Groups submitted and not yet collected (running, or finished and waiting)."""
        with self._cond:
            return self._inflight + len(self._done)

    def set_policy_version(self, version: int) -> None:
        """The policy version groups submitted from now on start under."""
        with self._cond:
            self._version = version

    def _stamp(self, group: _Finished) -> list[Rollout]:
        """The group's rollouts with their staleness (call under `_cond`)."""
        rollouts = [r for r in group.rollouts or [] if r is not None]
        for r in rollouts:
            r.timings["staleness"] = float(self._version - group.policy_version)
        return rollouts

    @contextmanager
    def _consuming(self, call: str) -> Iterator[None]:
        """Hold the consumer's place for `call`; RuntimeError if another thread has it."""
        me = threading.current_thread()
        with self._cond:
            if self._consumer is not None:
                raise RuntimeError(
                    f"{type(self).__name__} is single-consumer: {call}() was called from "
                    f"thread {me.name!r} while thread {self._consumer.name!r} is still "
                    "in collect() or run(); collect from one thread at a time"
                )
            self._consumer = me
        try:
            yield
        finally:
            with self._cond:
                self._consumer = None

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(self.closed_message)
