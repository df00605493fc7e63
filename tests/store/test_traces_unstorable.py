"""The trace store on rollouts it cannot store as they are: a lone surrogate is stored
escaped and reads back exactly; a value that cannot be serialized leaves a placeholder;
neither raises out of `record` nor costs the other rollouts of its batch."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from posttrain.store.traces import NOT_STORED, TraceStore, degraded_metrics
from posttrain.types import Message, Rollout, ToolCall, Verdict
from tests.store.test_traces import make_rollout

SURROGATE = "\ud800"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TraceStore]:
    with TraceStore(tmp_path / "traces.sqlite") as s:
        yield s


def with_surrogates(rollout_id: str) -> Rollout:
    r = make_rollout(rollout_id, passed=False)
    r.turns[0].text += SURROGATE
    r.turns[0].observations[0].content = "tool said \udfff"
    r.messages[0].content += SURROGATE  # the domain's task text
    r.error = f"session failed on {SURROGATE!s}"
    return r


def deep(depth: int = 100_000) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def too_deep(rollout_id: str) -> Rollout:
    r = make_rollout(rollout_id, passed=True)
    r.turns[0].tool_calls = [ToolCall("calc", {"expr": deep()}, id="c1")]
    r.error = "session failed: boom"
    return r


def test_a_lone_surrogate_is_stored_escaped_and_reads_back_exactly(store: TraceStore) -> None:
    original = with_surrogates("a")
    assert store.record([original], stage="grpo") == 1
    assert store.get("a") == original
    (row,) = store.query()
    assert row.error == original.error


def test_a_rollout_too_deep_to_serialize_leaves_a_placeholder(store: TraceStore) -> None:
    assert store.record([too_deep("a")], stage="grpo") == 1
    kept = store.get("a")
    assert kept is not None
    assert (kept.id, kept.task_id, kept.domain, kept.reward, kept.verdict.passed) == (
        "a", "task-a", "math/add-v1", 1.0, True,
    )  # fmt: skip
    assert kept.error is not None and kept.error.startswith(NOT_STORED)
    assert "RecursionError" in kept.error and kept.error.endswith("session failed: boom")
    assert kept.turns == [] and kept.completion_ids == []
    (row,) = store.query()
    assert row.error == kept.error and row.passed


def test_an_unserializable_verdict_still_leaves_a_placeholder(store: TraceStore) -> None:
    r = make_rollout("a")
    r.verdict.components = {"exact": object()}  # type: ignore[dict-item]
    assert store.record([r], stage="eval/x") == 1
    kept = store.get("a")
    assert kept is not None and kept.reward == 1.0 and kept.verdict.passed
    assert kept.error is not None and "TypeError" in kept.error


def test_unstorable_rollouts_do_not_cost_their_batch(store: TraceStore) -> None:
    batch = [make_rollout("a"), with_surrogates("b"), too_deep("c"), make_rollout("d")]
    assert store.record(batch, stage="grpo") == 4
    assert [r.id for r in store.iter_rollouts()] == ["a", "b", "c", "d"]
    assert store.get("a") == batch[0] and store.get("d") == batch[3]


def test_degraded_rollouts_are_counted_by_kind_and_logged(
    store: TraceStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="posttrain.store.traces"):
        store.record([make_rollout("a"), with_surrogates("b"), too_deep("c")], stage="grpo")
        store.record([with_surrogates("d")], stage="grpo")
    assert store.degraded == {"escaped": 2, "placeholder": 1}
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 3 and "'c'" in logged[1] and "RecursionError" in logged[1]


def test_a_lone_surrogate_in_an_indexed_column_is_escaped_there(store: TraceStore) -> None:
    r = dataclasses.replace(make_rollout("a"), task_id=f"task{SURROGATE}")
    assert store.record([r], stage="grpo") == 1
    (row,) = store.query()
    assert row.task_id == "task\\ud800"
    assert store.get("a") == r  # the JSON keeps it exactly
    store.record([make_rollout("b")], stage=f"eval/{SURROGATE}")
    assert store.count("eval/\\ud800") == 1
    assert store.degraded == {"escaped": 2}


def test_a_message_round_trips_through_to_json_with_a_lone_surrogate() -> None:
    m = Message("assistant", f"x{SURROGATE}y")
    text = m.to_json()
    text.encode()  # UTF-8 takes it
    assert Message.from_json(text) == m


def test_a_verdict_kept_by_a_placeholder_is_the_rollouts(store: TraceStore) -> None:
    r = too_deep("a")
    r.verdict = Verdict(0.25, False, "partly", {"exact": 0.0, "format": 1.0}, error=None)
    store.record([r], stage="grpo")
    kept = store.get("a")
    assert kept is not None and kept.verdict == r.verdict


def test_degraded_metrics_count_each_kind_between_two_readings(store: TraceStore) -> None:
    store.record([with_surrogates("a")], stage="grpo")
    before = dict(store.degraded)
    store.record([too_deep("b"), with_surrogates("c"), make_rollout("d")], stage="grpo")
    assert degraded_metrics(before, store.degraded) == {
        "traces/escaped": 1.0,
        "traces/placeholder": 1.0,
    }
    assert degraded_metrics(store.degraded, store.degraded) == {
        "traces/escaped": 0.0,
        "traces/placeholder": 0.0,
    }
