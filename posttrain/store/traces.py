"""The trace store: every rollout of a run, recorded exactly once, in SQLite.

    with TraceStore(run.traces_path) as traces:
        traces.record(rollouts, stage="grpo")      # -> number newly stored
        mark = traces.high_water_mark()            # saved with a checkpoint
        for rollout in traces.iter_rollouts(stage="grpo", after=mark):
            ...
        rows = traces.query(domain="arith", failed=True, limit=20)   # light rows, no JSON decoded
        rollout = traces.get("3f2a9c")                                # an id or a unique prefix
        traces.distinct("stage")                                      # ["eval/sft", "grpo", ...]

One table, `rollouts`, keyed by the rollout id. `record` inserts a batch in one
transaction with `INSERT OR IGNORE`, so recording the same rollout twice (a
retried batch, a resume after `kill -9`) stores it once, and a batch is either
wholly stored or not at all. The full rollout is kept as JSON next to a few
columns for queries (task, domain, stage, policy version, reward, passed). Rows
are numbered by SQLite's rowid in insertion order; `high_water_mark` is the
largest, which a checkpoint saves so a resume knows what came after it.

Recording never raises on a rollout's content, so one bad rollout costs neither its
batch nor the run: a rollout holding a lone surrogate (model text can; UTF-8 cannot
encode it) is stored as ASCII-escaped JSON, which reads back exactly; one that cannot
be serialized at all (nested too deep, a value JSON has no form for) is stored as a
placeholder with its id, task, policy version, verdict and `judged` but no trajectory,
whose `error` starts with `NOT_STORED`, names the problem and keeps the episode's own
error after it (so readers treat it as a crashed episode: exports and `rescore` skip it).
Each such rollout is counted in `TraceStore.degraded` (by kind) and logged as a warning;
`degraded_metrics` turns two readings of it into the `traces/<kind>` metrics a run logs.
A lone surrogate in an indexed column (id, task id, domain, stage) is written there as
`\\udXXX`. Rows are made before the transaction, so only the database itself (a full
disk, a lock, a column of the wrong type: a programming error) can fail a batch, whole.

`query` and `select` filter in SQL on the indexed columns: `domain` is an exact id or a
family (`"arith"` matches every `arith/...` id), `stage` is exact, `failed` keeps the
rollouts that did not pass (True) or did (False). `query` returns `TraceRow`s, whose
`error` SQLite reads out of the JSON itself, so no rollout is decoded in Python; `select`
yields whole `Rollout`s. Both list rollouts in the order they were recorded. A stored
row that does not read back as a rollout (edited by hand, written by another program)
makes `get` and `select` raise `MalformedTraceError`, naming its rowid and id.

The database runs in WAL mode with `synchronous=FULL`: a committed batch
survives a process crash and a power cut. One `TraceStore` may be shared by the
threads of a process (calls are serialised by a lock); several processes may
open the same file, and writers then wait on each other up to `timeout` seconds.

Not guaranteed: a rollout recorded again under the same id with different
content keeps its *first* content, silently. WAL needs a local file system (not
NFS). Reading `TraceRow.error` still makes SQLite parse each matching row's JSON, in
C: measured on 100k rollouts of 6 KB, `query()` took 2.4 s against 0.5 s for the
columns alone and 31 s for `json.loads` of every row in Python. A rollout whose JSON
holds NaN or Infinity (Python writes them, in verdict components, timings or logprobs)
is one SQLite before 3.42 calls malformed: a query meeting one runs again checking each
row with `json_valid`, and reads such rows' errors in Python.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from posttrain.types import Rollout, Verdict, utf8_encodable

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rollouts (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    domain TEXT NOT NULL,
    stage TEXT NOT NULL,
    policy_version INTEGER NOT NULL,
    reward REAL NOT NULL,
    passed INTEGER NOT NULL,
    json TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS rollouts_stage ON rollouts (stage);
CREATE INDEX IF NOT EXISTS rollouts_filters ON rollouts (domain, stage, passed, policy_version);
"""

