"""`Sandbox`: execution, limits as fields, files, snapshots, restarts, refusal without isolation."""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from posttrain.sandbox import (
    Sandbox,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
    Snapshot,
    layers,
)
from posttrain.sandbox import sandbox as sandbox_module

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with Sandbox(SandboxSpec(memory_mb=512, timeout_s=5, output_cap=1000)) as sandbox:
        yield sandbox


@pytest.fixture(autouse=True)
def _clean(sb: Sandbox) -> None:
    if not sb.alive:
        sb.restart()
    sb.reset()


def test_strongest_mode_is_used(sb: Sandbox) -> None:
    assert sb.mode == layers.best_mode()


def test_run_python_returns_output_and_exit_code(sb: Sandbox) -> None:
    result = sb.run_python("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out and result.error is None and result.wall_s > 0


def test_exception_traceback_shows_only_task_frames(sb: Sandbox) -> None:
    result = sb.run_python("def f():\n    raise KeyError('k')\nf()")
    assert result.exit_code == 1
    assert "KeyError: 'k'" in result.stderr and "server.py" not in result.stderr


def test_exec_argv_and_shell_string(sb: Sandbox) -> None:
    assert sb.exec(["echo", "a b"]).stdout == "a b\n"
    assert sb.exec("echo $((6 * 7)) && exit 4").stdout == "42\n"
    assert sb.exec("exit 4").exit_code == 4


def test_missing_program_exits_127(sb: Sandbox) -> None:
    result = sb.exec(["no-such-program-xyz"])
    assert result.exit_code == 127 and "No such file" in result.stderr


def test_stdin_is_fed_to_the_task(sb: Sandbox) -> None:
    assert sb.exec(["cat"], stdin="hello\n").stdout == "hello\n"
    big = "x" * 300_000
    assert sb.run_python("import sys; print(len(sys.stdin.read()))", stdin=big).stdout == "300000\n"


def test_no_stdin_reads_eof(sb: Sandbox) -> None:
    assert sb.run_python("import sys; print(repr(sys.stdin.read()))").stdout == "''\n"


def test_timeout_is_a_field_not_an_exception(sb: Sandbox) -> None:
    result = sb.run_python("while True: pass", timeout=0.5)
    assert result.timed_out and result.signal == 9 and not result.ok
    assert 0.4 < result.wall_s < 3


def test_output_beyond_the_cap_is_truncated_and_flagged(sb: Sandbox) -> None:
    result = sb.run_python("print('y' * 5000)")
    assert result.stdout_truncated and result.stdout == "y" * 1000
    assert not sb.run_python("print('y')").stdout_truncated


def test_memory_limit_reports_oom(sb: Sandbox) -> None:
    result = sb.run_python("x = bytearray(2 * 1024**3)")
    assert result.oom and result.exit_code != 0


def test_cpu_time_is_measured(sb: Sandbox) -> None:
    result = sb.run_python("s = 0\nfor i in range(3_000_000): s += i")
    assert result.ok and result.cpu_s > 0.05


def test_environment_is_empty_but_for_basics(sb: Sandbox) -> None:
    names = sb.run_python("import os; print(' '.join(sorted(os.environ)))").stdout.split()
    assert set(names) <= {"HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH",
                          "PYTHONUNBUFFERED", "TMPDIR"}  # fmt: skip


def test_write_read_list_files(sb: Sandbox) -> None:
    sb.write_file("pkg/mod.py", "VALUE = 7\n")
    sb.write_file("data.bin", b"\x00\xff")
    assert sb.list_files() == ["data.bin", "pkg/mod.py"]
    assert sb.read_file("pkg/mod.py") == "VALUE = 7\n"
    assert sb.read_file("data.bin", text=False) == b"\x00\xff"
    assert sb.run_python("from pkg.mod import VALUE; print(VALUE)").stdout == "7\n"


def test_files_written_by_tasks_are_readable(sb: Sandbox) -> None:
    sb.exec("mkdir -p out && printf done > out/r.txt")
    assert sb.read_file("out/r.txt") == "done"


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x", "", "."])
def test_paths_outside_the_workspace_are_refused(sb: Sandbox, path: str) -> None:
    with pytest.raises(ValueError):
        sb.write_file(path, "x")
    with pytest.raises(ValueError):
        sb.read_file(path)


def test_missing_file_raises_file_not_found(sb: Sandbox) -> None:
    with pytest.raises(FileNotFoundError):
        sb.read_file("nope.txt")


def test_snapshot_restore_is_exact(sb: Sandbox) -> None:
    sb.write_file("a.txt", "1")
    sb.write_file("d/run.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    snap = sb.snapshot()
    sb.write_file("a.txt", "changed")
    sb.write_file("new.txt", "extra")
    sb.restore(snap)
    assert sb.list_files() == ["a.txt", "d/run.sh"]
    assert sb.read_file("a.txt") == "1"
    assert sb.exec(["./d/run.sh"]).stdout == "hi\n"
    assert snap.files() == {"a.txt": b"1", "d/run.sh": b"#!/bin/sh\necho hi\n"}


def test_from_snapshot_opens_a_fresh_sandbox_with_pristine_overrides(sb: Sandbox) -> None:
    sb.write_file("sol.py", "def add(a, b): return a + b\n")
    sb.write_file("test_sol.py", "assert False  # the agent edited its tests\n")
    judged = sb.snapshot().with_files(
        {"test_sol.py": "from sol import add\nassert add(2, 3) == 5\n"}
    )
    with Sandbox.from_snapshot(judged, sb.spec) as judge:
        assert judge.server_pid and judge.name != sb.name
        assert judge.run_python(judge.read_file("test_sol.py")).ok


def test_snapshot_from_files_round_trip() -> None:
    snap = Snapshot.from_files({"a/b.txt": "x", "c": b"y"})
    assert snap.files() == {"a/b.txt": b"x", "c": b"y"}
    assert Snapshot(snap.archive).digest == snap.digest


def test_reset_kills_leftovers_and_wipes_scratch(sb: Sandbox) -> None:
    sb.write_file("x.txt", "1")
    sb.run_python("open('/tmp/t', 'w').write('1')")
    assert sb.reset() == 0
    assert sb.list_files() == []
    assert sb.run_python("import os; print(os.listdir('/tmp'))").stdout == "[]\n"


def test_baseline_is_what_reset_returns_to(sb: Sandbox) -> None:
    sb.set_baseline(Snapshot.from_files({"base.txt": "b"}))
    try:
        sb.write_file("other.txt", "o")
        sb.reset()
        assert sb.list_files() == ["base.txt"]
    finally:
        sb.set_baseline(None)


def _kill_server_from_the_host(sb: Sandbox, after: float) -> threading.Timer:
    server = sb.pids[-1]  # idle: [launcher, fork-server], or just the server in "none" mode
    killer = threading.Timer(after, os.kill, (server, signal.SIGKILL))
    killer.start()
    return killer


def test_dead_server_becomes_an_error_field_then_restarts(sb: Sandbox) -> None:
    _kill_server_from_the_host(sb, after=0.3)
    result = sb.run_python("import time; time.sleep(20)", timeout=10)
    assert result.error is not None and result.wall_s < 5 and sb.needs_recycle
    assert sb.run_python("print('back')").stdout == "back\n"


def test_unresponsive_server_is_a_timed_out_error_field(
    sb: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_module, "_GRACE_S", 0.5)
    os.kill(sb.pids[-1], signal.SIGSTOP)  # only the host can stop it: see the next test
    result = sb.run_python("print('never')", timeout=0.5)
    assert result.timed_out and "unresponsive" in (result.error or "") and not sb.alive
    assert sb.run_python("print('back')").stdout == "back\n"


def test_a_task_cannot_kill_stop_or_patch_its_fork_server(sb: Sandbox) -> None:
    attack = (
        "import os, signal\nppid = os.getppid()\n"
        "for s in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):\n    os.kill(ppid, s)\n"
        "try:\n    open('/proc/1/mem', 'r+b')\n    print(ppid, 'patchable')\n"
        "except OSError as exc:\n    print(ppid, 'denied', exc.errno)"
    )
    result = sb.run_python(attack, timeout=5)
    assert result.error is None and result.stdout == "1 denied 13\n", result  # it is pid 1
    assert sb.alive and not sb.needs_recycle
    assert sb.run_python("print('still warm')").stdout == "still warm\n"


def test_path_arguments_are_accepted(sb: Sandbox) -> None:
    sb.write_file(Path("pkg") / "hi.py", "print('hi')")
    assert sb.read_file(Path("pkg/hi.py")) == "print('hi')"
    assert sb.exec(["python3", Path("pkg/hi.py")]).stdout == "hi\n"
    assert sb.exec([b"printf", b"%s", "é".encode()]).stdout == "é"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda sb: sb.exec(["echo", 3]), r"exec argv\[1\] must be str, bytes or os.PathLike"),
        (lambda sb: sb.read_file(7), "path must be"),
        (lambda sb: sb.write_file("x.txt", "x", mode=object()), "'write' cannot be sent"),
        (lambda sb: sb.write_file("x.txt", 123), "'write' cannot be sent"),
        (lambda sb: sb.run_python("pass", stdin=[1]), "'python' cannot be sent"),
    ],
)
def test_a_value_of_the_wrong_type_raises_and_leaves_the_sandbox_alone(
    sb: Sandbox, call: Callable[[Sandbox], object], message: str
) -> None:
    sb.write_file("keep.txt", "kept")
    name = sb.name
    with pytest.raises(TypeError, match=message):
        call(sb)
    assert sb.alive and sb.name == name  # not killed, not restarted
    assert sb.read_file("keep.txt") == "kept"


