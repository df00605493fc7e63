"""The run directory: one folder per run, the unit of truth of that run.

    run = RunDir.create("runs")            # runs/20260509-142301/
    run.write_config(config.model_dump(mode="json"))
    ...
    run = RunDir.open("runs/20260509-142301")   # resume

Layout (paths are properties, so no other room spells a file name):

    config.yaml       the resolved config the run started with
    metrics.jsonl     one JSON line per logged step (store.metrics)
    tb/               TensorBoard event files (store.metrics)
    traces.sqlite     every rollout, exactly once (store.traces)
    checkpoints/      one complete directory per stage (store.atomic)
    evals/            one results file per held-out evaluation (eval.results)
    alerts.jsonl      one JSON line per alert raised during training (store.alerts)
    summary.md        the human-readable outcome
    report.html       plots and tables of the run, self-contained (eval.report)
    data_files.json   size and sha256 of the users' data files the run trains on
    .lock             held by the process that runs it (`lock`), with its pid

`create` fails early, with a `RunDirError` naming the path and the reason, when
the root cannot be created or written; it never reuses an existing run folder. `open`
refuses a folder without `config.yaml` before writing anything in it.
Not guaranteed: the writability check happens once, at creation; a disk that
fills up or a permission changed later surfaces as an OSError where it happens.
`lock` is an `fcntl.flock`: it holds between processes of one machine on a local file
system, not across machines on every network file system.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from posttrain.store.atomic import atomic_write_text
from posttrain.yaml_reader import YAMLTooDeepError, load_yaml

__all__ = ["RunDir", "RunDirError", "YAMLTooDeepError", "load_yaml"]  # readers of config.yaml


class RunDirError(ValueError):
    """A run directory cannot be created, opened or written; the message says which and why."""


@dataclass(frozen=True)
class RunDir:
    """Paths and small writers for one run's directory. Build with `create` or `open`."""

    path: Path

    @classmethod
    def create(cls, root: str | Path, name: str | None = None) -> RunDir:
        """Make a new run directory under `root` (created if missing).

        `name=None` picks the UTC time, `YYYYmmdd-HHMMSS`, with `-2`, `-3`, ... added
        when that name is taken. An explicit `name` that already exists is an error:
        resume an existing run with `RunDir.open`.
        """
        root = Path(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise RunDirError(
                f"run directory {root} cannot be created: it exists and is not a directory"
            ) from None
        except OSError as e:
            raise RunDirError(f"run directory {root} cannot be created: {_why(e)}") from e

        if name is not None:
            _check_name("run name", name)
            path = root / name
            try:
                path.mkdir()
            except FileExistsError:
                raise RunDirError(
                    f"run directory {path} already exists; use RunDir.open to resume it"
                ) from None
            except OSError as e:
                raise _mkdir_error(root, path, e) from e
        else:
            stamp = _utc_stamp()
            for i in itertools.count(1):
                path = root / (stamp if i == 1 else f"{stamp}-{i}")
                try:
                    path.mkdir()
                    break
                except FileExistsError:
                    continue
                except OSError as e:
                    raise _mkdir_error(root, path, e) from e

        run = cls(path)
        run.checkpoints.mkdir(exist_ok=True)
        return run

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """An existing run directory, to resume: it must exist, hold `config.yaml` and be
        writable. Nothing is written (`checkpoints/` made) until those checks pass, so a
        folder given by mistake is left as it was."""
        path = Path(path)
        run = cls(path)
        if not path.is_dir():
            raise RunDirError(f"run directory {path} does not exist or is not a directory")
        if not run.config_path.is_file():
            raise RunDirError(f"{path} has no config.yaml; is it a run directory?")
        if not os.access(path, os.W_OK | os.X_OK):
            raise RunDirError(f"run directory {path} is not writable: Permission denied")
        run.checkpoints.mkdir(exist_ok=True)
        return run

    def __fspath__(self) -> str:
        return str(self.path)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def config_path(self) -> Path:
        return self.path / "config.yaml"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def tb_dir(self) -> Path:
        return self.path / "tb"

    @property
    def summary_path(self) -> Path:
        return self.path / "summary.md"

    @property
    def traces_path(self) -> Path:
        return self.path / "traces.sqlite"

    @property
    def alerts_path(self) -> Path:
        return self.path / "alerts.jsonl"

    @property
    def report_path(self) -> Path:
        return self.path / "report.html"

    @property
    def data_files_path(self) -> Path:
        return self.path / "data_files.json"

    @property
    def lock_path(self) -> Path:
        return self.path / ".lock"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run exclusively while the block runs (an `flock` on `.lock`, which
        also records this process's pid), so that two processes never train into one run
        directory. RunDirError "run PATH is in use (pid N)" when another holds it. The
        lock goes with the process: a `kill -9` releases it."""
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise RunDirError(f"{self.lock_path} cannot be opened: {_why(e)}") from e
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                raise RunDirError(f"run {self.path} is in use (pid {pid})") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)

    @property
    def evals_dir(self) -> Path:
        return self.path / "evals"

    def eval_path(self, label: str) -> Path:
        """Where the results file of the held-out evaluation `label` lives."""
        _check_name("evaluation label", label)
        return self.evals_dir / f"{label}.json"

    def checkpoint_path(self, stage: str) -> Path:
        """Where the checkpoint of `stage` (`"sft"`, `"dpo"`, `"grpo"`, ...) lives."""
        _check_name("stage", stage)
        return self.checkpoints / stage

    def write_config(self, data: dict[str, Any]) -> None:
        """Write `data` as `config.yaml`, atomically, keys in the order given."""
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        atomic_write_text(self.config_path, text)

    def read_config(self) -> dict[str, Any]:
        """The mapping stored in `config.yaml`; RunDirError naming the file when it is
        missing, unreadable, not YAML or not a mapping."""
        try:
            data = load_yaml(self.config_path.read_text(encoding="utf-8"))
        except OSError as e:
            raise RunDirError(f"{self.config_path} cannot be read: {_why(e)}") from e
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise RunDirError(f"{self.config_path} is not valid YAML: {e}") from e
        if not isinstance(data, dict):
            raise RunDirError(f"{self.config_path} does not hold a mapping")
        return data

    def write_summary(self, markdown: str) -> None:
        """Write `summary.md`, atomically."""
        atomic_write_text(self.summary_path, markdown)


def _utc_stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")


def _check_name(what: str, name: str) -> None:
    """Reject names that would escape their folder or name nothing."""
    if not name or name in (".", "..") or "/" in name or os.sep in name or "\0" in name:
        raise RunDirError(f"{what} must be a plain folder name, got {name!r}")


def _mkdir_error(root: Path, path: Path, error: OSError) -> RunDirError:
    """Why `path` could not be made in the existing `root`: `root` refuses writes, or
    the name itself is at fault (too long, say), which says nothing of `root`."""
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return RunDirError(f"run directory {root} is not writable: {_why(error)}")
    return RunDirError(f"run directory {path} cannot be created: {_why(error)}")


def _why(error: OSError) -> str:
    return error.strerror or str(error)
