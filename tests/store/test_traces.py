"""The trace store: exactly-once recording, whole batches, round-trips, high-water marks."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from posttrain.store.traces import TraceStore
from posttrain.types import Message, Rollout, ToolCall, Turn, Verdict


def make_rollout(rollout_id: str, passed: bool = True, policy_version: int = 0) -> Rollout:
    reward = 1.0 if passed else 0.0
    return Rollout(
        id=rollout_id,
        task_id=f"task-{rollout_id}",
        domain="math/add-v1",
        difficulty=2,
        prompt_ids=[1, 2, 3],
        completion_ids=[4, 5, 6, 7],
        loss_mask=[1, 1, 0, 1],
        logprobs=[-0.5, -0.25, 0.0, -1.0],
        messages=[Message("user", "2+2?"), Message("assistant", "4")],
        turns=[
            Turn(
                text="4",
                token_ids=[4, 5],
                logprobs=[-0.5, -0.25],
                finish_reason="stop",
                tool_calls=[ToolCall("calc", {"expr": "2+2"}, id="c1")],
                observations=[Message("tool", "4", name="calc")],
                env_token_ids=[6],
            )
        ],
        verdict=Verdict(
            reward=reward, passed=passed, reason="checked", components={"exact": reward}
        ),
        policy_version=policy_version,
        timings={"generate": 0.1},
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TraceStore]:
    with TraceStore(tmp_path / "traces.sqlite") as s:
        yield s


def test_record_returns_number_newly_inserted(store: TraceStore) -> None:
    assert store.record([make_rollout("a"), make_rollout("b")], stage="grpo") == 2


def test_record_is_exactly_once(store: TraceStore) -> None:
    batch = [make_rollout("a"), make_rollout("b")]
    store.record(batch, stage="grpo")
    assert store.record(batch + [make_rollout("c")], stage="grpo") == 1
    assert store.count() == 3


def test_record_keeps_first_copy_of_a_repeated_id(store: TraceStore) -> None:
    store.record([make_rollout("a", passed=True)], stage="grpo")
    store.record([make_rollout("a", passed=False)], stage="eval")
    (only,) = store.iter_rollouts()
    assert only.verdict.passed
    assert store.count("eval") == 0


def test_record_ignores_duplicates_within_a_batch(store: TraceStore) -> None:
    assert store.record([make_rollout("a"), make_rollout("a")], stage="sft") == 1


def test_record_of_nothing_is_zero(store: TraceStore) -> None:
    assert store.record([], stage="sft") == 0
    assert store.record(iter([]), stage="sft") == 0


def test_record_stores_whole_batch_or_nothing(store: TraceStore) -> None:
    bad = make_rollout("bad")
    bad.task_id = ["not", "bindable"]  # type: ignore[assignment]
    with pytest.raises(sqlite3.Error):
        store.record([make_rollout("a"), make_rollout("b"), bad], stage="grpo")
    assert store.count() == 0
    assert store.record([make_rollout("a")], stage="grpo") == 1


def test_record_on_a_full_disk_raises_the_full_disk_error(store: TraceStore) -> None:
    store.record([make_rollout("a")], stage="grpo")
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count={pages + 1}")  # SQLite rolls back itself
    with pytest.raises(sqlite3.OperationalError, match="full"):
        store.record([make_rollout(f"r{i}") for i in range(200)], stage="grpo")
    assert store.count() == 1


def test_iter_rollouts_round_trips_rollouts(store: TraceStore) -> None:
    originals = [make_rollout("a", policy_version=3), make_rollout("b", passed=False)]
    store.record(originals, stage="grpo")
    assert list(store.iter_rollouts()) == originals


def test_iter_rollouts_filters_by_stage(store: TraceStore) -> None:
    store.record([make_rollout("a"), make_rollout("b")], stage="sft")
    store.record([make_rollout("c")], stage="grpo")
    assert [r.id for r in store.iter_rollouts(stage="grpo")] == ["c"]
    assert [r.id for r in store.iter_rollouts(stage="sft")] == ["a", "b"]


def test_iter_rollouts_reads_past_batch_boundaries_in_order(store: TraceStore) -> None:
    ids = [f"r{i:03d}" for i in range(25)]
    store.record([make_rollout(i) for i in ids], stage="grpo")
    assert [r.id for r in store.iter_rollouts(batch_size=7)] == ids


def test_count_by_stage(store: TraceStore) -> None:
    store.record([make_rollout("a"), make_rollout("b")], stage="sft")
    store.record([make_rollout("c")], stage="grpo")
    assert (store.count(), store.count("sft"), store.count("grpo"), store.count("dpo")) == (
        3,
        2,
        1,
        0,
    )


def test_high_water_mark_is_zero_when_empty(store: TraceStore) -> None:
    assert store.high_water_mark() == 0


def test_iter_rollouts_after_high_water_mark_yields_only_newer(store: TraceStore) -> None:
    store.record([make_rollout("a"), make_rollout("b")], stage="grpo")
    mark = store.high_water_mark()
    assert mark == 2
    store.record([make_rollout("c", policy_version=1)], stage="grpo")
    assert store.high_water_mark() == 3
    assert [(r.id, r.policy_version) for r in store.iter_rollouts(after=mark)] == [("c", 1)]


def test_store_uses_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "traces.sqlite"
    TraceStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_query_columns_match_the_rollout(tmp_path: Path) -> None:
    path = tmp_path / "traces.sqlite"
    with TraceStore(path) as store:
        store.record([make_rollout("a", passed=False, policy_version=4)], stage="eval")
    with sqlite3.connect(path) as conn:
        row = conn.execute(
            "SELECT id, task_id, domain, stage, policy_version, reward, passed FROM rollouts"
        ).fetchone()
    assert row == ("a", "task-a", "math/add-v1", "eval", 4, 0.0, 0)


def test_records_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "traces.sqlite"
    with TraceStore(path) as store:
        store.record([make_rollout("a")], stage="grpo")
    with TraceStore(path) as store:
        assert store.count() == 1
        assert store.record([make_rollout("a")], stage="grpo") == 0


def test_concurrent_threads_record_each_rollout_once(store: TraceStore) -> None:
    batches = [
        [make_rollout(f"r{i}") for i in range(start, start + 20)] for start in range(0, 60, 10)
    ]
    inserted: list[int] = []

    def record(batch: list[Rollout]) -> None:
        inserted.append(store.record(batch, stage="grpo"))

    threads = [threading.Thread(target=record, args=(b,)) for b in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.count() == 70
    assert sum(inserted) == 70


def test_resume_after_kill_neither_loses_nor_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "traces.sqlite"
    child = textwrap.dedent(
        f"""
        import os, signal
        from tests.store.test_traces import make_rollout
        from posttrain.store.traces import TraceStore
        store = TraceStore({str(path)!r})
        store.record([make_rollout(f"r{{i}}") for i in range(5)], stage="grpo")
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], cwd=Path(__file__).parents[2], check=False)
    assert proc.returncode == -signal.SIGKILL
    with TraceStore(path) as store:
        assert store.count() == 5
        assert store.record([make_rollout(f"r{i}") for i in range(8)], stage="grpo") == 3
        assert [r.id for r in store.iter_rollouts()] == [f"r{i}" for i in range(8)]
