"""`Sandbox`: execution, limits as fields, files, snapshots, restarts, refusal without isolation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from posttrain.sandbox import (
    Sandbox,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
    Snapshot,
    layers,
)

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


def test_dead_server_becomes_an_error_field_then_restarts(sb: Sandbox) -> None:
    result = sb.run_python("import os, signal; os.kill(os.getppid(), signal.SIGKILL)")
    assert result.error is not None and sb.needs_recycle
    assert sb.run_python("print('back')").stdout == "back\n"


def test_bad_timeout_and_empty_command_raise(sb: Sandbox) -> None:
    with pytest.raises(ValueError, match="timeout"):
        sb.run_python("pass", timeout=0)
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
    sb._kill()  # as if the OOM killer took the whole sandbox
    assert not sb.alive
    sb.write_file("x", "1")
    assert sb.read_file("x") == "1"


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