def test_bad_timeout_and_empty_command_raise(sb: Sandbox) -> None:
    with pytest.raises(ValueError, match="timeout"):
        sb.run_python("pass", timeout=0)
    for endless in (float("inf"), float("nan"), 1e300):  # overflowed the CPU rlimit, a deadline
        with pytest.raises(ValueError, match=r"^timeout must be a number of seconds in \(0, "):
            sb.exec(["true"], timeout=endless)
    assert sb.exec(["true"], timeout=5).exit_code == 0  # the sandbox is untouched
    with pytest.raises(ValueError, match="command"):
        sb.exec([])


def test_spec_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxSpec(memory_mb=0)
    with pytest.raises(ValueError, match="isolation"):
        SandboxSpec(isolation="docker")


def test_refuses_to_run_without_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layers, "best_mode", lambda: None)
    with pytest.raises(SandboxUnavailable, match="isolation='none'"):
        Sandbox()


def test_isolation_none_runs_trusted_code_on_the_host(tmp_path: object) -> None:
    with Sandbox(isolation="none") as host:
        assert host.mode == "none"
        result = host.run_python("import os; print(os.getuid())")
        assert result.stdout.strip() == str(__import__("os").getuid())


@pytest.mark.skipif(not layers.unshare_status()[0], reason="unshare fallback unavailable")
def test_unshare_fallback_isolates_network_and_uid() -> None:
    with Sandbox(isolation="unshare") as fallback:
        assert fallback.mode == "unshare"
        result = fallback.run_python(
            "import os, socket\nprint(os.getuid())\n"
            "try:\n    socket.socket().connect(('127.0.0.1', 9))\nexcept OSError as e:\n    print(e.errno)"
        )
        assert result.ok
        assert result.stdout.split()[1] == "97"  # AF_INET denied by seccomp
        fallback.write_file("f.txt", "x")
        assert fallback.read_file("f.txt") == "x"


