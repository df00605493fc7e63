"""Per-sandbox cgroup v1 groups (memory, pids, cpu) where the hierarchy is writable.

Each sandbox gets `/sys/fs/cgroup/<controller>/posttrain/<hostpid>-<starttime>/<name>`,
under a folder of the host process that made it; its launcher joins the groups before
exec'ing bubblewrap (`join_prefix`), so every process of the sandbox is counted from
the first instruction. cgroup v2 without memory/pids controllers (as on these
machines) is detected by `layers.cgroup_v1_root` and skipped: the rlimits still bound
each task.

A host process killed before it could close its sandboxes (kill -9, the OOM killer)
leaves its groups behind; the next process that makes groups removes the empty ones
of every host process that is gone. Groups still holding processes stay. Not
guaranteed: this assumes every process making groups here shares our pid namespace
(another's live process looks gone, and a group it has made but not joined yet may go).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import time
from pathlib import Path

from posttrain.sandbox.layers import cgroup_v1_root
from posttrain.sandbox.results import SandboxCleanupError


class SandboxCgroups:
    """The cgroups of one sandbox; `close()` removes them once their processes are gone."""

    def __init__(self, name: str, *, memory_bytes: int, max_pids: int, cpu_cores: float) -> None:
        self.dirs: dict[str, Path] = {}
        settings = {
            "memory": {"memory.limit_in_bytes": str(memory_bytes)},
            "pids": {"pids.max": str(max_pids)},
            "cpu": {
                "cpu.cfs_period_us": "100000",
                "cpu.cfs_quota_us": str(int(cpu_cores * 100000)),
            },
        }
        for controller, values in settings.items():
            root = cgroup_v1_root(controller)
            if root is None:
                continue
            _remove_stale_groups(root / "posttrain")
            path = group_path(root, name)
            try:
                _make_group(path)
                for key, value in values.items():
                    (path / key).write_text(value)
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            self.dirs[controller] = path

    @property
    def controllers(self) -> list[str]:
        return sorted(self.dirs)

    def join_prefix(self) -> list[str]:
        """`sh` that moves itself into the groups, then execs the rest of the argv."""
        if not self.dirs:
            return []
        targets = " ".join(shlex.quote(str(d / "cgroup.procs")) for d in self.dirs.values())
        script = f'for p in {targets}; do echo $$ > "$p" || exit 97; done; exec "$@"'
        return ["/bin/sh", "-c", script, "sh"]

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer has killed in this group so far."""
        path = self.dirs.get("memory")
        if path is None:
            return 0
        try:
            for line in (path / "memory.oom_control").read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def close(self) -> None:
        """Kill whatever is still in the groups, then remove them (a few seconds at most)."""
        for path in self.dirs.values():
            deadline = time.monotonic() + 5.0
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SandboxCleanupError(f"cgroup {path} still busy after 5 s") from None
                    self._kill_members(path)
                    time.sleep(0.01)
            with contextlib.suppress(OSError):  # the process's folder, once its last group is gone
                path.parent.rmdir()
        self.dirs.clear()

    @staticmethod
    def _kill_members(path: Path) -> None:
        with contextlib.suppress(OSError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)


def group_path(root: Path, name: str) -> Path:
    """Where this process keeps sandbox `name`'s group under controller root `root`."""
    return root / "posttrain" / _process_tag(os.getpid()) / name


def _process_tag(pid: int) -> str:
    """`<pid>-<start time>`: names one process for good, even once its pid is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return f"{pid}-gone"
    return f"{pid}-{fields[19].decode()}"  # field 22 of stat(5), counted after the name


def _make_group(path: Path) -> None:
    for _ in range(3):
        with contextlib.suppress(FileNotFoundError):  # another thread's close() took the
            path.mkdir(parents=True, exist_ok=True)  # empty parent away meanwhile: again
            return
    path.mkdir(parents=True, exist_ok=True)


_LEGACY_AGE_S = 60.0  # groups of the older flat layout, `posttrain/<name>`, once this old


def _remove_stale_groups(base: Path) -> None:
    """Remove the empty groups of host processes that are gone (rmdir refuses busy ones)."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        pid, sep, _ = entry.name.partition("-")
        if sep and pid.isdigit():
            if _process_tag(int(pid)) == entry.name:
                continue  # its process is alive: its groups are its own business
            with contextlib.suppress(OSError):
                for child in os.scandir(entry.path):
                    if child.is_dir(follow_symlinks=False):
                        with contextlib.suppress(OSError):
                            os.rmdir(child.path)
        else:  # a flat group: its maker may still be about to join it, unless it is old
            with contextlib.suppress(OSError):
                if time.time() - entry.stat(follow_symlinks=False).st_mtime < _LEGACY_AGE_S:
                    continue
        with contextlib.suppress(OSError):
            os.rmdir(entry.path)
