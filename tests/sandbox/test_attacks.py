"""Hostile tasks against the bwrap sandbox: what they cannot do to the host, the pool or each other.

Every test runs one attack through `run_attack` in a small warm pool and proves three things:

1. the attack is contained (asserted on the `ExecResult` and, wherever it can be seen from
   outside, on the host: files, listeners, processes, cgroups);
2. the harness survives (a result comes back within a bounded time, never an exception; a
   sandbox that was killed from inside says so in `ExecResult.error`);
3. the next task in the SAME pool runs clean (`assert_pool_clean` leases every sandbox of the
   pool at once, so it always reaches the attacked one or its replacement, and checks
   `print`, uid 65534, no leftover processes inside or on the host, empty workspace and /tmp,
   no new files anywhere else on the sandbox's writable filesystems, no SysV IPC objects).

Positive controls: where an attack is safe to run without isolation (reading a test-made
host file, reaching a loopback listener the test opened, seeing an environment variable,
writing into a tmp_path folder, opening a raw or netlink socket) it is first shown to
*succeed* in `Sandbox(isolation="none")`, so no test can pass by attacking nothing.

The last section covers state that must not outlive a task — files outside /workspace
and /tmp, IPC objects, the fork-server's memory, a failed lazy reset, OOM kills reported
on the right task, locked folders. Each was a gap this file found first (as a strict
xfail) and that the sandbox now closes.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import platform
import signal
import socket
import stat
import subprocess
import textwrap
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from posttrain.sandbox import ExecResult, Sandbox, SandboxError, SandboxSpec, layers
from posttrain.sandbox.cgroups import group_path
from posttrain.sandbox.pool import SandboxPool

if layers.best_mode() != "bwrap":
    pytest.skip(
        "attack tests need bubblewrap isolation (layers.best_mode() is "
        f"{layers.best_mode()!r}: {layers.bwrap_status()[1]})",
        allow_module_level=True,
    )

NOBODY = layers.NOBODY
SPEC = SandboxSpec(
    memory_mb=512,
    max_processes=32,
    max_open_files=128,
    max_file_mb=8,
    tmpfs_mb=32,
    output_cap=4096,
    cpu_cores=1.0,
    timeout_s=5.0,
)
X86_64 = platform.machine() == "x86_64"
HOST_CONFIG = Path("/work/main/posttrain/config.py")

# ----------------------------------------------------------------------------- the clean check

STATE_PROBE = r"""
import json, os

def tree(top):
    # every path on the filesystem holding `top`, not descending into other mounts
    dev = os.lstat(top).st_dev
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        keep = []
        for d in dirnames:
            path = os.path.join(dirpath, d)
            out.append(path + "/")
            if os.lstat(path).st_dev == dev:
                keep.append(d)
        dirnames[:] = keep
        out.extend(os.path.join(dirpath, f) for f in filenames)
    return sorted(out)

def ipc(kind):
    with open(f"/proc/sysvipc/{kind}") as f:
        return len(f.read().splitlines()) - 1

def sysctl(name):
    with open(f"/proc/sys/{name}") as f:
        return f.read().strip()

SCRATCH = ("/workspace", "/tmp", "/dev/shm")

print(json.dumps({
    "uid": os.getuid(), "pid": os.getpid(), "ppid": os.getppid(),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "workspace": os.listdir("/workspace"), "tmp": os.listdir("/tmp"),
    "outside": tree("/") + tree("/dev"),
    "sysv_ipc": {kind: ipc(kind) for kind in ("shm", "msg", "sem")},
    "xattrs": {d: os.listxattr(d) for d in SCRATCH},
    "sysctl": {k: sysctl(k) for k in ("kernel/shmmax", "kernel/msgmni", "kernel/sem")},
}))
print("clean")
"""

_fresh_state: dict[str, Any] = {}
_seen_sandboxes: weakref.WeakKeyDictionary[SandboxPool, set[str]] = weakref.WeakKeyDictionary()


def _probe(sb: Sandbox) -> dict[str, Any]:
    result = sb.run_python(STATE_PROBE, timeout=10)
    assert result.ok and result.stdout.endswith("clean\n"), result
    state: dict[str, Any] = json.loads(result.stdout.splitlines()[0])
    return state


def _cgroup_file(sb: Sandbox, controller: str, name: str) -> Path | None:
    root = layers.cgroup_v1_root(controller)
    path = group_path(root, sb.name) / name if root else None
    return path if path is not None and path.exists() else None


def fresh_state() -> dict[str, Any]:
    """What a never-used sandbox looks like from inside (computed once)."""
    if not _fresh_state:
        with Sandbox(SPEC) as sb:
            _fresh_state.update(_probe(sb))
    return _fresh_state


def assert_sandbox_clean(sb: Sandbox) -> None:
    """One sandbox is as good as new, seen from inside and from the host."""
    fresh = fresh_state()
    assert sb.mode == "bwrap" and sb.alive
    state = _probe(sb)
    assert state["uid"] == NOBODY
    assert state["ppid"] == sb.server_pid == 1  # the fork-server is the namespace's pid 1
    assert state["pids"] == sorted({1, sb.server_pid, state["pid"]}), "leftover processes"
    assert state["workspace"] == [] and state["tmp"] == []
    assert sb.list_files() == []
    outside, expected = set(state["outside"]), set(fresh["outside"])
    assert sorted(outside ^ expected) == [], "paths changed outside /workspace and /tmp"
    assert state["sysv_ipc"] == {"shm": 0, "msg": 0, "sem": 0}, "SysV IPC objects left"
    assert all(not names for names in state["xattrs"].values()), state["xattrs"]
    assert state["sysctl"] == fresh["sysctl"], "IPC limits changed"
    echo = sb.exec(["/bin/echo", "clean"], timeout=10)
    assert echo.ok and echo.stdout == "clean\n", echo
    # host side: bwrap and the fork-server (its pid 1), nothing else, in the tree and the cgroup
    assert len(sb.pids) == 2, sb.pids
    pids_current = _cgroup_file(sb, "pids", "pids.current")
    if pids_current is not None:
        assert int(pids_current.read_text()) == 2


def assert_pool_clean(pool: SandboxPool) -> None:
    """Lease every sandbox of `pool` at once (so the attacked one too) and check each."""
    boxes: list[Sandbox] = []
    try:
        for _ in range(pool.size):
            boxes.append(pool.acquire(timeout=30))
        for sb in boxes:
            assert_sandbox_clean(sb)
        names = {sb.name for sb in boxes}
        seen = _seen_sandboxes.setdefault(pool, set())
        root = layers.cgroup_v1_root("pids")
        for gone in seen - names:  # a recycled sandbox left no process behind (cgroup removed)
            assert root is None or not group_path(root, gone).exists(), gone
        seen.update(names)
    finally:
        for sb in boxes:
            pool.release(sb)


def run_attack(
    pool: SandboxPool,
    attack: str | list[str],
    *,
    timeout: float = 2.0,
    stdin: str | bytes | None = None,
    inspect: Callable[[Sandbox, ExecResult], None] | None = None,
    sandbox_dies: bool = False,
    max_wall: float | None = None,
) -> ExecResult:
    """Run `attack` (Python source, or an argv for `exec`) in a leased sandbox, then check the pool.

    `inspect(sandbox, result)` runs inside the same lease, before the sandbox is reset.
    """
    with pool.lease(timeout=30) as sb:
        assert sb.mode == "bwrap"
        start = time.monotonic()
        if isinstance(attack, str):
            result = sb.run_python(textwrap.dedent(attack), timeout=timeout, stdin=stdin)
        else:
            result = sb.exec(attack, timeout=timeout, stdin=stdin)
        elapsed = time.monotonic() - start
        assert isinstance(result, ExecResult)
        assert elapsed <= (max_wall if max_wall is not None else timeout + 3.0), elapsed
        if sandbox_dies:
            assert result.error, result
        else:
            assert result.error is None, result
        if inspect is not None:
            inspect(sb, result)
    assert_pool_clean(pool)
    return result


def shell(script: str) -> list[str]:
    return ["/bin/sh", "-c", textwrap.dedent(script)]


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(size=2, spec=SPEC) as p:
        assert_pool_clean(p)  # also asserts every sandbox runs in bwrap mode
        yield p


@pytest.fixture
def fresh_pool() -> Iterator[SandboxPool]:
    """A one-sandbox pool of its own, for attacks that leave state behind."""
    with SandboxPool(size=1, spec=SPEC) as p:
        yield p


@pytest.fixture(scope="module")
def unisolated() -> Iterator[Sandbox]:
    """The positive control: the same API with no isolation at all (trusted code only)."""
    with Sandbox(SPEC, isolation="none") as sb:
        assert sb.mode == "none"
        yield sb


def _digest(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- host secrets

READ_PROBE = """
import hashlib, os
path = {path!r}
try:
    if os.path.isdir(path):
        print("LIST", sorted(os.listdir(path)))
    else:
        with open(path, "rb") as f:
            print("SHA", hashlib.sha256(f.read()).hexdigest())
