"""What a sandbox hands back and how it fails: `ExecResult`, workspace `Snapshot`s, the
`SandboxSpec` of limits, and the `SandboxError` family."""

from __future__ import annotations

import fnmatch
import hashlib
import io
import math
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# The largest values the limits take: beyond any task's needs, within what every consumer
# takes (an rlimit in bytes fits 64 bits, a deadline a C timeval, a cgroup quota an int).
MAX_TIMEOUT_S = 7 * 86_400.0
MAX_LIMITS = {
    "memory_mb": 1 << 24,  # 16 TiB
    "max_processes": 1 << 22,  # the kernel's largest pid_max
    "max_open_files": 1 << 20,  # the kernel's default nr_open
    "max_file_mb": 1 << 24,
    "tmpfs_mb": 1 << 24,
}
MAX_CPU_CORES = 4096.0


def check_seconds(name: str, value: float) -> float:
    """`value` as a float when it is a number of seconds in (0, MAX_TIMEOUT_S]; else
    ValueError naming `name` (infinity and NaN too: they would overflow a deadline)."""
    seconds = float(value)
    if not 0 < seconds <= MAX_TIMEOUT_S:  # NaN fails too
        raise ValueError(
            f"{name} must be a number of seconds in (0, {MAX_TIMEOUT_S:.0f}], got {value}"
        )
    return seconds


def check_limit(name: str, value: int, most: int) -> None:
    """ValueError naming `name` unless `value` is an integer in 1..`most`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ValueError(f"{name} must be an integer in 1..{most}, got {value!r}")


@dataclass(frozen=True)
class SandboxSpec:
    """Limits and layers of one sandbox; every field is a per-task bound unless noted."""

    isolation: str = "auto"  # auto | bwrap | unshare | none (none: trusted code only)
    # address-space rlimit per process of a task; the sandbox's cgroup memory cap is
    # memory_mb + 3 × tmpfs_mb (its tmpfs pages count there) + 256 MB for the fork-server
    memory_mb: int = 1024
    max_processes: int = 64  # RLIMIT_NPROC per task; cgroup pids.max per sandbox
    max_open_files: int = 256
    max_file_mb: int = 64  # largest file a task may write
    tmpfs_mb: int = 256  # size of each private tmpfs: /workspace, /tmp, /dev/shm (bwrap mode)
    output_cap: int = 65536  # bytes kept of stdout and of stderr each
    cpu_cores: float = 1.0  # cgroup cpu quota per sandbox
    timeout_s: float = 10.0  # default wall clock per task
    start_timeout_s: float = 30.0
    preload: tuple[str, ...] = ()  # modules the fork-server imports once, before any task

    def __post_init__(self) -> None:
        if isinstance(self.preload, str):  # tuple("pytest") would preload "p", "y", ...
            raise TypeError(
                f"sandbox preload must be a sequence of module names, not the string "
                f"{self.preload!r}; write ({self.preload!r},)"
            )
        object.__setattr__(self, "preload", tuple(self.preload))  # a list (from YAML) is fine
        for module in self.preload:
            if not isinstance(module, str) or not module:
                raise TypeError(f"sandbox preload holds module names, got {module!r}")
        if self.isolation not in ("auto", "bwrap", "unshare", "none"):
            raise ValueError(
                f"sandbox isolation must be auto, bwrap, unshare or none, not {self.isolation!r}"
            )
        for name, most in MAX_LIMITS.items():
            check_limit(f"sandbox {name}", getattr(self, name), most)
        check_seconds("sandbox timeout_s", self.timeout_s)
        check_seconds("sandbox start_timeout_s", self.start_timeout_s)
        if not 0 < self.cpu_cores <= MAX_CPU_CORES:  # NaN fails too
            raise ValueError(
                f"sandbox cpu_cores must be in (0, {MAX_CPU_CORES:g}], got {self.cpu_cores}"
            )
        if self.output_cap < 0:
            raise ValueError(f"sandbox output_cap must be >= 0, got {self.output_cap}")


class SandboxError(RuntimeError):
    """The sandbox could not do what was asked: it died, refused a request, or a server-side
    operation failed (the message names which)."""


class SandboxUnavailable(SandboxError):
    """No isolation of the requested kind can run on this machine."""


class SandboxCleanupError(SandboxError):
    """A sandbox's cgroup could not be removed (its processes would not die)."""


def task_rlimits(spec: SandboxSpec, timeout: float) -> dict[str, int]:
    """The rlimits every task runs under (address space, CPU, file size, fds, processes, core)."""
    return {
        "as": spec.memory_mb << 20,
        "cpu": math.ceil(timeout) + 1,
        "fsize": spec.max_file_mb << 20,
        "nofile": spec.max_open_files,
        "nproc": spec.max_processes,
        "core": 0,
    }


@dataclass
class ExecResult:
    """One execution. Limits hit and infrastructure failures are fields, never exceptions."""

    exit_code: int  # negative signal number when killed by a signal; -1 with `error` set
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    oom: bool = False
    signal: int | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: str | None = None  # the sandbox itself failed (died, unresponsive, refused)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.error is None and not self.timed_out


@dataclass(frozen=True)
class Snapshot:
    """A workspace as a tar archive (files, folders, symlinks, modes; hard links as copies):
    restored exactly, or opened in a fresh sandbox."""

    archive: bytes
    digest: str = field(default="")

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", hashlib.sha256(self.archive).hexdigest())

    def files(self) -> dict[str, bytes]:
        """Regular files by relative path (read on the host, nothing extracted)."""
        out: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(self.archive), mode="r") as tar:
            for member in tar.getmembers():
                if member.isfile():
                    handle = tar.extractfile(member)
                    assert handle is not None
                    out[member.name] = handle.read()
        return out

    def with_files(self, files: Mapping[str, bytes | str], drop: Iterable[str] = ()) -> Snapshot:
        """This snapshot with `files` written over it and paths matching a `drop` glob removed
        (a verifier's pristine tests, and no agent `conftest.py`); every other member —
        folders, symlinks, modes — is kept as it was. `drop` entries are `fnmatch`
        patterns: pass `glob.escape(name)` to drop one literal name such as `x[1].py`."""
        patterns = tuple(drop)
        buf = io.BytesIO()
        with (
            tarfile.open(fileobj=io.BytesIO(self.archive), mode="r") as old,
            tarfile.open(fileobj=buf, mode="w") as new,
        ):
            for member in old.getmembers():
                dropped = any(fnmatch.fnmatch(member.name, p) for p in patterns)
                if member.name in files or dropped:
                    continue
                new.addfile(member, old.extractfile(member) if member.isfile() else None)
            for name in sorted(files):
                _add_file(new, name, files[name])
        return Snapshot(buf.getvalue())

    @classmethod
    def from_files(cls, files: Mapping[str, bytes | str]) -> Snapshot:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name in sorted(files):
                _add_file(tar, name, files[name])
        return cls(buf.getvalue())


def _add_file(tar: tarfile.TarFile, name: str, data: bytes | str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    info = tarfile.TarInfo(name)
    info.size = len(raw)
    info.mode = 0o755 if raw.startswith(b"#!") else 0o644  # scripts stay runnable
    tar.addfile(info, io.BytesIO(raw))
