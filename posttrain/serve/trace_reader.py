"""Reading a run's `traces.sqlite` for the trace viewer (`serve.viewer`): the filters of
its list, one page of rollouts with the counts around it, one rollout by id.

    reader = TraceReader(run.traces_path)            # TraceViewerError when unreadable
    listing = reader.listing(RolloutFilter(domain="arith/addition-v1", passed=False), 1, 100)

Every request opens its own read-only connection (SQLite `mode=ro`). The store only
ever appends, so the distinct domains and stages and each filter's count are kept and
brought up to date from the rows after the last rowid seen.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Mapping
from contextlib import closing  # sqlite3's `with` commits but never closes
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from posttrain.types import Rollout

UNREGISTERED = "unregistered"
_COLUMNS = "id, task_id, domain, stage, policy_version, reward, passed, json"


class TraceViewerError(ValueError):
    """The run's trace store is missing or is not a readable trace store; names the path."""


class FilterError(ValueError):
    """A query parameter of the viewer has a value it cannot use; names the parameter."""


def open_traces_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to `traces.sqlite` at `path` (SQLite URI, `mode=ro`)."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


@cache
def cell_name(domain_id: str) -> str:
    """`modality/tools/rounds/verification` of a registered domain, else `unregistered`."""
    from posttrain.eval.results import domain_cell

    cell = domain_cell(domain_id)
    return UNREGISTERED if cell[0] == UNREGISTERED else "/".join(cell)


@dataclass(frozen=True)
class RolloutFilter:
    """What the list shows; each field None means "any"."""

    domain: str | None = None
    cell: str | None = None
    passed: bool | None = None
    stage: str | None = None
    step_min: int | None = None
    step_max: int | None = None

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> RolloutFilter:
        """Parse GET parameters; empty values mean "any". FilterError on a bad value."""

        def text(name: str) -> str | None:
            value = params.get(name, "").strip()
            return value or None

        passed_text = (text("passed") or "all").lower()
        passed_values = {"all": None, "1": True, "0": False, "passed": True, "failed": False}
        if passed_text not in passed_values:
            raise FilterError(f"passed must be 1, 0 or all, got {passed_text!r}")
        return cls(
            domain=text("domain"),
            cell=text("cell"),
            passed=passed_values[passed_text],
            stage=text("stage"),
            step_min=int_param("step_min", text("step_min")),
            step_max=int_param("step_max", text("step_max")),
        )

    def query(self) -> dict[str, str]:
        """The non-empty filters as GET parameters (the inverse of `from_query`)."""
        return {
            k: (str(int(v)) if isinstance(v, bool) else str(v))
            for k, v in asdict(self).items()
            if v is not None
        }

    def query_string(self, **extra: str | int) -> str:
        """`?domain=...&passed=0` (or "" when nothing is set), with `extra` added."""
        params = {**self.query(), **{k: str(v) for k, v in extra.items()}}
        return "?" + urlencode(params) if params else ""

    def where(self, domains_in_cell: list[str] | None) -> tuple[str, list[Any]]:
        """The SQL WHERE clause (or "") and its arguments; `domains_in_cell` from `cell`."""
        passed = None if self.passed is None else int(self.passed)
        conditions = [
            ("domain = ?", self.domain), ("stage = ?", self.stage), ("passed = ?", passed),
            ("policy_version >= ?", self.step_min), ("policy_version <= ?", self.step_max),
        ]  # fmt: skip
        clauses = [c for c, v in conditions if v is not None]
        args: list[Any] = [v for c, v in conditions if v is not None]
        if domains_in_cell is not None:
            clauses.append(f"domain IN ({', '.join('?' * len(domains_in_cell))})")
            args.extend(domains_in_cell)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args


