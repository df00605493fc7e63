"""Scalar metrics of a run: one JSON line per logged step, mirrored to TensorBoard.

    with MetricsLogger(run) as metrics:
        metrics.log("grpo", step, {"loss": 0.41, "reward/mean": 0.37})
    rows = read_metrics(run.metrics_path)

Each `log` call appends one line to `metrics.jsonl` and flushes it:

    {"stage": "grpo", "step": 12, "time": 1767225600.0, "values": {"loss": 0.41}}

Non-finite values (NaN, inf) are written as `null`, keeping the file strict JSON;
TensorBoard receives them as they are, under the tag `"{stage}/{key}"`.

With `wandb=True` every call is also mirrored to Weights & Biases in offline mode
(`wandb.init(mode="offline", dir=run/)`; sync later with `wandb sync`), as
`wandb.log({"{stage}/{key}": value, ...})` with the stage's step under `"{stage}/step"`;
`WandbMissing` is raised at construction when the package is not installed.

`rewrite_tensorboard(run)` writes `tb/` again from `metrics.jsonl`: a resume calls it
once it has dropped the rows of the steps it redoes (`train/resume.py`'s
`forget_unfinished`), so TensorBoard forgets them too. (tensorboardX's `purge_step`
cannot do this: TensorBoard purges *every* tag from that step on, so a finished SFT
stage's later steps would go too.)

Not guaranteed: lines are flushed to the OS, not fsynced, so a power cut can lose
the last few; a `kill -9` mid-write can tear the last line, which `read_metrics`
skips and the next logger opened on the file cuts off. TensorBoard events are
buffered by tensorboardX and complete only after `close()`. tensorboardX (and
with it torch) is imported on the first logger made with `tensorboard=True`. A rewritten
`tb/` holds `null` (non-finite) values as NaN; Weights & Biases' offline files are not
rewritten.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from posttrain.store.atomic import atomic_directory
from posttrain.store.run_dir import RunDir

if TYPE_CHECKING:
    from tensorboardX import SummaryWriter


class WandbMissing(RuntimeError):
    """Weights & Biases logging was asked for but the `wandb` package is not installed."""


class MetricsLogger:
    """Appends metrics to a run's `metrics.jsonl` and TensorBoard directory."""

    def __init__(
        self,
        run_dir: RunDir,
        tensorboard: bool = True,
        wandb: bool = False,
        wandb_config: dict[str, Any] | None = None,
    ) -> None:
        self.run_dir = run_dir
        self._wandb: Any = None
        if wandb:
            try:
                import wandb as wandb_module
            except ImportError:
                raise WandbMissing(
                    "logging.wandb=true needs the wandb package: pip install wandb"
                ) from None
            self._wandb = wandb_module.init(
                mode="offline", dir=str(run_dir.path), name=run_dir.name, config=wandb_config
            )
        self._file: IO[str] = open_for_append(run_dir.metrics_path)
        self._tb: SummaryWriter | None = None
        if tensorboard:
            # Imported here: tensorboardX pulls in torch, seconds a plain import need not pay.
            from tensorboardX import SummaryWriter

            try:
                self._tb = SummaryWriter(logdir=str(run_dir.tb_dir))
            except BaseException:
                self._file.close()
                raise

    def log(self, stage: str, step: int, values: dict[str, float]) -> None:
        """Record `values` for `stage` at `step`: one JSON line, one TensorBoard scalar each."""
        if self._file.closed:
            raise RuntimeError("MetricsLogger.log called after close()")
        numbers: dict[str, float] = {}
        for key, value in values.items():
            try:
                numbers[key] = float(value)
            except (TypeError, ValueError):
                raise TypeError(
                    f"metric {stage}/{key} must be a number, got {type(value).__name__}"
                ) from None
        now = time.time()
        record = {
            "stage": stage,
            "step": int(step),
            "time": now,
            "values": {k: (v if math.isfinite(v) else None) for k, v in numbers.items()},
        }
        self._file.write(json.dumps(record, allow_nan=False) + "\n")
        self._file.flush()
        if self._tb is not None:
            for key, number in numbers.items():
                self._tb.add_scalar(f"{stage}/{key}", number, global_step=int(step), walltime=now)
        if self._wandb is not None:
            row = {f"{stage}/{key}": number for key, number in numbers.items()}
            self._wandb.log({**row, f"{stage}/step": int(step)})

    def close(self) -> None:
        """Flush and close the JSONL file and the TensorBoard writer; safe to call twice."""
        if not self._file.closed:
            self._file.close()
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None

    def __enter__(self) -> MetricsLogger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Every record in a `metrics.jsonl`, in order. A torn last line (a crash mid-write)
    is skipped; a malformed line anywhere else, or a record without the shape `log`
    writes (an object with a str `stage`, an int `step`, a number `time` and an
    object of `values`), raises ValueError naming it."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON line: {e}") from e
        if not _a_record(record):
            raise ValueError(f"{path}:{number}: not a metrics record: {line[:80]}")
        records.append(record)
    return records


def _a_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("stage"), str)
        and type(record.get("step")) is int
        and isinstance(record.get("time"), int | float)
        and isinstance(record.get("values"), dict)
    )


def rewrite_tensorboard(run_dir: RunDir) -> None:
    """Replace `tb/` (atomically) with one event file holding exactly the rows of
    `metrics.jsonl`, at their steps and times (ValueError on a malformed line)."""
    from tensorboardX import SummaryWriter

    path = run_dir.metrics_path
    rows = read_metrics(path) if path.is_file() else []
    with atomic_directory(run_dir.tb_dir) as tmp:
        writer = SummaryWriter(logdir=str(tmp))
        try:
            for row in rows:
                for key, value in row["values"].items():
                    number = math.nan if value is None else float(value)
                    writer.add_scalar(f"{row['stage']}/{key}", number,
                                      global_step=int(row["step"]), walltime=row["time"])  # fmt: skip
        finally:
            writer.close()
        # Named for the first row's time, so it sorts (and TensorBoard reads it) before
        # the file of the logger opened next, which could otherwise take its very name
        # (tensorboardX names a file for the second it opens it, and truncates it).
        stamp = int(rows[0]["time"]) if rows else 0
        for events in tmp.glob("events.out.tfevents.*"):
            events.rename(tmp / f"events.out.tfevents.{stamp:010d}.rewritten")


def open_for_append(path: Path) -> IO[str]:
    """Open `path` for appending, first cutting off a torn last line left by a crash."""
    if path.exists():
        _drop_torn_tail(path)
    return open(path, "a", encoding="utf-8")


def _drop_torn_tail(path: Path, chunk_size: int = 1 << 16) -> None:
    """Truncate `path` just after its last newline, if it does not end with one."""
    with open(path, "r+b") as f:
        end = f.seek(0, os.SEEK_END)
        if end == 0:
            return
        f.seek(end - 1)
        if f.read(1) == b"\n":
            return
        pos = end
        while pos > 0:
            start = max(0, pos - chunk_size)
            f.seek(start)
            cut = f.read(pos - start).rfind(b"\n")
            if cut >= 0:
                f.truncate(start + cut + 1)
                return
            pos = start
        f.truncate(0)
