"""`bench/rollout.py`'s two arms: one untimed batch, from tasks neither arm uses, runs
before the first (FIFO) arm is timed, so it does not pay alone for the first calls."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bench import load_script


class RecordingScheduler:
    """Stands in for `Scheduler`: records what each instance ran, finishes everything."""

    log: list[tuple[str, list[int]]] = []

    def __init__(self, engine: Any, tokenizer: Any, get: Any, params: Any, cfg: Any,
                 max_context: int | None = None) -> None:  # fmt: skip
        self.order, self.inflight, self.pending = cfg.order, 0, list[int]()

    def __enter__(self) -> RecordingScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def run(self, tasks: list[int]) -> list[Any]:
        self.log.append((self.order, list(tasks)))
        return []

    def set_policy_version(self, version: int) -> None:
        pass

    def submit(self, tasks: list[int]) -> None:
        self.log.append((self.order, list(tasks)))
        self.pending += tasks

    def collect(self, count: int) -> list[list[Any]]:
        done, self.pending = self.pending[:count], self.pending[count:]
        return [[type("R", (), {"timings": {"staleness": 0.0}})()] for _ in done]


def test_an_untimed_batch_of_unused_tasks_runs_before_the_fifo_arm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = load_script("rollout")
    RecordingScheduler.log = []
    monkeypatch.setattr(script, "Scheduler", RecordingScheduler)
    tasks = list(range(30))
    script.arms(lambda: tasks, None, None, None, None, batches=2, per_batch=4, workers=1)
    first_order, first = RecordingScheduler.log[0]
    assert (first_order, first) == ("fifo", tasks[-4:])
    used = [t for _, batch in RecordingScheduler.log[1:] for t in batch]
    assert not set(first) & set(used)