except OSError as exc:
    print("DENIED", type(exc).__name__)
"""


def _host_view(path: str) -> str:
    if os.path.isdir(path):
        return f"LIST {sorted(os.listdir(path))}"
    return f"SHA {_digest(path)}"


@pytest.mark.parametrize("target", ["test_secret_file", "/etc/shadow", "/root", str(HOST_CONFIG)])
def test_host_secret_is_unreadable(
    pool: SandboxPool, unisolated: Sandbox, tmp_path: Path, target: str
) -> None:
    if target == "test_secret_file":
        secret = tmp_path / "secret.txt"
        secret.write_text(f"posttrain-secret-{uuid.uuid4().hex}\n")
        target = str(secret)
    if not os.path.exists(target):
        pytest.skip(f"{target} does not exist on this host")
    code = READ_PROBE.format(path=target)
    control = unisolated.run_python(code, timeout=5)
    assert control.stdout.strip() == _host_view(target), "control: the host path is readable"

    result = run_attack(pool, code)
    assert result.stdout.startswith("DENIED"), result.stdout


def _wait_for_environ(pid: int, secret: str, program: bytes = b"sleep") -> None:
    """Until `pid` has exec'd `program` with `secret` in its environment.

    The secret shows first in setpriv's environment, before it execs `program`; read in
    the middle of that exec, the environment is empty. So this also waits for the new
    program's command line, which the kernel sets up together with its environment.
    """
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            cmdline = environ = b""
        if cmdline.split(b"\0")[0] == program and secret.encode() in environ:
            return
        time.sleep(0.02)
    raise AssertionError(f"pid {pid} did not exec {program!r} with the secret within 10 s")


def test_host_process_environ_is_unreadable(pool: SandboxPool, unisolated: Sandbox) -> None:
    secret = f"posttrain-proc-secret-{uuid.uuid4().hex}"
    # a host process with the sandbox's own uid: the easiest one for a task to inspect
    host = subprocess.Popen(
        [*layers._drop_uid_prefix(), "sleep", "60"], env={"POSTTRAIN_TEST_SECRET": secret}
    )
    try:
        _wait_for_environ(host.pid, secret)  # until exec has given it its environment
        code = f"""
        import os
        for pid in ("1", "{host.pid}", *[p for p in os.listdir("/proc") if p.isdigit()]):
            try:
                with open(f"/proc/{{pid}}/environ", "rb") as f:
                    print(pid, f.read().replace(b"\\0", b" ").decode(errors="replace"))
            except OSError as exc:
                print(pid, "denied", type(exc).__name__)
        """
        control = unisolated.run_python(textwrap.dedent(code), timeout=5)
        assert f"{host.pid} POSTTRAIN_TEST_SECRET={secret}" in control.stdout
        result = run_attack(pool, code)
        assert secret not in result.stdout
        assert "POSTTRAIN_TEST_SECRET" not in result.stdout
        assert f"{host.pid} denied FileNotFoundError" in result.stdout  # not even listed
    finally:
        host.kill()
        host.wait()


def test_repo_checkout_is_not_mounted(pool: SandboxPool) -> None:
    repo = str(Path(__file__).resolve().parents[2])
    probe = f"import os; print(os.path.exists({repo!r}), sorted(os.listdir('/opt/posttrain')))"
    result = run_attack(pool, probe)
    # only the packages and the server's own code are bound (read-only), elsewhere
    assert result.stdout.strip() == "False ['inside', 'site-packages']"


# ----------------------------------------------------------------------------- host writes


def test_writes_outside_the_workspace_do_not_reach_the_host(
    pool: SandboxPool, unisolated: Sandbox, tmp_path: Path
) -> None:
    scratch = tmp_path / "outside" / "pwned.txt"
    scratch.parent.mkdir()
    write = "open({path!r}, 'a').write('# pwned\\n')"
    control = unisolated.run_python(write.format(path=str(scratch)), timeout=5)
    assert control.ok and scratch.read_text() == "# pwned\n", "control: the write lands"
    scratch.unlink()

    usr = Path("/usr/posttrain-pwned")
    pth = Path(layers.site_packages()) / "posttrain_pwned.pth"  # the host path, and as bound:
    pth_inside = f"{layers.SANDBOX_SITE}/posttrain_pwned.pth"
    before = {p: _digest(p) for p in (HOST_CONFIG, layers.INSIDE_DIR / "server.py")}
    targets = [scratch, usr, pth, pth_inside, HOST_CONFIG, f"{layers.SANDBOX_OPT}/inside/server.py"]
    attack = "\n".join(
        f"try:\n    {write.format(path=str(t))}\n    print('WROTE', {str(t)!r})\n"
        f"except OSError as exc:\n    print('denied', type(exc).__name__)"
        for t in targets
    )
    result = run_attack(pool, attack)
    assert "WROTE" not in result.stdout and result.stdout.count("denied") == len(targets)
    assert not scratch.exists() and not usr.exists() and not pth.exists()
    assert {p: _digest(p) for p in before} == before


# ----------------------------------------------------------------------------- network


def _accepted(server: socket.socket) -> bytes | None:
    try:
        conn, _ = server.accept()
    except TimeoutError:
        return None
    with conn:
        conn.settimeout(1.0)
        return conn.recv(64)


def test_tcp_to_host_loopback_listener_is_blocked(pool: SandboxPool, unisolated: Sandbox) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(0.5)
        code = f"""
        import socket
        try:
            s = socket.create_connection(("127.0.0.1", {server.getsockname()[1]}), timeout=1)
            s.sendall(b"escaped"); s.close(); print("CONNECTED")
        except OSError as exc:
            print("blocked", exc)
        """
        control = unisolated.run_python(textwrap.dedent(code), timeout=5)
        assert "CONNECTED" in control.stdout and _accepted(server) == b"escaped"

        result = run_attack(pool, code)
        assert "CONNECTED" not in result.stdout and "blocked" in result.stdout
        assert _accepted(server) is None


def test_udp_to_host_loopback_socket_is_blocked(pool: SandboxPool, unisolated: Sandbox) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        server.settimeout(0.5)
        code = f"""
        import socket
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"escaped", ("127.0.0.1", {server.getsockname()[1]})); print("SENT")
        except OSError as exc:
            print("blocked", exc)
        """
        control = unisolated.run_python(textwrap.dedent(code), timeout=5)
        assert "SENT" in control.stdout and server.recv(64) == b"escaped"

        result = run_attack(pool, code)
        assert "SENT" not in result.stdout and "blocked" in result.stdout
        with pytest.raises(TimeoutError):
            server.recv(64)


SOCKET_PROBE = """
import socket
try:
    socket.socket({family}, {kind}, {proto}).close(); print("OPENED")
