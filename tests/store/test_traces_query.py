"""Trace store queries: light rows and their filters, lookups by id or prefix, `select`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from posttrain.store.traces import AmbiguousIdError, TraceRow, TraceStore
from posttrain.types import Rollout, Verdict
from tests.store.test_export import ARITH, CALC, answer, calc_texts, play


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TraceStore]:
    """arith (pass, fail, verifier error), calc (pass, crashed), `arithmetic/...` (pass)."""
    broken = Verdict(0.0, False, "the verifier raised", error="ValueError: boom")
    with TraceStore(tmp_path / "traces.sqlite") as s:
        s.record([play(ARITH, [answer(0)], rollout_id="a-pass-0001"),
                  play(ARITH, [answer(0, 1)], rollout_id="a-fail-0002", policy_version=3),
                  play(ARITH, [answer(1)], seed=1, rollout_id="a-err-0003", verdict=broken)],
                 stage="grpo")  # fmt: skip
        s.record([play(CALC, calc_texts(0), rollout_id="c-pass-0004"),
                  play(CALC, calc_texts(0), rollout_id="c-crash-0005", error="session failed: x",
                       verdict=Verdict(0.0, False, "session failed: x")),
                  dataclasses.replace(play(ARITH, [answer(0)], rollout_id="lookalike-0006"),
                                      domain="arithmetic/x-v1")],
                 stage="eval/untrained")  # fmt: skip
        yield s


def ids(rows: list[TraceRow]) -> list[str]:
    return [r.id for r in rows]


def test_query_returns_light_rows_in_recording_order(store: TraceStore) -> None:
    rows = store.query()
    assert ids(rows)[:2] == ["a-pass-0001", "a-fail-0002"]
    row = rows[1]
    assert (row.task_id, row.domain, row.stage, row.policy_version, row.reward, row.passed) == (
        f"{ARITH}@0.d2", ARITH, "grpo", 3, 0.0, False)  # fmt: skip
    assert row.error is None and row.created > 0


def test_query_error_is_the_episodes_else_the_verifiers(store: TraceStore) -> None:
    errors = {r.id: r.error for r in store.query()}
    assert errors["a-err-0003"] == "ValueError: boom"
    assert errors["c-crash-0005"] == "session failed: x"
    assert errors["a-pass-0001"] is None


def test_query_never_decodes_a_rollout(store: TraceStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> Rollout:
        raise AssertionError("query decoded a rollout")

    monkeypatch.setattr(Rollout, "from_json", refuse)
    assert len(store.query(domain="arith", failed=True)) == 2


def test_query_domain_takes_an_exact_id_or_a_family(store: TraceStore) -> None:
    arith = ["a-pass-0001", "a-fail-0002", "a-err-0003"]
    assert ids(store.query(domain=ARITH)) == arith
    assert ids(store.query(domain="arith")) == arith  # not "arithmetic/x-v1"
    assert ids(store.query(domain="arithmetic")) == ["lookalike-0006"]
    assert store.query(domain="arith/addition") == []


def test_query_filters_stage_and_outcome(store: TraceStore) -> None:
    assert ids(store.query(stage="eval/untrained", failed=False)) == ["c-pass-0004", "lookalike-0006"]  # fmt: skip
    assert ids(store.query(domain="tools", failed=True)) == ["c-crash-0005"]
    assert store.query(stage="sft") == []


def test_query_limit_keeps_the_first_recorded(store: TraceStore) -> None:
    assert ids(store.query(limit=2)) == ["a-pass-0001", "a-fail-0002"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"limit": 0}, "limit must be a positive integer, got 0"),
     ({"domain": " "}, "domain filter must not be empty"),
     ({"stage": ""}, "stage filter must not be empty")],
)  # fmt: skip
def test_query_rejects_bad_filters(store: TraceStore, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        store.query(**kwargs)


def test_distinct_lists_the_stored_domains_and_stages_sorted(store: TraceStore) -> None:
    assert store.distinct("domain") == [ARITH, "arithmetic/x-v1", CALC]
    assert store.distinct("stage") == ["eval/untrained", "grpo"]
    with pytest.raises(ValueError, match="distinct takes 'domain' or 'stage'"):
        store.distinct("json")  # type: ignore[arg-type]


def test_get_finds_an_id_or_a_unique_prefix(store: TraceStore) -> None:
    rollout = store.get("c-pass-0004")
    assert rollout is not None and rollout.turns[0].tool_calls[0].name == "calculator"
    found = store.get("c-pass")
    assert found is not None and found.id == "c-pass-0004"


def test_get_returns_none_for_unknown_ids_and_short_prefixes(store: TraceStore) -> None:
    assert store.get("zzzzzzzz") is None
    assert store.get("c-pas") is None  # 5 characters: only an exact id


def test_get_rejects_an_ambiguous_prefix(store: TraceStore) -> None:
    store.record([play(ARITH, [answer(0)], rollout_id="c-pass-0099")], stage="grpo")
    with pytest.raises(AmbiguousIdError, match="c-pass-0004, c-pass-0099"):
        store.get("c-pass-00")


def test_select_yields_whole_rollouts_across_batches(store: TraceStore) -> None:
    got = list(store.select(domain="arith", batch_size=2))
    assert [r.id for r in got] == ["a-pass-0001", "a-fail-0002", "a-err-0003"]
    assert got[0] == play(ARITH, [answer(0)], rollout_id="a-pass-0001")
    assert [r.id for r in store.select(limit=3, batch_size=2)] == [
        "a-pass-0001", "a-fail-0002", "a-err-0003"]  # fmt: skip


def test_select_rejects_a_bad_filter_before_iterating(store: TraceStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        store.select(limit=-1)


@pytest.mark.parametrize("batch_size", [0, -1, 2.5])
def test_reading_rejects_a_batch_size_that_is_not_positive(
    store: TraceStore, batch_size: float
) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        store.iter_rollouts(batch_size=batch_size)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        store.select(batch_size=batch_size)  # type: ignore[arg-type]


def test_query_reads_rows_whose_json_holds_nan_or_infinity(store: TraceStore) -> None:
    # Python writes NaN / Infinity, which SQLite's JSON functions (before 3.42) call
    # malformed: one such rollout made every query() of the store raise.
    odd = play(ARITH, [answer(0, 1)], rollout_id="a-nan-0007", error="engine: nan logits")
    odd.verdict.components["score"] = float("nan")
    odd.timings["episode_s"] = float("inf")
    store.record([odd], stage="grpo")
    errors = {r.id: r.error for r in store.query(domain="arith")}
    assert errors["a-nan-0007"] == "engine: nan logits"
    assert errors["a-err-0003"] == "ValueError: boom" and errors["a-pass-0001"] is None


def test_a_malformed_stored_row_is_named_by_get_and_select(store: TraceStore) -> None:
    """A row edited by hand (or written by another program) raised a bare JSON or key
    error that named nothing."""
    store._conn.execute("UPDATE rollouts SET json = '{\"id\": 1' WHERE id = 'a-fail-0002'")
    message = r"trace store row 2 \(id 'a-fail-0002'\) is not a readable rollout"
    with pytest.raises(ValueError, match=message):
        store.get("a-fail-0002")
    with pytest.raises(ValueError, match=message):
        list(store.select(stage="grpo"))
    store._conn.execute("UPDATE rollouts SET json = '{}' WHERE id = 'a-fail-0002'")
    with pytest.raises(ValueError, match=message):  # JSON, but not a rollout
        store.get("a-fail-0002")