def test_closed_sandbox_refuses_work() -> None:
    sandbox = Sandbox(SandboxSpec(timeout_s=2))
    sandbox.close()
    assert not sandbox.alive
    with pytest.raises(SandboxError, match="closed"):
        sandbox.write_file("x", "1")
    assert sandbox.run_python("pass").error == "the sandbox is closed"


def test_killed_sandbox_restarts_on_next_call(sb: Sandbox) -> None:
    sb.write_file("kept", "state")
    before = sb.restarts  # this module's sandbox: earlier tests restarted it
    sb._kill()  # as if the OOM killer took the whole sandbox
    assert not sb.alive
    sb.write_file("x", "1")
    assert sb.read_file("x") == "1"
    assert sb.restarts == before + 1  # the count says the workspace went:
    assert "kept" not in sb.list_files()
    sb.restart()
    assert sb.restarts == before + 2


def test_snapshot_keeps_hard_links_as_copies(sb: Sandbox) -> None:
    sb.run_python("import os\nopen('a.txt', 'w').write('same')\nos.link('a.txt', 'b.txt')")
    snap = sb.snapshot()
    sb.reset()
    sb.restore(snap)
    assert sb.list_files() == ["a.txt", "b.txt"]
    assert sb.read_file("b.txt") == "same"


