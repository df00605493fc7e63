"""The trace store: every rollout of a run, recorded exactly once, in SQLite.

    with TraceStore(run.traces_path) as traces:
        traces.record(rollouts, stage="grpo")      # -> number newly stored
        mark = traces.high_water_mark()            # saved with a checkpoint
        for rollout in traces.iter_rollouts(stage="grpo", after=mark):
            ...

One table, `rollouts`, keyed by the rollout id. `record` inserts a batch in one
transaction with `INSERT OR IGNORE`, so recording the same rollout twice (a
retried batch, a resume after `kill -9`) stores it once, and a batch is either
wholly stored or not at all. The full rollout is kept as JSON next to a few
columns for queries (task, domain, stage, policy version, reward, passed). Rows
are numbered by SQLite's rowid in insertion order; `high_water_mark` is the
largest, which a checkpoint saves so a resume knows what came after it.

The database runs in WAL mode with `synchronous=FULL`: a committed batch
survives a process crash and a power cut. One `TraceStore` may be shared by the
threads of a process (calls are serialised by a lock); several processes may
open the same file, and writers then wait on each other up to `timeout` seconds.

Not guaranteed: a rollout recorded again under the same id with different
content keeps its *first* content, silently. WAL needs a local file system (not
NFS).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType

from posttrain.types import Rollout

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


class TraceStore:
    """Rollouts of one run in a SQLite file, each id stored exactly once."""

    def __init__(self, path: str | Path, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
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
        """
        now = time.time()
        rows = [
            (
                r.id,
                r.task_id,
                r.domain,
                stage,
                r.policy_version,
                r.reward,
                int(r.verdict.passed),
                r.to_json(),
                now,
            )
            for r in rollouts
        ]
        if not rows:
            return 0
        with self._lock:
            before = self._conn.total_changes
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(_INSERT, rows)
                self._conn.execute("COMMIT")
            except BaseException:
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

        Reads in batches, so rollouts recorded while iterating may appear too.
        """
        last = after
        while True:
            with self._lock:
                if stage is None:
                    rows = self._conn.execute(
                        "SELECT rowid, json FROM rollouts WHERE rowid > ? ORDER BY rowid LIMIT ?",
                        (last, batch_size),
                    ).fetchall()
                else:
                    rows = self._conn.execute(
                        "SELECT rowid, json FROM rollouts WHERE rowid > ? AND stage = ?"
                        " ORDER BY rowid LIMIT ?",
                        (last, stage, batch_size),
                    ).fetchall()
            if not rows:
                return
            for rowid, text in rows:
                last = rowid
                yield Rollout.from_json(text)

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