except OSError as exc:
    print("blocked", exc.errno)
"""


@pytest.mark.parametrize(
    ("family", "kind", "proto"),
    [
        ("socket.AF_INET", "socket.SOCK_RAW", "socket.IPPROTO_ICMP"),
        ("socket.AF_PACKET", "socket.SOCK_RAW", "0"),
        ("socket.AF_NETLINK", "socket.SOCK_RAW", "0"),  # NETLINK_ROUTE
        ("socket.AF_INET6", "socket.SOCK_DGRAM", "0"),
    ],
    ids=["raw_ip", "packet", "netlink", "inet6"],
)
def test_non_unix_socket_cannot_be_opened(
    pool: SandboxPool, unisolated: Sandbox, family: str, kind: str, proto: str
) -> None:
    code = SOCKET_PROBE.format(family=family, kind=kind, proto=proto)
    assert "OPENED" in unisolated.run_python(code, timeout=5).stdout  # control: root on the host
    result = run_attack(pool, code)
    assert result.stdout.strip() == f"blocked {errno.EAFNOSUPPORT}"


def test_host_abstract_unix_socket_is_unreachable(pool: SandboxPool, unisolated: Sandbox) -> None:
    name = f"\0posttrain-test-host-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(name)
        server.listen(8)
        server.settimeout(0.5)
        code = f"""
        import socket
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect({name!r}); s.sendall(b"escaped"); s.close(); print("CONNECTED")
        except OSError as exc:
            print("blocked", exc)
        """
        control = unisolated.run_python(textwrap.dedent(code), timeout=5)
        assert "CONNECTED" in control.stdout and _accepted(server) == b"escaped"

        result = run_attack(pool, code)
        assert "CONNECTED" not in result.stdout and "Connection refused" in result.stdout
        assert _accepted(server) is None


# ----------------------------------------------------------------------------- memory


def test_python_memory_bomb_is_contained(pool: SandboxPool) -> None:
    attack = "hog = []\nwhile True:\n    hog.append(bytearray(10**7))"
    result = run_attack(pool, attack, timeout=5)  # cgroup reclaim can slow it under host load
    assert result.oom and result.exit_code != 0 and "MemoryError" in result.stderr


def test_numpy_memory_bomb_is_contained(pool: SandboxPool) -> None:
    attack = """
    import numpy as np
    hog = []
    while True:
        hog.append(np.ones(2 * 10**6))
    """
    result = run_attack(pool, attack, timeout=5)
    assert result.oom and result.exit_code != 0 and "MemoryError" in result.stderr


def test_c_malloc_bomb_is_contained(pool: SandboxPool) -> None:
    attack = """
    import ctypes
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    mib = 0
    while True:
        block = libc.malloc(32 << 20)
        if not block:
            print(mib)
            raise MemoryError(f"malloc returned NULL after {mib} MiB")
        ctypes.memset(block, 1, 32 << 20)  # touch it: really resident
        mib += 32
    """
    result = run_attack(pool, attack)
    assert result.oom and "malloc returned NULL" in result.stderr
    assert int(result.stdout) <= SPEC.memory_mb


SPREAD_BOMB = """
import os, time
kids = []
for _ in range(4):  # 4 x 400 MiB: each under the 512 MiB rlimit, together over the cgroup cap
    pid = os.fork()
    if pid == 0:  # the OOM killer's first pick, so the parent lives to report
        open("/proc/self/oom_score_adj", "w").write("1000")
        hog = b"\\1" * (400 << 20)
        time.sleep(0.5)
        os._exit(0)
    kids.append(pid)
