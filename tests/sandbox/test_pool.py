"""`SandboxPool`: leases, cleanup between tasks, recycling, thread safety."""

from __future__ import annotations

import errno
import os
import signal
import threading
import time

import pytest

from posttrain.sandbox import SandboxError, SandboxSpec, Snapshot, layers
from posttrain.sandbox.pool import SandboxPool

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")
SPEC = SandboxSpec(memory_mb=512, timeout_s=5)


def test_lease_gives_a_clean_sandbox_each_time() -> None:
    with SandboxPool(size=1, spec=SPEC) as pool:
        with pool.lease() as sb:
            sb.write_file("left.txt", "x")
            sb.run_python("open('/tmp/left', 'w').write('x')")
        with pool.lease() as sb:
            assert sb.list_files() == []
            assert sb.run_python("import os; print(os.listdir('/tmp'))").stdout == "[]\n"
        assert pool.stats.resets == 2 and pool.stats.recycled == 0


def test_background_process_does_not_survive_release() -> None:
    with SandboxPool(size=1, spec=SPEC) as pool:
        with pool.lease() as sb:
            first = sb.pids
            sb.exec("sleep 60 > /dev/null 2>&1 &")
        with pool.lease() as sb:
            assert sb.pids == first  # same warm sandbox, not recycled
            procs = sb.run_python(
                "import os; print([p for p in os.listdir('/proc') if p.isdigit()])"
            )
            assert len(eval(procs.stdout)) <= 3  # init, server, this task


def test_timeout_recycles_the_sandbox() -> None:
    with SandboxPool(size=1, spec=SPEC) as pool:
        with pool.lease() as sb:
            first = sb.name
            assert sb.run_python("while True: pass", timeout=0.3).timed_out
        with pool.lease() as sb:
            assert sb.name != first and sb.run_python("print(1)").ok
        assert pool.stats.recycled == 1 and pool.stats.started == 2


def test_dead_fork_server_is_replaced() -> None:
    with SandboxPool(size=1, spec=SPEC) as pool:
        with pool.lease() as sb:
            # The server is its namespace's pid 1: a task cannot SIGKILL it, the host can.
            threading.Timer(0.3, os.kill, (sb.pids[-1], signal.SIGKILL)).start()
            assert sb.run_python("import time; time.sleep(20)", timeout=10).error
        with pool.lease() as sb:
            assert sb.run_python("print('ok')").stdout == "ok\n"
        assert pool.stats.recycled == 1


def test_sandbox_is_recycled_after_max_tasks() -> None:
    with SandboxPool(size=1, spec=SPEC, max_tasks=3) as pool:
        names = []
        for _ in range(5):
            with pool.lease() as sb:
                sb.run_python("pass")
                names.append(sb.name)
        assert len(set(names[:3])) == 1 and names[3] != names[0]


def test_baseline_is_restored_for_every_lease() -> None:
    base = Snapshot.from_files({"repo/app.py": "X = 1\n"})
    with SandboxPool(size=1, spec=SPEC, baseline=base) as pool:
        with pool.lease() as sb:
            assert sb.list_files() == ["repo/app.py"]
            sb.write_file("repo/app.py", "X = 2\n")
        with pool.lease() as sb:
            assert sb.read_file("repo/app.py") == "X = 1\n"


def test_leases_from_many_threads_never_share_a_sandbox() -> None:
    with SandboxPool(size=2, spec=SPEC) as pool:
        in_use: set[str] = set()
        clashes: list[str] = []
        lock = threading.Lock()

        def worker() -> None:
            for _ in range(10):
                with pool.lease() as sb:
                    with lock:
                        if sb.name in in_use:
                            clashes.append(sb.name)
                        in_use.add(sb.name)
                    assert sb.run_python("print(1)").stdout == "1\n"
                    with lock:
                        in_use.discard(sb.name)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert clashes == [] and pool.stats.leases == 40


def test_acquire_times_out_when_all_are_leased() -> None:
    with (
        SandboxPool(size=1, spec=SPEC) as pool,
        pool.lease(),
        pytest.raises(TimeoutError, match="no sandbox free"),
    ):
        pool.acquire(timeout=0.05)


def test_closed_pool_refuses_leases() -> None:
    pool = SandboxPool(size=1, spec=SPEC)
    pool.close()
    with pytest.raises(SandboxError, match="closed"):
        pool.acquire()


