"""`SandboxCgroups`: groups nest under their host process and outlive no dead host."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from posttrain.sandbox import cgroups, layers
from posttrain.sandbox.cgroups import SandboxCgroups

ROOT = layers.cgroup_v1_root("pids")
pytestmark = pytest.mark.skipif(ROOT is None, reason="no writable cgroup v1 hierarchy")
LIMITS = {"memory_bytes": 256 << 20, "max_pids": 32, "cpu_cores": 1.0}


def base() -> Path:
    assert ROOT is not None
    return ROOT / "posttrain"


def test_groups_live_under_their_host_process_and_go_on_close() -> None:
    groups = SandboxCgroups(uuid.uuid4().hex[:12], **LIMITS)
    path = groups.dirs["pids"]
    assert path.parent == base() / cgroups._process_tag(os.getpid()) and path.is_dir()
    assert (path / "pids.max").read_text().strip() == "32"
    groups.close()
    assert not path.exists()


def test_groups_of_a_killed_host_are_removed_by_the_next_one() -> None:
    child = (
        "import os, signal, uuid\n"
        "from posttrain.sandbox.cgroups import SandboxCgroups\n"
        "groups = SandboxCgroups(uuid.uuid4().hex[:12], memory_bytes=1 << 28, max_pids=8, cpu_cores=1)\n"  # fmt: skip
        "print(groups.dirs['pids'], flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    leaked = Path(proc.stdout.strip())
    assert leaked.is_dir()  # kill -9: nobody closed it
    groups = SandboxCgroups(uuid.uuid4().hex[:12], **LIMITS)
    try:
        assert not leaked.exists() and not leaked.parent.exists()
    finally:
        groups.close()


def test_a_reused_pid_does_not_keep_a_dead_host_s_groups() -> None:
    ours = cgroups._process_tag(os.getpid())
    stale = base() / f"{os.getpid()}-1" / "abc"  # our pid, another start time: gone
    stale.mkdir(parents=True)
    groups = SandboxCgroups(uuid.uuid4().hex[:12], **LIMITS)
    try:
        assert not stale.parent.exists() and (base() / ours).is_dir()
    finally:
        groups.close()


def test_a_group_still_holding_processes_is_kept() -> None:
    no_such_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    busy = base() / f"{no_such_pid}-1" / uuid.uuid4().hex[:12]  # its host is gone
    busy.mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (busy / "cgroup.procs").write_text(str(sleeper.pid))
        SandboxCgroups(uuid.uuid4().hex[:12], **LIMITS).close()
        assert busy.is_dir()
    finally:
        sleeper.kill()
        sleeper.wait()
        busy.rmdir()
        busy.parent.rmdir()


def test_old_flat_groups_are_removed_once_old(monkeypatch: pytest.MonkeyPatch) -> None:
    flat = base() / uuid.uuid4().hex[:12]
    flat.mkdir(parents=True)
    try:
        SandboxCgroups(uuid.uuid4().hex[:12], **LIMITS).close()
        assert flat.is_dir()  # just made: its maker may be about to join it
        monkeypatch.setattr(cgroups, "_LEGACY_AGE_S", 0.0)
        SandboxCgroups(uuid.uuid4().hex[:12], **LIMITS).close()
        assert not flat.exists()
    finally:
        if flat.exists():
            flat.rmdir()