print(*[os.waitpid(pid, 0)[1] for pid in kids])
"""
needs_memory_cgroup = pytest.mark.skipif(
    layers.cgroup_v1_root("memory") is None,
    reason="no writable cgroup v1 memory hierarchy: only the per-process rlimit applies",
)


@needs_memory_cgroup
def test_memory_spread_over_processes_hits_the_cgroup_cap(pool: SandboxPool) -> None:
    def high_water(sb: Sandbox, result: ExecResult) -> None:
        peak = _cgroup_file(sb, "memory", "memory.max_usage_in_bytes")
        limit = _cgroup_file(sb, "memory", "memory.limit_in_bytes")
        assert peak is not None and limit is not None
        assert int(peak.read_text()) <= int(limit.read_text())

    result = run_attack(pool, SPREAD_BOMB, timeout=10, inspect=high_water)
    statuses = [int(s) for s in result.stdout.split()]
    assert len(statuses) == 4 and signal.SIGKILL in statuses, result  # the OOM killer took some
    assert result.oom


@needs_memory_cgroup
def test_oom_kill_inside_a_task_is_reported(fresh_pool: SandboxPool) -> None:
    result = run_attack(fresh_pool, SPREAD_BOMB, timeout=10)
    assert result.exit_code == 0 and signal.SIGKILL in [int(s) for s in result.stdout.split()]
    assert result.oom


@needs_memory_cgroup
def test_oom_kill_is_not_blamed_on_the_next_task(fresh_pool: SandboxPool) -> None:
    with fresh_pool.lease() as sb:
        sb.run_python(textwrap.dedent(SPREAD_BOMB), timeout=10)
    with fresh_pool.lease() as sb:
        innocent = sb.run_python("raise SystemExit(1)", timeout=2)
    assert innocent.exit_code == 1 and not innocent.oom


# ----------------------------------------------------------------------------- time


def _assert_killed_on_time(result: ExecResult, timeout: float) -> None:
    assert result.timed_out and result.signal == signal.SIGKILL and not result.ok
    assert timeout <= result.wall_s <= timeout + 1.0


def test_cpu_spin_is_killed_at_the_timeout(pool: SandboxPool) -> None:
    result = run_attack(pool, "while True:\n    pass", timeout=1.0)
    _assert_killed_on_time(result, 1.0)


def test_multithreaded_spin_is_killed_at_the_timeout(pool: SandboxPool) -> None:
    attack = """
    import threading
    def spin():
        while True:
            pass
    for _ in range(8):
        threading.Thread(target=spin, daemon=True).start()
    spin()
    """
    result = run_attack(pool, attack, timeout=1.0)
    _assert_killed_on_time(result, 1.0)
    if layers.cgroup_v1_root("cpu") is not None:
        assert result.cpu_s <= 1.0 * SPEC.cpu_cores + 0.6  # the cgroup quota holds it to one core


def test_sleep_ignoring_sigterm_is_killed_at_the_timeout(pool: SandboxPool) -> None:
    attack = """
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(1000)
    """
    result = run_attack(pool, attack, timeout=1.0)
    _assert_killed_on_time(result, 1.0)
    assert result.cpu_s < 0.5


def test_blocking_fifo_read_is_killed_at_the_timeout(pool: SandboxPool) -> None:
    attack = "import os\nos.mkfifo('trap')\nopen('trap').read()"
    _assert_killed_on_time(run_attack(pool, attack, timeout=1.0), 1.0)


def test_blocking_read_of_an_unclosed_pipe_is_killed_at_the_timeout(pool: SandboxPool) -> None:
    attack = "import os, sys\nsys.stdin.read()\nr, w = os.pipe()\nos.read(r, 1)"
    result = run_attack(pool, attack, timeout=1.0, stdin="x" * 200_000)
    _assert_killed_on_time(result, 1.0)


# ----------------------------------------------------------------------------- processes


def test_fork_bomb_is_contained(pool: SandboxPool) -> None:
    attack = """
    import os, time
    def bomb():
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
    for _ in range(1000):
        try:
            if os.fork() == 0:
                bomb()
        except OSError as exc:
            print("fork refused", exc.errno)
            break
    time.sleep(0.3)
    """
    result = run_attack(pool, attack, timeout=3)
    assert result.stdout.strip() == f"fork refused {errno.EAGAIN}"


def test_thread_bomb_is_contained(pool: SandboxPool) -> None:
    attack = """
    import threading, time
    started = 0
    try:
        while True:
            threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
            started += 1
    except RuntimeError as exc:
        print(started, exc)
    """
    result = run_attack(pool, attack)
    started, why = result.stdout.split(" ", 1)
    assert int(started) < SPEC.max_processes and "can't start new thread" in why


def test_double_fork_daemon_does_not_outlive_its_task(pool: SandboxPool) -> None:
    attack = """
    import os, time
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:  # the daemon: orphaned, own session, outlives the task's main process
            os.write(w, str(os.getpid()).encode())
            os.close(w)
            time.sleep(0.5)
            for path in ("/workspace/late.txt", "/tmp/late.txt"):
                open(path, "w").write("I survived")
            while True:
                time.sleep(1)
        os._exit(0)
    os.close(w)
    print(os.read(r, 32).decode())
    os.wait()
    """

    def later(sb: Sandbox, result: ExecResult) -> None:
        time.sleep(1.0)  # the daemon would have written by now
        assert sb.list_files() == []
        check = sb.run_python(
            "import os; print(os.listdir('/tmp'), os.path.exists(f'/proc/{int(input())}'))",
            stdin=result.stdout,
        )
        assert check.stdout.strip() == "[] False"

    result = run_attack(pool, attack, inspect=later)
    assert result.ok and result.stdout.strip().isdigit()


def test_background_shell_job_does_not_outlive_its_task(pool: SandboxPool) -> None:
    attack = shell("nohup sh -c 'sleep 0.5; echo survived > /workspace/late.txt' >/dev/null 2>&1 &")

    def later(sb: Sandbox, result: ExecResult) -> None:
        time.sleep(1.0)
        assert sb.list_files() == []

    assert run_attack(pool, attack, inspect=later).ok


def test_killing_its_own_fork_server_is_reported_and_recycled(pool: SandboxPool) -> None:
    # As pid 1 the server takes only signals it handles: SIGINT (KeyboardInterrupt) ends it.
    recycled = pool.stats.recycled
    attack = "import os, signal, time\nos.kill(os.getppid(), signal.SIGINT)\ntime.sleep(5)"
    result = run_attack(pool, attack, sandbox_dies=True)
    assert result.exit_code == -1 and "gone" in (result.error or "")
    assert pool.stats.recycled == recycled + 1


def test_stopping_or_sigkilling_its_own_fork_server_has_no_effect(pool: SandboxPool) -> None:
    recycled = pool.stats.recycled
    attack = """
    import os, signal, time
    for s in (signal.SIGSTOP, signal.SIGKILL):
        os.kill(os.getppid(), s)
    time.sleep(0.2)
    print("served")
    """
    assert run_attack(pool, attack).stdout == "served\n"
    assert pool.stats.recycled == recycled


def test_signalling_sandbox_init_is_harmless(pool: SandboxPool) -> None:
    attack = "import os, signal\nfor s in (signal.SIGTERM, signal.SIGKILL):\n    os.kill(1, s)\nprint('alive')"
    assert run_attack(pool, attack).stdout == "alive\n"


def test_kill_all_signal_stays_inside_the_sandbox(pool: SandboxPool) -> None:
    # a host process with the sandbox's uid: kill(-1) would reach it without a pid namespace
    canary = subprocess.Popen([*layers._drop_uid_prefix(), "sleep", "60"])
    victim, bystander = pool.acquire(timeout=30), pool.acquire(timeout=30)
    try:
        bystander_pids = bystander.pids
        attack = "import os\ntry:\n    os.kill(-1, 9)\nexcept OSError as exc:\n    print(exc.errno)"
        result = victim.run_python(attack, timeout=2)
        # No one to signal: pid 1 (the fork-server) and the caller are spared.
        assert result.stdout == f"{errno.ESRCH}\n" and result.error is None, result
        assert canary.poll() is None, "kill(-1) inside the sandbox reached a host process"
        assert bystander.alive and bystander.pids == bystander_pids
        assert bystander.run_python("print('still here')").stdout == "still here\n"
    finally:
        pool.release(victim)
        pool.release(bystander)
        canary.kill()
        canary.wait()
    assert_pool_clean(pool)


def test_segfaulting_interpreter_is_reported(pool: SandboxPool) -> None:
    result = run_attack(pool, "import ctypes\nctypes.string_at(0)")
    assert result.signal == signal.SIGSEGV and result.exit_code == -signal.SIGSEGV


# ----------------------------------------------------------------------------- disk


def test_huge_file_is_capped_by_the_file_size_limit(pool: SandboxPool) -> None:
    attack = """
    with open("big", "wb") as f:
        try:
            while True:
                f.write(b"x" * (1 << 20))
                f.flush()
        except OSError as exc:
            print(exc.errno)
    """

    def size(sb: Sandbox, result: ExecResult) -> None:
        assert len(sb.read_file("big", text=False)) <= SPEC.max_file_mb << 20

    result = run_attack(pool, attack, inspect=size)
    assert result.stdout.strip() == str(errno.EFBIG)


def test_huge_file_from_a_shell_command_is_capped(pool: SandboxPool) -> None:
    attack = shell("head -c 100000000 /dev/zero > big; echo rc=$?; wc -c < big")
    result = run_attack(pool, attack)
    rc, size = result.stdout.split()
    assert rc != "rc=0" and int(size) <= SPEC.max_file_mb << 20


def test_filling_tmp_and_workspace_is_capped_by_the_tmpfs_size(pool: SandboxPool) -> None:
    attack = """
    import errno
    for folder in ("/tmp", "/workspace"):
        written = 0
        try:
            for i in range(1000):
                with open(f"{folder}/fill{i}", "wb") as f:
                    f.write(b"x" * (4 << 20))
                written += 4 << 20
        except OSError as exc:
            print(folder, exc.errno == errno.ENOSPC, written)
    """
    result = run_attack(pool, attack)
    lines = [line.split() for line in result.stdout.splitlines()]
    assert [line[:2] for line in lines] == [["/tmp", "True"], ["/workspace", "True"]]
    assert all(int(line[2]) <= SPEC.tmpfs_mb << 20 for line in lines)


def test_inode_exhaustion_is_bounded_and_wiped(pool: SandboxPool) -> None:
    attack = """
    import os, time
    end, n = time.monotonic() + 1.0, 0
    try:
        while time.monotonic() < end:
            for _ in range(500):
                open(f"f{n}", "w").close()
                n += 1
    except OSError as exc:
        print("refused", exc.errno)
    print(n)
    """
    result = run_attack(pool, attack, timeout=3.0)
    assert not result.timed_out and int(result.stdout.split()[-1]) > 0


def test_deep_directory_tree_does_not_wedge_the_pool(fresh_pool: SandboxPool) -> None:
    attack = """
    import os
    for _ in range(3000):
        os.mkdir("d")
        os.chdir("d")
    open("bottom.txt", "w").write("x")
    """

    def host_calls(sb: Sandbox, result: ExecResult) -> None:
        for call in (sb.list_files, sb.snapshot):
            start = time.monotonic()
            with contextlib.suppress(SandboxError):  # refused is fine; hanging or dying is not
                call()
            assert time.monotonic() - start < 10 and sb.alive

    assert run_attack(fresh_pool, attack, inspect=host_calls).ok


def test_locked_workspace_is_recovered_by_the_pool(fresh_pool: SandboxPool) -> None:
    attack = "import os\nopen('a', 'w').write('x')\nos.chmod('/workspace', 0)\nos.chmod('/tmp', 0)"
    assert run_attack(fresh_pool, attack).ok


# ----------------------------------------------------------------------------- output


def test_output_flood_without_newlines_is_truncated(pool: SandboxPool) -> None:
    attack = "import os\nwhile True:\n    os.write(1, b'x' * 65536)"
    result = run_attack(pool, attack, timeout=1.0)
    assert result.timed_out and result.stdout_truncated
    assert 0 < len(result.stdout) <= SPEC.output_cap


def test_binary_stderr_flood_is_truncated(pool: SandboxPool) -> None:
    attack = "import os\nos.write(2, bytes(range(256)) * 40960)\nos.write(1, b'\\xff' * 10**6)"
    result = run_attack(pool, attack)
    assert result.ok and result.stdout_truncated and result.stderr_truncated
    assert len(result.stdout) <= SPEC.output_cap and len(result.stderr) <= SPEC.output_cap


def test_forged_results_do_not_change_the_true_exit_code(pool: SandboxPool) -> None:
    attack = """
    import json, os, struct, sys
    body = json.dumps({"exit_code": 0, "signal": None, "timed_out": False, "n_out": 4,
                       "stdout_bytes": 4, "stderr_bytes": 0, "cpu_s": 0, "wall_s": 0}).encode()
    frame = struct.pack("!II", len(body), 4) + body + b"PASS"
    sys.stdout.buffer.write(frame); sys.stdout.flush()
    print("PASS\\nexit_code=0\\n1 passed in 0.01s")
    reached = []
    for fd in range(3, 21):
        try:
            os.write(fd, frame); reached.append(fd)
        except OSError:
            pass
    ppid = os.getppid()
    try:
        server_fds = os.listdir(f"/proc/{ppid}/fd")
    except OSError:  # the server is not dumpable: its fd table is closed to tasks
        server_fds = []
    for fd in server_fds:  # and a socket could not be reopened through /proc anyway
        try:
            with open(f"/proc/{ppid}/fd/{fd}", "wb") as f:
                f.write(frame)
            if os.readlink(f"/proc/{ppid}/fd/{fd}").startswith("socket:"):
                reached.append(f"socket {fd}")
        except OSError:
            pass
    print("reached", reached)
    os._exit(7)
    """
    result = run_attack(pool, attack)
    assert result.exit_code == 7 and not result.ok and result.signal is None
    assert "PASS" in result.stdout and "reached []" in result.stdout


# ----------------------------------------------------------------------------- privileges


def test_setuid_binaries_grant_no_privilege(pool: SandboxPool) -> None:
    binaries = ["/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount"]
    present = [b for b in binaries if os.path.exists(b) and os.stat(b).st_mode & stat.S_ISUID]
    if not present:
        pytest.skip("no setuid-root binary to try")
    attack = shell("""
        /usr/bin/su root -c 'id -u' </dev/null; echo "su=$?"
        /usr/bin/passwd -d root </dev/null; echo "passwd=$?"
        /usr/bin/mount -t tmpfs none /tmp; echo "mount=$?"
        echo "uid=$(id -ru) euid=$(id -u)"
        grep -E '^(NoNewPrivs|CapEff|CapPrm|CapBnd)' /proc/self/status
    """)
    result = run_attack(pool, attack)
    out = result.stdout
    for name in ("su", "passwd", "mount"):
        if f"/usr/bin/{name}" in present:
            assert f"{name}=0" not in out and f"{name}=" in out
    assert f"uid={NOBODY} euid={NOBODY}" in out and "NoNewPrivs:\t1" in out
    assert all(f"{cap}:\t0000000000000000" in out for cap in ("CapEff", "CapPrm", "CapBnd"))
    assert "\n0\n" not in f"\n{out}"  # `su -c 'id -u'` never printed root's uid


@pytest.mark.skipif(not X86_64, reason="the raw clone syscall number is x86_64's")
def test_nested_user_namespace_is_refused(pool: SandboxPool) -> None:
    attack = """
    import ctypes, errno, os, subprocess
    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWUSER = 0x10000000
    print("unshare", libc.unshare(CLONE_NEWUSER), errno.errorcode.get(ctypes.get_errno()))
    pid = libc.syscall(56, CLONE_NEWUSER | 17, 0, 0, 0, 0)  # raw clone(CLONE_NEWUSER|SIGCHLD)
    if pid == 0:
        os._exit(0)
    print("clone", pid, errno.errorcode.get(ctypes.get_errno()))
    cli = subprocess.run(["unshare", "-U", "-r", "id", "-u"], capture_output=True, text=True)
    print("cli", cli.returncode, cli.stdout.strip())
    """
    result = run_attack(pool, attack)
    lines = result.stdout.splitlines()
    assert lines[:2] == ["unshare -1 EPERM", "clone -1 EPERM"]
    assert lines[2].startswith("cli ") and lines[2].split()[1] != "0"  # `unshare -U` failed


def test_mount_syscalls_are_refused(pool: SandboxPool) -> None:
    attack = """
    import ctypes, errno
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
    print("mount", r, errno.errorcode.get(ctypes.get_errno()))
    r = libc.umount2(b"/usr", 2)  # MNT_DETACH the read-only /usr
    print("umount2", r, errno.errorcode.get(ctypes.get_errno()))
    """
    result = run_attack(pool, attack)
    assert result.stdout.splitlines() == ["mount -1 EPERM", "umount2 -1 EPERM"]


@pytest.mark.skipif(not X86_64, reason="the process_vm_readv number is x86_64's")
def test_ptrace_of_the_fork_server_is_refused(pool: SandboxPool) -> None:
    attack = """
    import ctypes, errno, os
    libc = ctypes.CDLL(None, use_errno=True)
    for target in (os.getppid(), 1):
        r = libc.ptrace(16, target, None, None)  # PTRACE_ATTACH
        print("attach", r, errno.errorcode.get(ctypes.get_errno()))
    r = libc.syscall(310, os.getppid(), None, 0, None, 0, 0)  # process_vm_readv
    print("vm_readv", r, errno.errorcode.get(ctypes.get_errno()))
    """
    result = run_attack(pool, attack)
    assert result.stdout.splitlines() == ["attach -1 EPERM"] * 2 + ["vm_readv -1 EPERM"]


SYSCALLS_X86_64 = {  # name: (number, arguments that would succeed or fail differently if allowed)
    "bpf": (321, (0, 0, 0)),
    "keyctl": (250, (0, -3, 0, 0, 0)),  # KEYCTL_GET_KEYRING_ID of the session keyring
    "add_key": (248, (b"user", b"k", b"v", 1, -3)),
    "perf_event_open": (298, (0, 0, -1, -1, 0)),
    "io_uring_setup": (425, (1, 0)),
    "userfaultfd": (323, (0,)),
    "open_by_handle_at": (304, (-100, 0, 0)),
}


@pytest.mark.skipif(not X86_64, reason="syscall numbers are x86_64's")
@pytest.mark.parametrize("name", sorted(SYSCALLS_X86_64))
def test_kernel_attack_surface_syscall_is_denied(pool: SandboxPool, name: str) -> None:
    number, args = SYSCALLS_X86_64[name]
    attack = f"""
    import ctypes, errno
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.syscall({number}, *{args!r})
    print(r, errno.errorcode.get(ctypes.get_errno()))
    """
    assert run_attack(pool, attack).stdout == "-1 EPERM\n"


SERVER_SETTINGS = {
    "rlimit": "import resource; resource.prlimit(ppid, resource.RLIMIT_NOFILE, (4, 4))",
    "nice": "os.setpriority(os.PRIO_PROCESS, ppid, 19)",
    "nice_all_of_uid": "os.setpriority(os.PRIO_USER, 0, 19)",
    "affinity": "os.sched_setaffinity(ppid, {0})",
    "scheduler": "os.sched_setscheduler(ppid, os.SCHED_IDLE, os.sched_param(0))",
}


@pytest.mark.parametrize("setting", sorted(SERVER_SETTINGS))
def test_task_cannot_change_the_fork_servers_settings(pool: SandboxPool, setting: str) -> None:
    attack = f"""
    import os
    ppid = os.getppid()
    try:
        {SERVER_SETTINGS[setting]}
        print("CHANGED")
    except OSError as exc:
        print("denied", exc.errno)
    """
    assert run_attack(pool, attack).stdout.startswith("denied")


def test_task_may_still_lower_its_own_limits_and_priority(pool: SandboxPool) -> None:
    own = """
    import os, resource
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    os.setpriority(os.PRIO_PROCESS, 0, 5)
    os.sched_setaffinity(0, {0})
    print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], os.getpriority(os.PRIO_PROCESS, 0))
    """
    assert run_attack(pool, own).stdout == "64 5\n"


def test_locked_files_are_still_snapshotted_and_read(fresh_pool: SandboxPool) -> None:
    attack = "import os\nopen('secret.txt', 'w').write('answer')\nos.chmod('secret.txt', 0)"

    def read_back(sb: Sandbox, result: ExecResult) -> None:
        assert sb.read_file("secret.txt") == "answer"
        assert sb.snapshot().files() == {"secret.txt": b"answer"}

    run_attack(fresh_pool, attack, inspect=read_back)


@pytest.mark.skipif(not X86_64, reason="x86 machine code")
@pytest.mark.parametrize("abi", ["x32", "i386"])
def test_foreign_syscall_abi_cannot_bypass_seccomp(pool: SandboxPool, abi: str) -> None:
    attack = f"""
    import ctypes, mmap, struct
    if {abi!r} == "x32":  # keyctl(KEYCTL_GET_KEYRING_ID, session) with the x32 bit set
        r = ctypes.CDLL(None).syscall(0x40000000 | 250, 0, -3, 0, 0, 0)
    else:  # the same keyctl through `int 0x80` (i386 number 288)
        code = (b"\\x53\\xb8" + struct.pack("<i", 288) + b"\\xbb" + struct.pack("<i", 0)
                + b"\\xb9" + struct.pack("<i", -3) + b"\\x31\\xd2\\xcd\\x80\\x5b\\xc3")
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        r = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
    print("returned", r)
    """
    result = run_attack(pool, attack)
    assert "returned" not in result.stdout
    assert result.signal in (signal.SIGSYS, signal.SIGSEGV)  # killed by seccomp (or no ia32)


def test_tiocsti_terminal_injection_is_refused(pool: SandboxPool) -> None:
    attack = """
    import fcntl, os, termios
    def inject(fd, what):
        try:
            fcntl.ioctl(fd, termios.TIOCSTI, b"x"); print("INJECTED", what)
        except OSError as exc:
            print(what, exc.errno)
    for fd in (0, 1, 2):
        inject(fd, f"fd{fd}")
    for path in ("/dev/tty", "/dev/ptmx"):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError as exc:
            print(path, exc.errno)
            continue
        inject(fd, path)
    """
    result = run_attack(pool, attack)
    assert "INJECTED" not in result.stdout
    assert [f"fd{fd} {errno.EPERM}" in result.stdout for fd in (0, 1, 2)] == [True] * 3
    assert f"/dev/tty {errno.ENXIO}" in result.stdout  # no controlling terminal at all


# ----------------------------------------------------------------------------- environment


def test_host_environment_does_not_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"posttrain-env-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("POSTTRAIN_TEST_SECRET", secret)  # before any sandbox exists
    code = """
    import os
    print(os.environ.get("POSTTRAIN_TEST_SECRET"))
    for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self"]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                print(pid, f.read().replace(b"\\0", b" ").decode(errors="replace"))
        except OSError:
            pass
    """
    with Sandbox(SPEC, isolation="none") as control:
        assert secret in control.run_python(textwrap.dedent(code), timeout=5).stdout
    with SandboxPool(size=1, spec=SPEC) as pool:
        result = run_attack(pool, code)
    assert result.stdout.startswith("None\n")
    assert secret not in result.stdout and "POSTTRAIN_TEST_SECRET" not in result.stdout


# ----------------------------------------------------------------------------- host-read files


def test_symlinks_in_the_workspace_are_not_followed_by_the_host(pool: SandboxPool) -> None:
    attack = """
    import os
    open("/tmp/secret.txt", "w").write("TMP-SECRET-CONTENT")
    os.symlink("/etc/passwd", "link")
    os.symlink("/proc/self/environ", "envlink")
    os.symlink("/tmp/secret.txt", "tmplink")
    os.symlink("/etc", "etcdir")
    os.makedirs("sub")
    os.symlink("/tmp", "sub/up")
    open("real.txt", "w").write("ok")
    """

    def host_reads(sb: Sandbox, result: ExecResult) -> None:
        for path in ("link", "envlink", "tmplink", "etcdir/ld.so.cache", "sub/up/secret.txt"):
            with pytest.raises(ValueError, match="symlink"):
                sb.read_file(path)
        with pytest.raises(ValueError, match="symlink"):
            sb.write_file("etcdir/pwned", "x")
        assert sb.list_files() == ["real.txt"]
        snap = sb.snapshot()
        assert snap.files() == {"real.txt": b"ok"}
        assert b"TMP-SECRET-CONTENT" not in snap.archive and b"PYTHONPATH=" not in snap.archive

    assert run_attack(pool, attack, inspect=host_reads).ok


def test_fifo_in_the_workspace_does_not_hang_host_reads(pool: SandboxPool) -> None:
    def host_reads(sb: Sandbox, result: ExecResult) -> None:
        start = time.monotonic()
        with pytest.raises(ValueError, match="not a regular file"):
            sb.read_file("result.txt")
        assert sb.list_files() == [] and sb.snapshot().files() == {}
        assert time.monotonic() - start < 2.0

    assert run_attack(pool, "import os\nos.mkfifo('result.txt')", inspect=host_reads).ok


# ----------------------------------------------------------------------------- other sandboxes


def test_sandboxes_cannot_see_each_other(pool: SandboxPool) -> None:
    listener_code = textwrap.dedent("""
    import os, socket
    open("/workspace/secretA", "w").write("A"); open("/tmp/secretA", "w").write("A")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\\0posttrain-test"); server.listen(8)
    me = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    me.connect("\\0posttrain-test"); server.accept(); print("self-connect ok", flush=True)
    server.settimeout(1.5)
    try:
        server.accept(); print("PEER CONNECTED")
    except TimeoutError:
        print("no peer")
    """)
    prober_code = textwrap.dedent("""
    import os, socket
    print(os.listdir("/workspace"), os.listdir("/tmp"))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\\0posttrain-test"); print("CONNECTED")
    except OSError as exc:
        print("refused", exc.errno)
    print(len([p for p in os.listdir("/proc") if p.isdigit()]))
    """)
    first, second = pool.acquire(timeout=30), pool.acquire(timeout=30)
    try:
        assert first.name != second.name
        results: dict[str, ExecResult] = {}
        thread = threading.Thread(
            target=lambda: results.update(a=first.run_python(listener_code, timeout=3))
        )
        thread.start()
        time.sleep(0.5)  # the listener is up (tasks start in ~10 ms)
        probe = second.run_python(prober_code, timeout=3)
        thread.join()
        listener = results["a"]
        assert listener.stdout == "self-connect ok\nno peer\n", listener  # control + contained
        assert probe.stdout.splitlines() == [
            "[] []",
            f"refused {errno.ECONNREFUSED}",
            "2",  # the fork-server (pid 1) and this task: not the listener
        ], probe
    finally:
        pool.release(first)
        pool.release(second)
    assert_pool_clean(pool)


# ----------------------------------------------------------------------------- state that must not outlive a task


@pytest.mark.parametrize("path", ["/dev/shm/x", "/x", "/etc/x", "/opt/posttrain/x", "/work/x"])
def test_files_outside_workspace_and_tmp_do_not_persist(fresh_pool: SandboxPool, path: str) -> None:
    attack = f"""
    try:
        open({path!r}, "w").write("left for the next task")
    except OSError as exc:
        print("refused", exc.errno)
    """
    run_attack(fresh_pool, attack)


IPC_CREATE = {
    "sysv_shm": "print(libc.shmget(0x7074, 4096, 0o1666))",
    "sysv_msg": "print(libc.msgget(0x7074, 0o1666))",
    "posix_mqueue": "q = libc.mq_open(b'/posttrain-test', os.O_CREAT | os.O_RDWR, 0o600, None)\n"
    "print(q, libc.mq_send(q, b'hello', 5, 0))",
}
IPC_FIND = {
    "sysv_shm": "print('FOUND' if libc.shmget(0x7074, 0, 0o666) >= 0 else 'gone')",
    "sysv_msg": "print('FOUND' if libc.msgget(0x7074, 0o666) >= 0 else 'gone')",
    "posix_mqueue": "print('FOUND' if libc.mq_open(b'/posttrain-test', os.O_RDWR, 0, None) >= 0 "
    "else 'gone')",
}


@pytest.mark.parametrize("kind", sorted(IPC_CREATE))
def test_ipc_objects_do_not_persist_across_tasks(fresh_pool: SandboxPool, kind: str) -> None:
    head = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    with fresh_pool.lease() as sb:
        created = sb.run_python(head + IPC_CREATE[kind], timeout=2)
        assert created.ok, created
        if created.stdout.startswith("-1"):  # refused outright (seccomp denies mq_open)
            assert kind == "posix_mqueue"
    with fresh_pool.lease() as sb:
        assert sb.run_python(head + IPC_FIND[kind], timeout=2).stdout == "gone\n"
    assert_pool_clean(fresh_pool)


def test_fork_server_memory_is_not_readable_by_tasks(pool: SandboxPool) -> None:
    attack = """
    import os
    ppid = os.getppid()
    try:
        with open(f"/proc/{ppid}/maps") as maps:
            heap = next(line for line in maps if line.rstrip().endswith("[heap]"))
        lo = int(heap.split("-")[0], 16)
        with open(f"/proc/{ppid}/mem", "rb", 0) as mem:
            mem.seek(lo)
            print("READ", len(mem.read(4096)))
    except OSError as exc:
        print("denied", exc.errno)
    """
    result = run_attack(pool, attack)
    assert result.stdout.startswith("denied"), result.stdout


def test_fork_server_memory_cannot_be_patched_by_a_task(fresh_pool: SandboxPool) -> None:
    implant = r"""
    import os, re
    ppid, patched = os.getppid(), 0
    try:
        maps, mem = open(f"/proc/{ppid}/maps"), open(f"/proc/{ppid}/mem", "r+b", 0)
    except OSError as exc:
        print("denied", exc.errno)
        raise SystemExit(0)
    with maps, mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "rw" not in perms:
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(lo)
                chunk = mem.read(hi - lo)
            except OSError:
                continue
            for m in re.finditer(b"C\\.UTF-8\x00", chunk):
                mem.seek(lo + m.start())
                mem.write(b"PWNED!!")
                patched += 1
    print(patched)
    """
    run_attack(fresh_pool, implant)
    with fresh_pool.lease() as sb:
        assert sb.run_python("import os; print(os.environ['LANG'])").stdout == "C.UTF-8\n"


def test_list_files_does_not_silently_hide_locked_folders(fresh_pool: SandboxPool) -> None:
    attack = "import os\nos.mkdir('sub')\nopen('sub/a', 'w').write('x')\nos.chmod('sub', 0)"

    def listing(sb: Sandbox, result: ExecResult) -> None:
        try:
            files = sb.list_files()
        except SandboxError:
            return  # refusing is honest
        assert files == ["sub/a"]

    run_attack(fresh_pool, attack, inspect=listing)


def test_clean_check_catches_leftovers(fresh_pool: SandboxPool) -> None:
    """The clean check is not vacuous: a leftover file or process fails it."""
    from posttrain.sandbox.session import PythonSession

    with fresh_pool.lease() as sb:
        sb.write_file("left.txt", "x")
        with pytest.raises(AssertionError):
            assert_sandbox_clean(sb)
        sb.reset()
        assert_sandbox_clean(sb)
        with PythonSession(sb) as session:  # a process the server keeps alive between tasks
            assert session.run("x = 1").ok
            with pytest.raises(AssertionError, match="leftover processes"):
                assert_sandbox_clean(sb)
    assert_pool_clean(fresh_pool)


def test_marks_on_the_scratch_folders_and_ipc_limits_do_not_reach_the_next_task(
    fresh_pool: SandboxPool,
) -> None:
    # A task signalling the next one (a GRPO group's rollouts share pooled sandboxes):
    # extended attributes and times on the folders a reset empties, IPC sysctls.
    attack = r"""
    import os
    for d in ("/workspace", "/tmp", "/dev/shm"):
        os.setxattr(d, "user.mark", b"run 1")
        os.utime(d, ns=(4242424242_000000001, 1111111111_123456789))
    for name in ("kernel/shmmax", "kernel/msgmni"):
        try:
            with open("/proc/sys/" + name, "w") as f:
                f.write("1")
        except OSError as exc:
            print("denied", exc.errno)
    """
    result = run_attack(fresh_pool, attack)
    assert result.stdout.split() == ["denied", str(errno.EROFS)] * 2
    with fresh_pool.lease() as sb:
        seen = sb.run_python("import os; print(os.stat('/tmp').st_mtime_ns)").stdout
        assert seen.strip() != "1111111111123456789"


def test_a_snapshot_of_hard_links_is_refused_before_the_host_holds_it(
    fresh_pool: SandboxPool,
) -> None:
    # Each hard link is a full copy in the archive: 8 MB of workspace would cost the host
    # 8 MB x 12 in memory before anything could look at its size.
    attack = r"""
    import os
    with open("big", "wb") as f:
        f.write(os.urandom(1 << 20) * 7)
    for i in range(11):
        os.link("big", f"link{i}")
    """

    def snapshot(sb: Sandbox, result: ExecResult) -> None:
        with pytest.raises(ValueError, match="more than 67108864 bytes as a snapshot"):
            sb.snapshot()  # the default: twice the workspace's 32 MB
        with pytest.raises(ValueError, match="more than 1048576 bytes"):
            sb.snapshot(max_bytes=1 << 20)
        assert sb.alive and sb.list_files()[0] == "big"

    run_attack(fresh_pool, attack, inspect=snapshot)