def test_bad_pool_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="size"):
        SandboxPool(size=0)
    with pytest.raises(ValueError, match="max_tasks"):
        SandboxPool(size=1, max_tasks=0)


def test_pool_pids_cover_every_sandbox_tree() -> None:
    def started(pid: int) -> str | None:  # pid plus start time: a reused pid is another process
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return None if fields[0] in ("Z", "X") else fields[19]  # a zombie has exited

    with SandboxPool(size=2, spec=SPEC) as pool:
        before = {pid: started(pid) for pid in pool.pids}
        assert len(before) >= 4  # at least launcher + server per sandbox
    # Inner processes die by PDEATHSIG after their launcher: allow the kernel a moment.
    deadline = time.monotonic() + 10
    while True:
        survivors = [p for p, t in before.items() if t is not None and started(p) == t]
        if not survivors or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert survivors == []


def test_close_wakes_threads_waiting_for_a_sandbox() -> None:
    pool = SandboxPool(size=1, spec=SPEC)
    errors: list[BaseException] = []
    held = pool.acquire()

    def waiter() -> None:
        try:
            pool.acquire()
        except SandboxError as exc:
            errors.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    pool.close()
    thread.join(timeout=5)
    assert not thread.is_alive() and len(errors) == 1
    pool.release(held)
    assert not held.alive


def test_a_sandbox_that_fails_to_restart_stays_in_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    from posttrain.sandbox import SandboxUnavailable
    from posttrain.sandbox.sandbox import Sandbox

    with SandboxPool(size=1, spec=SPEC) as pool:
        real_start = Sandbox._start
        with pool.lease() as sb:
            sb.run_python("while True: pass", timeout=0.3)
            monkeypatch.setattr(
                Sandbox, "_start", lambda self: (_ for _ in ()).throw(SandboxUnavailable("no"))
            )
        monkeypatch.setattr(Sandbox, "_start", real_start)
        with pool.lease(timeout=1) as sb:  # not lost: its next call starts it
            assert sb.run_python("print('back')").stdout == "back\n"


def test_a_restart_failing_with_any_error_keeps_the_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    from posttrain.sandbox.sandbox import Sandbox

    def out_of_fds(self: Sandbox) -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    with SandboxPool(size=1, spec=SPEC) as pool:
        real_start = Sandbox._start
        with pool.lease() as sb:  # release() raises nothing
            sb.run_python("while True: pass", timeout=0.3)
            monkeypatch.setattr(Sandbox, "_start", out_of_fds)
        monkeypatch.setattr(Sandbox, "_start", real_start)  # the shortage is over
        with pool.lease(timeout=1) as sb:
            assert sb.run_python("print('back')").stdout == "back\n"


def test_a_baseline_set_during_a_lease_ends_with_it() -> None:
    with SandboxPool(size=1, spec=SPEC) as pool:
        with pool.lease() as sb:
            sb.set_baseline(Snapshot.from_files({"task1_secret.txt": "answer"}))
            sb.reset()
        with pool.lease() as sb:
            assert sb.list_files() == []
            sb.reset()  # the next task's own resets return to the pool's baseline too
            assert sb.list_files() == []
        assert pool.stats.recycled == 0


def test_a_baseline_set_during_a_lease_ends_with_it_when_recycled() -> None:
    base = Snapshot.from_files({"repo/app.py": "X = 1\n"})
    with SandboxPool(size=1, spec=SPEC, baseline=base) as pool:
        with pool.lease() as sb:
            sb.set_baseline(Snapshot.from_files({"task1_secret.txt": "answer"}))
            assert sb.run_python("while True: pass", timeout=0.3).timed_out
        with pool.lease() as sb:
            assert sb.list_files() == ["repo/app.py"]
        assert pool.stats.recycled == 1


def test_a_sandbox_whose_baseline_fails_at_start_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from posttrain.sandbox import pool as pool_module
    from posttrain.sandbox.sandbox import Sandbox

    started: list[Sandbox] = []

    class Recorded(Sandbox):
        def __init__(self, spec: SandboxSpec | None = None) -> None:
            super().__init__(spec)
            started.append(self)

    monkeypatch.setattr(pool_module, "Sandbox", Recorded)
    with pytest.raises(SandboxError, match="reset failed"):
        SandboxPool(size=1, spec=SPEC, baseline=Snapshot(b"not a tar archive"))
    assert len(started) == 1 and not started[0].alive and started[0].pids == []
