"""The in-memory database and the unreliable backend behind the `agent/*` services.

A `Database` is a dict of tables, each a dict of records keyed by id; services read
and write it through their `ToolSpec`s. `Backend` wraps one database for one episode:
it runs a tool call, injects failures drawn from a seeded `random.Random`, and keeps
the logical clock that rate limits are measured against.

    db = Database(tables)
    backend = Backend(db, rate=0.2, seed=17)
    outcome = backend.run(spec, {"account_id": "A-1001"})   # an Outcome: text, error, failure

Failures (`FAILURE_KINDS`), each at most twice in a row for one backend:

- ``timeout`` and ``server_error`` (503): the call is not applied; retry it;
- ``rate_limit`` (429, "retry after N s"): the call is not applied and every call
  fails with 429 until the `wait` tool has advanced the clock by N seconds;
- ``stale`` (reads only): the record as it was when the episode began, marked
  `"stale": true`; read again;
- ``partial`` (lists only): the first half of the items, marked `"partial": true`.

Every call other than `wait` draws the same three numbers from the rng whether it
fails or not, so the failures an episode meets depend only on the seed and on the
sequence of calls: a replayed reference meets exactly the failures it was built on.

Not guaranteed: records must hold only JSON values (the state hash rejects sets);
`get` and `rows` return deep copies, but a `ToolSpec.run` that keeps a reference to a
record it `put` can still change the table behind the backend's back.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from posttrain.verify.state import state_hash

Tables = dict[str, dict[str, dict[str, Any]]]
ToolKind = Literal["read", "list", "write"]
FAILURE_KINDS = ("timeout", "server_error", "rate_limit", "stale", "partial")
MAX_FAILURES_IN_A_ROW = 2
MAX_WAIT_SECONDS = 60


class ToolError(Exception):
    """A call the service refuses (unknown id, bad argument, insufficient funds ...)."""


def clone(value: Any) -> Any:
    """A deep copy of a JSON value."""
    return json.loads(json.dumps(value))


class Database:
    """Tables of records keyed by id, plus a frozen copy of how they began."""

    def __init__(self, tables: Tables) -> None:
        self._initial = json.dumps(tables)  # JSON text: a faster deep copy than copy.deepcopy
        self.tables: Tables = json.loads(self._initial)

    def get(self, table: str, key: Any) -> dict[str, Any]:
        """A copy of one record; ToolError when there is none."""
        record = self.tables.get(table, {}).get(key) if isinstance(key, str) else None
        if record is None:
            raise ToolError(
                f"no {table[:-1] if table.endswith('s') else table} with id {str(key)[:40]!r}"
            )
        return clone(record)

    def rows(
        self, table: str, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """Copies of the records of `table` (those `where` keeps), in id order."""
        found = self.tables.get(table, {})
        return [clone(found[key]) for key in sorted(found) if where is None or where(found[key])]

    def put(self, table: str, record: dict[str, Any]) -> None:
        self.tables.setdefault(table, {})[record["id"]] = clone(record)

    def next_id(self, table: str, prefix: str, start: int = 1) -> str:
        """The next free id `prefix-N` of `table` (ids are handed out in call order)."""
        return f"{prefix}-{start + len(self.tables.get(table, {}))}"

    def state(self) -> Tables:
        return self.tables

    def state_hash(self) -> str:
        return state_hash(self.tables)

    def frozen(self) -> Database:
        """A database holding the initial tables: what a stale read sees."""
        return Database(json.loads(self._initial))

    def snapshot(self) -> Tables:
        return clone(self.tables)

    def restore(self, snapshot: Tables) -> None:
        self.tables = clone(snapshot)


@dataclass(frozen=True)
class ToolSpec:
    """One tool of a service: its schema parts, its kind, and the function that runs it."""

    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    kind: ToolKind
    run: Callable[[Database, dict[str, Any]], dict[str, Any]]

    def schema(self) -> dict[str, Any]:
        parameters = {
            "type": "object",
            "properties": copy.deepcopy(self.properties),
            "required": list(self.required),
        }
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }


@dataclass
class Outcome:
    """What one call returned: the observation text, whether it is an error, and the
    injected failure (None when the call went through as asked)."""

    text: str
    error: bool = False
    failure: str | None = None
    applied: bool = False


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


class Backend:
    """One episode's service endpoint: runs calls, injects failures, keeps the clock."""

    def __init__(self, db: Database, rate: float, seed: int) -> None:
        self.db = db
        self.rate = rate
        self.rng = random.Random(seed)
        self.clock = 0
        self.blocked_until = 0
        self.retry_after = 0
        self.in_a_row = 0

    def wait(self, seconds: Any) -> Outcome:
        if type(seconds) is not int or not 1 <= seconds <= MAX_WAIT_SECONDS:
            return Outcome(f"error: seconds must be an integer from 1 to {MAX_WAIT_SECONDS}", True)
        self.clock += seconds
        return Outcome(dumps({"waited_seconds": seconds, "clock": self.clock}))

    def draw(self, kind: ToolKind) -> str | None:
        """The failure this call meets, if any (always three draws, see the module doc)."""
        roll, pick, delay = self.rng.random(), self.rng.randrange(5), self.rng.randint(1, 5)
        if roll >= self.rate or self.in_a_row >= MAX_FAILURES_IN_A_ROW:
            self.in_a_row = 0
            return None
        self.in_a_row += 1
        failure = FAILURE_KINDS[pick]
        if failure == "stale" and kind != "read":
            failure = "server_error"
        if failure == "partial" and kind != "list":
            failure = "timeout"
        self.retry_after = delay
        return failure

    def run(self, spec: ToolSpec, arguments: dict[str, Any]) -> Outcome:
        if self.clock < self.blocked_until:
            wait = self.blocked_until - self.clock
            return Outcome(_too_many(wait), True, "rate_limit")
        failure = self.draw(spec.kind)
        if failure == "timeout":
            return Outcome("error: timeout after 10 s; the request was not applied, retry it", True, failure)  # fmt: skip
        if failure == "server_error":
            return Outcome("error: 503 Service Unavailable (transient); the request was not applied, retry it", True, failure)  # fmt: skip
        if failure == "rate_limit":
            self.blocked_until = self.clock + self.retry_after
            return Outcome(_too_many(self.retry_after), True, failure)
        db = self.db.frozen() if failure == "stale" else self.db
        try:
            result = spec.run(db, arguments)
        except ToolError as exc:
            return Outcome(f"error: {exc}", True)
        if failure == "stale":
            result = {**result, "stale": True}
        elif failure == "partial":
            items = result.get("items", [])
            result = {**result, "items": items[: len(items) // 2], "partial": True}
        return Outcome(dumps(result), False, failure, applied=spec.kind == "write")


def _too_many(seconds: int) -> str:
    return (
        f"error: 429 Too Many Requests; retry after {seconds} s "
        f"(call wait with seconds={seconds} first); the request was not applied"
    )