def int_param(name: str, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise FilterError(f"{name} must be an integer, got {value!r}") from None
    if abs(number) > SQLITE_INT_MAX:  # SQLite binds 64-bit integers only
        raise FilterError(f"{name} is out of range, got {value!r}")
    return number


SQLITE_INT_MAX = 2**63 - 1


@dataclass(frozen=True)
class Row:
    """One line of the list: the columns plus what the rollout's JSON adds."""

    id: str
    task_id: str
    domain: str
    cell: str
    stage: str
    policy_version: int
    difficulty: int | None
    reward: float
    passed: bool
    reason: str
    error: str | None


@dataclass(frozen=True)
class Listing:
    """One page of the filtered list and the counts around it."""

    total: int
    matching: int
    page: int
    page_size: int
    rows: list[Row]
    domains: list[str]
    stages: list[str]
    cells: list[str]


class TraceReader:
    """Queries over one `traces.sqlite`, each request on its own read-only connection.

    The store only ever appends, so the distinct domains and stages and each filter's
    count are kept and brought up to date from the rows after the last rowid seen:
    only the first request for a filter scans the whole table.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise TraceViewerError(f"no trace store at {path}: the file does not exist")
        try:
            with closing(open_traces_readonly(path)) as conn:
                conn.execute(f"SELECT {_COLUMNS} FROM rollouts LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            raise TraceViewerError(f"{path} is not a readable trace store: {exc}") from None
        self._lock = threading.Lock()
        self._seen = 0  # rowid up to which _domains and _stages are complete
        self._domains: set[str] = set()
        self._stages: set[str] = set()
        self._counts: dict[tuple[str, tuple[Any, ...]], tuple[int, int]] = {}

    def listing(self, filt: RolloutFilter, page: int, page_size: int) -> Listing:
        with closing(open_traces_readonly(self.path)) as conn:
            top = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM rollouts").fetchone()[0]
            with self._lock:
                new = conn.execute(
                    "SELECT DISTINCT domain, stage FROM rollouts WHERE rowid > ? AND rowid <= ?",
                    (self._seen, top),
                ).fetchall()
                self._domains.update(d for d, _ in new)
                self._stages.update(s for _, s in new)
                self._seen = max(self._seen, top)
                domains, stages = sorted(self._domains), sorted(self._stages)
            in_cell = (
                None if filt.cell is None else [d for d in domains if cell_name(d) == filt.cell]
            )
            where, args = filt.where(in_cell)
            where = f"{where} AND rowid <= ?" if where else " WHERE rowid <= ?"
            found = conn.execute(
                f"SELECT {_COLUMNS} FROM rollouts{where} ORDER BY rowid DESC LIMIT ? OFFSET ?",
                [*args, top, page_size, (page - 1) * page_size],
            ).fetchall()
            matching = self._count(conn, where, args, top)
            total = self._count(conn, " WHERE rowid <= ?", [], top)
        return Listing(
            total=total,
            matching=matching,
            page=page,
            page_size=page_size,
            rows=[_row(r) for r in found],
            domains=domains,
            stages=stages,
            cells=sorted({cell_name(d) for d in domains}),
        )

    def _count(self, conn: sqlite3.Connection, where: str, args: list[Any], top: int) -> int:
        """Rows matching `where` (which ends in `rowid <= ?`) up to rowid `top`."""
        key = (where, tuple(args))
        upto, known = self._counts.get(key, (0, 0))
        if upto < top:
            query = f"SELECT COUNT(*) FROM rollouts{where} AND rowid > ?"
            known += conn.execute(query, [*args, top, upto]).fetchone()[0]
            if len(self._counts) > 4096:  # bound memory; counts are only a speed-up
                self._counts.clear()
            self._counts[key] = (top, known)
        elif upto > top:  # another request saw newer rows; count from scratch
            query = f"SELECT COUNT(*) FROM rollouts{where}"
            known = conn.execute(query, [*args, top]).fetchone()[0]
        return int(known)

    def rollout(self, rollout_id: str) -> tuple[str, Rollout] | None:
        """(stage, rollout) of `rollout_id`, or None when the store has no such id.
        Raises `UnreadableRollout` when its stored JSON is not a rollout."""
        with closing(open_traces_readonly(self.path)) as conn:
            sql = "SELECT stage, json FROM rollouts WHERE id = ?"
            found = conn.execute(sql, (rollout_id,)).fetchone()
        if found is None:
            return None
        try:
            return found[0], Rollout.from_json(found[1])
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise UnreadableRollout(f"rollout {rollout_id!r}: unreadable JSON ({exc!r})") from None


class UnreadableRollout(ValueError):
    """A stored rollout whose JSON does not revive (a store written by other code)."""


def _row(found: tuple[Any, ...]) -> Row:
    rollout_id, task_id, domain, stage, version, reward, passed, text = found
    try:  # plain JSON, not Rollout.from_json: reviving token lists costs ~10x more
        data = json.loads(text)
        difficulty, verdict = data["difficulty"], data["verdict"]
        reason, error = verdict["reason"], data.get("error") or verdict.get("error")
    except (ValueError, TypeError, KeyError) as exc:  # one bad row must not hide the page
        difficulty, reason, error = None, "", f"unreadable rollout JSON: {exc!r}"
    return Row(
        rollout_id, task_id, domain, cell_name(domain), stage, version, difficulty,
        reward, bool(passed), reason, error,
    )  # fmt: skip