def test_with_files_overrides_drops_and_keeps_the_rest(sb: Sandbox) -> None:
    sb.run_python(
        "import os\nos.makedirs('pkg/empty')\nopen('pkg/run.sh', 'w').write('#!/bin/sh\\necho ok\\n')\n"
        "os.chmod('pkg/run.sh', 0o750)\nos.symlink('run.sh', 'pkg/link')\n"
        "open('conftest.py', 'w').write('raise SystemExit(0)')\nopen('test_x.py', 'w').write('bad')"
    )
    judged = sb.snapshot().with_files({"test_x.py": "good"}, drop=["conftest.py", "*.ini"])
    with Sandbox.from_snapshot(judged, sb.spec) as judge:
        assert judge.list_files() == ["pkg/run.sh", "test_x.py"]
        assert judge.read_file("test_x.py") == "good"
        listing = judge.exec("stat -c '%a %F' pkg/run.sh pkg/empty; readlink pkg/link").stdout
        assert listing == "750 regular file\n755 directory\nrun.sh\n"


@pytest.mark.skipif(
    not layers.unshare_status()[0] or __import__("os").geteuid() != 0,
    reason="the unshare fallback needs root to drop to nobody",
)
def test_unshare_fallback_holds_no_capabilities_and_a_private_tmpdir() -> None:
    with Sandbox(isolation="unshare") as fallback:
        probe = "import os, tempfile\nprint(open('/proc/self/status').read().split('CapEff:')[1].split()[0], tempfile.gettempdir() == os.environ['TMPDIR'] != '/tmp')"
        assert fallback.run_python(probe).stdout == "0000000000000000 True\n"


def _in_a_forked_child(work: Callable[[], str], timeout: float = 60.0) -> str:
    """What `work()` returns in a forked child of this process, or "hung" after `timeout`."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            try:
                out = work()
            except BaseException as exc:
                out = f"raised {exc!r}"
            os.write(w, out.encode())
        finally:
            os._exit(0)  # never back into pytest
    os.close(w)
    ready, _, _ = select.select([r], [], [], timeout)
    if not ready:
        os.kill(pid, signal.SIGKILL)
    out = os.read(r, 1 << 16).decode() if ready else "hung"
    os.waitpid(pid, 0)
    os.close(r)
    return out


def test_a_forked_child_leaves_the_parents_sandbox_alone(sb: Sandbox) -> None:
    sb.write_file("mine.txt", "parent's")
    pids = sb.pids

    def child() -> str:
        alive = sb.alive  # the copy is not the child's sandbox
        sb.close()  # as a child's exit (atexit, __del__) would
        return f"alive={alive}"

    assert _in_a_forked_child(child) == "alive=False"
    assert sb.alive and sb.pids == pids
    assert sb.read_file("mine.txt") == "parent's"


def test_a_forked_child_starts_sandboxes_of_its_own(sb: Sandbox) -> None:
    sb.write_file("mine.txt", "parent's")  # and the launcher thread has run

    def child() -> str:
        with Sandbox(sb.spec) as own:
            new = own.run_python("print('new')").stdout
        copied = sb.run_python("import os; print(os.listdir('.'))").stdout  # starts afresh
        sb.close()
        return new + copied

    assert _in_a_forked_child(child) == "new\n[]\n"
    assert sb.read_file("mine.txt") == "parent's"


@pytest.mark.skipif(
    not layers.unshare_status()[0] or os.geteuid() != 0,
    reason="the unshare fallback needs root to drop to its own uids",
)
def test_unshare_sandboxes_cannot_list_or_open_each_others_folders() -> None:
    with Sandbox(isolation="unshare") as victim, Sandbox(isolation="unshare") as attacker:
        victim.write_file("hidden_test.py", "SECRET = 42\n")
        assert victim._host_dir is not None and attacker._host_dir is not None
        parent, target = (
            os.path.dirname(victim._host_dir),
            os.path.join(victim._host_dir, "workspace"),
        )
        probe = (
            f"import os\nfor path in ({parent!r}, {target!r}):\n    try:\n"
            "        print(os.listdir(path))\n    except OSError as exc:\n        print(exc.errno)\n"
            f"try:\n    open({target + '/hidden_test.py'!r}, 'w').write('tampered')\n"
            "except OSError as exc:\n    print(exc.errno)"
        )
        assert attacker.run_python(probe).stdout == "13\n13\n13\n"  # EACCES, even by name
        assert victim.read_file("hidden_test.py") == "SECRET = 42\n"
        owners = {os.stat(f"{sb._host_dir}/workspace").st_uid for sb in (victim, attacker)}
        assert len(owners) == 2 and owners <= set(layers.SANDBOX_UIDS)
        uids = set(owners)
    assert not uids & set(layers._claims)  # released with their sandboxes
