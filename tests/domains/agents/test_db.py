"""The in-memory database and the unreliable backend: failures, recovery, state hash."""

from __future__ import annotations

from typing import Any

from posttrain.domains.agents.db import MAX_FAILURES_IN_A_ROW, Backend, Database, ToolSpec


def _read(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return db.get("items", args["id"])


def _list(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return {"items": db.rows("items")}


def _bump(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    item = db.get("items", args["id"])
    item["n"] += 1
    db.put("items", item)
    return item


READ = ToolSpec("read", "", {}, (), "read", _read)
LIST = ToolSpec("list", "", {}, (), "list", _list)
BUMP = ToolSpec("bump", "", {}, (), "write", _bump)


def _db() -> Database:
    return Database({"items": {k: {"id": k, "n": 0} for k in ("a", "b", "c", "d")}})


def test_failures_happen_at_about_the_configured_rate() -> None:
    backend = Backend(_db(), rate=0.2, seed=3)
    draws = [backend.draw("read") for _ in range(4000)]
    share = sum(d is not None for d in draws) / len(draws)
    assert 0.15 < share < 0.21  # a little under 0.2: never more than two in a row


def test_failures_are_the_same_for_the_same_seed_and_calls() -> None:
    def outcomes(seed: int) -> list[str | None]:
        backend = Backend(_db(), rate=0.3, seed=seed)
        out = []
        for _ in range(200):
            outcome = backend.run(READ, {"id": "a"})
            out.append(outcome.failure)
            if outcome.failure == "rate_limit":
                backend.wait(backend.blocked_until - backend.clock)
        return out

    assert outcomes(7) == outcomes(7)
    assert outcomes(7) != outcomes(8)


def test_rate_zero_never_fails() -> None:
    backend = Backend(_db(), rate=0.0, seed=1)
    assert all(backend.run(BUMP, {"id": "a"}).failure is None for _ in range(100))


def test_no_call_fails_more_than_twice_in_a_row() -> None:
    backend = Backend(_db(), rate=1.0, seed=1)
    draws = [backend.draw("write") for _ in range(9)]
    assert [d is None for d in draws] == ([False] * MAX_FAILURES_IN_A_ROW + [True]) * 3


def test_retrying_after_a_transient_error_applies_the_write_once() -> None:
    for seed in range(200):
        db = _db()
        backend = Backend(db, rate=0.5, seed=seed)
        first = backend.run(BUMP, {"id": "a"})
        if first.failure not in ("timeout", "server_error"):
            continue
        assert first.error and db.get("items", "a")["n"] == 0  # not applied
        while (again := backend.run(BUMP, {"id": "a"})).failure is not None:
            if again.failure == "rate_limit":
                backend.wait(backend.blocked_until - backend.clock)
        assert not again.error and db.get("items", "a")["n"] == 1
        return
    raise AssertionError("no seed gave a transient error first")


def test_a_rate_limit_blocks_every_call_until_the_wait() -> None:
    for seed in range(200):
        backend = Backend(_db(), rate=0.5, seed=seed)
        if backend.run(READ, {"id": "a"}).failure != "rate_limit":
            continue
        waiting = backend.blocked_until - backend.clock
        assert backend.run(READ, {"id": "b"}).text.startswith("error: 429")
        assert not backend.wait(waiting).error
        backend.in_a_row = MAX_FAILURES_IN_A_ROW  # the next draw cannot fail
        assert backend.run(READ, {"id": "b"}).failure is None
        return
    raise AssertionError("no seed gave a rate limit first")


def test_stale_reads_show_the_initial_record_and_partial_lists_half() -> None:
    seen = set()
    for seed in range(300):
        db = _db()
        db.put("items", {"id": "a", "n": 5})
        backend = Backend(db, rate=0.9, seed=seed)
        read, listed = backend.run(READ, {"id": "a"}), backend.run(LIST, {})
        if read.failure == "stale":
            assert '"n": 0' in read.text and '"stale": true' in read.text
            seen.add("stale")
        if listed.failure == "partial":
            assert listed.text.count('"id"') == 2 and '"partial": true' in listed.text
            seen.add("partial")
    assert seen == {"stale", "partial"}


def test_the_state_hash_ignores_key_order() -> None:
    one = Database({"items": {"a": {"id": "a", "n": 1}, "b": {"id": "b", "n": 2}}})
    two = Database({"items": {"b": {"n": 2, "id": "b"}, "a": {"n": 1, "id": "a"}}})
    assert one.state_hash() == two.state_hash()
    two.put("items", {"id": "a", "n": 2})
    assert one.state_hash() != two.state_hash()


def test_restore_brings_back_a_snapshot() -> None:
    db = _db()
    snap = db.snapshot()
    _bump(db, {"id": "a"})
    db.restore(snap)
    assert db.get("items", "a")["n"] == 0