_INSERT = (
    "INSERT OR IGNORE INTO rollouts"
    " (id, task_id, domain, stage, policy_version, reward, passed, json, created)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The episode's error, else the verifier's: json_extract yields SQL NULL for JSON null.
_ERROR = "COALESCE(json_extract(json, '$.error'), json_extract(json, '$.verdict.error'))"
# As a BLOB: SQLite turns an escaped lone surrogate into bytes that are not UTF-8.
_ROW_COLUMNS = (
    f"id, task_id, domain, stage, policy_version, reward, passed, CAST({_ERROR} AS BLOB), created"
)
# The same, for a store holding JSON that SQLite's JSON functions refuse (Python writes
# NaN and Infinity; SQLite before 3.42 calls them malformed): such rows give their JSON
# in a last column instead, and Python reads their error out of it.
_SAFE_ROW_COLUMNS = (
    "id, task_id, domain, stage, policy_version, reward, passed,"
    f" CASE WHEN json_valid(json) THEN CAST({_ERROR} AS BLOB) END, created,"
    " CASE WHEN json_valid(json) THEN NULL ELSE json END"
)
MIN_PREFIX = 6  # the shortest id prefix `get` accepts
NOT_STORED = "trace not stored"  # how a placeholder's `error` starts
DEGRADED_KINDS = ("escaped", "placeholder")  # the keys of `TraceStore.degraded`


class AmbiguousIdError(ValueError):
    """An id prefix matches more than one stored rollout; the message names two of them."""


class MalformedTraceError(ValueError):
    """A stored row does not read back as a rollout (not written by this store, or edited
    by hand); the message names its rowid and id."""


@dataclass(frozen=True)
class TraceRow:
    """One stored rollout without its trajectory: the indexed columns, the error, the time.

    `error` is the episode's error, else the verifier's, else None; `created` is the
    Unix time of the batch that stored it."""

    id: str
    task_id: str
    domain: str
    stage: str
    policy_version: int
    reward: float
    passed: bool
    error: str | None
    created: float


class TraceStore:
    """Rollouts of one run in a SQLite file, each id stored exactly once."""

    def __init__(self, path: str | Path, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self.degraded: dict[str, int] = {}  # rollouts stored degraded, by kind, since opened
        # isolation_level=None: transactions are explicit (BEGIN ... COMMIT) below.
        self._conn = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)

    def record(self, rollouts: Iterable[Rollout], stage: str) -> int:
        """Store `rollouts` under `stage` in one transaction; return how many were new.

        Ids already stored (or repeated within the batch) are skipped, not overwritten.
        A rollout that cannot be stored as it is is stored degraded (see the module doc),
        counted in `degraded` and logged; it never raises here nor costs its batch.
        """
        now = time.time()
        rows = []
        for r in rollouts:
            row, kind, problem = _row(r, stage, now)
            if kind is not None:
                self.degraded[kind] = self.degraded.get(kind, 0) + 1
                log.warning("trace store: rollout %r stored %s: %s", row[0], kind, problem)
            rows.append(row)
        if not rows:
            return 0
        with self._lock:
            before = self._conn.total_changes
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(_INSERT, rows)
                self._conn.execute("COMMIT")
            except BaseException:
                # SQLite rolls back by itself on some errors (a full disk, I/O); a
                # second ROLLBACK would then fail and hide the error that matters.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            return self._conn.total_changes - before

    def count(self, stage: str | None = None) -> int:
        """Number of stored rollouts, of one `stage` or of all."""
        with self._lock:
            if stage is None:
                row = self._conn.execute("SELECT COUNT(*) FROM rollouts").fetchone()
            else:
                row = self._conn.execute(
                    "SELECT COUNT(*) FROM rollouts WHERE stage = ?", (stage,)
                ).fetchone()
        return int(row[0])

    def distinct(self, column: Literal["domain", "stage"]) -> list[str]:
        """The domain ids or the stages stored, sorted (what a filter could name)."""
        if column not in ("domain", "stage"):
            raise ValueError(f"distinct takes 'domain' or 'stage', got {column!r}")
        with self._lock:
            rows = self._conn.execute(f"SELECT DISTINCT {column} FROM rollouts ORDER BY 1")
            return [value for (value,) in rows]

    def high_water_mark(self) -> int:
        """The rowid of the last stored rollout; 0 when the store is empty."""
        with self._lock:
            row = self._conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM rollouts").fetchone()
        return int(row[0])

    def iter_rollouts(
        self, stage: str | None = None, after: int = 0, batch_size: int = 256
    ) -> Iterator[Rollout]:
        """Stored rollouts in the order they were recorded, of one `stage` or of all,
        only those after rowid `after` (a saved `high_water_mark`).

        Reads `batch_size` rows at a time (ValueError, here, unless a positive
        integer), so rollouts recorded while iterating may appear too.
        """
        _check_positive("batch_size", batch_size)
        clause = " WHERE rowid > ?" if stage is None else " WHERE stage = ? AND rowid > ?"
        args: list[Any] = [] if stage is None else [stage]
        return self._select(clause, args, None, batch_size, after)

    def get(self, rollout_id: str) -> Rollout | None:
        """The rollout stored under `rollout_id`, or under the one id that starts with it
        when it is at least `MIN_PREFIX` characters; None when nothing matches.

        AmbiguousIdError when the prefix matches more than one id; MalformedTraceError
        when the stored row does not read back as a rollout.
        """
        with self._lock:
            row = self._conn.execute(
                "SELECT rowid, id, json FROM rollouts WHERE id = ?", (rollout_id,)
            ).fetchone()
            if row is None and len(rollout_id) >= MIN_PREFIX:
                # Ids sort by prefix, so the matches are the first ids >= the prefix.
                ids = [
                    i
                    for (i,) in self._conn.execute(
                        "SELECT id FROM rollouts WHERE id >= ? ORDER BY id LIMIT 2", (rollout_id,)
                    )
                    if i.startswith(rollout_id)
                ]
                if len(ids) > 1:
                    raise AmbiguousIdError(
                        f"rollout id prefix {rollout_id!r} matches more than one rollout"
                        f" ({ids[0]}, {ids[1]}, ...); give more characters"
                    )
                if ids:
                    row = self._conn.execute(
                        "SELECT rowid, id, json FROM rollouts WHERE id = ?", (ids[0],)
                    ).fetchone()
        return None if row is None else _decode(*row)

    def query(
        self,
        domain: str | None = None,
        stage: str | None = None,
        failed: bool | None = None,
        limit: int | None = None,
    ) -> list[TraceRow]:
        """Light rows of the matching rollouts, in recording order, at most `limit`.

        `domain`: an exact id or a family (`"arith"` matches `"arith/..."`); `stage`: exact;
        `failed`: True keeps rollouts that did not pass, False those that did.
        """
        where, args = _where(domain, stage, failed)
        _check_limit(limit)
        tail = f"FROM rollouts{where} ORDER BY rowid"
        if limit is not None:
            tail, args = tail + " LIMIT ?", [*args, limit]
        with self._lock:
            try:
                rows = self._conn.execute(f"SELECT {_ROW_COLUMNS} {tail}", args).fetchall()
            except sqlite3.OperationalError as exc:
                if "malformed JSON" not in str(exc):
                    raise
                rows = self._conn.execute(f"SELECT {_SAFE_ROW_COLUMNS} {tail}", args).fetchall()
        return [
            TraceRow(r[0], r[1], r[2], r[3], int(r[4]), float(r[5]), bool(r[6]),
                     _text(r[7]) if len(r) < 10 or r[9] is None else _error_of(r[9]), r[8])
            for r in rows
        ]  # fmt: skip

    def select(
        self,
        domain: str | None = None,
        stage: str | None = None,
        failed: bool | None = None,
        limit: int | None = None,
        batch_size: int = 256,
    ) -> Iterator[Rollout]:
        """The matching rollouts themselves, in recording order (filters as in `query`;
        a bad filter or `batch_size` raises here, not on the first `next`).

        Reads in batches, so rollouts recorded while iterating may appear too. A stored
        row that does not read back as a rollout raises MalformedTraceError when reached.
        """
        where, args = _where(domain, stage, failed)
        _check_limit(limit)
        _check_positive("batch_size", batch_size)
        clause = (where + " AND" if where else " WHERE") + " rowid > ?"
        return self._select(clause, args, limit, batch_size)

    def _select(
        self, clause: str, args: list[Any], limit: int | None, batch_size: int, after: int = 0
    ) -> Iterator[Rollout]:
        left, last = limit, after
        while left is None or left > 0:
            size = batch_size if left is None else min(batch_size, left)
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT rowid, id, json FROM rollouts{clause} ORDER BY rowid LIMIT ?",
                    [*args, last, size],
                ).fetchall()
            if not rows:
                return
            for rowid, rollout_id, text in rows:
                last = rowid
                yield _decode(rowid, rollout_id, text)
            if left is not None:
                left -= len(rows)

    def close(self) -> None:
        """Close the database; safe to call twice."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _decode(rowid: int, rollout_id: str, text: str) -> Rollout:
    """The rollout stored as `text`; MalformedTraceError naming the row when it is not one."""
    try:
        return Rollout.from_json(text)
    except Exception as exc:  # bad JSON, a missing key, a wrong type, nesting too deep ...
        why = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise MalformedTraceError(
            f"trace store row {rowid} (id {rollout_id!r}) is not a readable rollout ({why})"
        ) from None


def _row(r: Rollout, stage: str, now: float) -> tuple[tuple[Any, ...], str | None, str]:
    """The row that stores `r`; how it was degraded ("escaped", "placeholder" or None)
    and why."""
    kind, problem = None, ""
    try:
        data = r.to_dict()
        text = json.dumps(data, ensure_ascii=False, sort_keys=True)
        if not utf8_encodable(text):
            text = json.dumps(data, ensure_ascii=True, sort_keys=True)
            kind, problem = "escaped", "a lone surrogate: its JSON is ASCII-escaped (exact)"
    except Exception as exc:  # too deep (RecursionError), a value JSON has no form for ...
        kind, problem = "placeholder", f"cannot be serialized ({type(exc).__name__}: {exc})"[:300]
        text = _placeholder(r, problem)
    columns: tuple[str, ...] = (r.id, r.task_id, r.domain, stage)
    if not all(utf8_encodable(c) for c in columns if isinstance(c, str)):
        # Written as \udXXX in the indexed columns only; the JSON keeps them exactly.
        kind = kind or "escaped"
        problem = problem or "a lone surrogate in its id, task id, domain or stage"
        columns = tuple(c.encode("utf-8", "backslashreplace").decode() for c in columns)
    values = (int(r.policy_version), float(r.reward), int(r.verdict.passed), text, now)
    return (*columns, *values), kind, problem


def _placeholder(r: Rollout, problem: str) -> str:
    """The JSON of a rollout with `r`'s id, task, policy version, verdict and error but
    no trajectory, its `error` naming `problem` (and `r.error` after it)."""
    error = f"{NOT_STORED}: {problem}" + (f"; episode error: {r.error}" if r.error else "")
    v = r.verdict

    def placeholder(verdict: Verdict) -> str:
        return Rollout(
            r.id, r.task_id, r.domain, r.difficulty, [], [], [], [], [], [], verdict,
            policy_version=r.policy_version, error=error, judged=r.judged,
        ).to_json()  # fmt: skip

    try:
        return placeholder(Verdict(v.reward, v.passed, v.reason, dict(v.components), v.error))
    except Exception:  # the verdict itself cannot be rebuilt (Verdict checks its
        # components) or serialized: keep its numbers only
        return placeholder(Verdict(v.reward, v.passed, "the verdict could not be stored either"))


def _where(domain: str | None, stage: str | None, failed: bool | None) -> tuple[str, list[Any]]:
    """The WHERE clause (or "") of the filters and its arguments; ValueError on an
    empty domain or stage."""
    clauses: list[str] = []
    args: list[Any] = []
    for name, value in (("domain", domain), ("stage", stage)):
        if value is not None and not value.strip():
            raise ValueError(f"{name} filter must not be empty, got {value!r}")
    if domain is not None:
        # A family matches the ids in [family + "/", family + "0"): "0" follows "/" in
        # byte order, so the range is exactly the ids starting with family + "/", and
        # it runs on the (domain, ...) index.
        clauses.append("(domain = ? OR (domain >= ? AND domain < ?))")
        args += [domain, domain + "/", domain + "0"]
    if stage is not None:
        clauses.append("stage = ?")
        args.append(stage)
    if failed is not None:
        clauses.append("passed = ?")
        args.append(0 if failed else 1)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), args


def _error_of(text: str) -> str | None:
    """The episode's error, else the verifier's, read by Python from a rollout's JSON."""
    try:
        data = json.loads(text)
        error = data.get("error")
        return error if error is not None else data["verdict"].get("error")  # type: ignore[no-any-return]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # not written by this store
        return f"unreadable rollout JSON: {exc!r}"


def _text(value: bytes | None) -> str | None:
    """A TEXT value read as a BLOB; an escaped lone surrogate comes back as itself."""
    if value is None:
        return None
    try:
        return value.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # not written by this store
        return value.decode("utf-8", "replace")


def _check_limit(limit: int | None) -> None:
    if limit is not None:
        _check_positive("limit", limit)


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def degraded_metrics(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, float]:
    """`traces/escaped` and `traces/placeholder`: the rollouts stored degraded between two
    readings of `TraceStore.degraded` (every kind, zero included)."""
    return {f"traces/{k}": float(after.get(k, 0) - before.get(k, 0)) for k in DEGRADED_KINDS}
