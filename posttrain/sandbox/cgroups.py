"""Per-sandbox cgroup v1 groups (memory, pids, cpu) where the hierarchy is writable.

Each sandbox gets `/sys/fs/cgroup/<controller>/posttrain/<name>`; its launcher joins
the groups before exec'ing bubblewrap (`join_prefix`), so every process of the
sandbox is counted from the first instruction. cgroup v2 without memory/pids
controllers (as on these machines) is detected by `layers.cgroup_v1_root` and skipped:
the rlimits still bound each task.
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
            path = root / "posttrain" / name
            try:
                path.mkdir(parents=True, exist_ok=True)
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
        self.dirs.clear()

    @staticmethod
    def _kill_members(path: Path) -> None:
        with contextlib.suppress(OSError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
