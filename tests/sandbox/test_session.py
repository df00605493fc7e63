"""`PythonSession`: persistent interpreter state and fork snapshots inside a sandbox."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from posttrain.sandbox import Sandbox, SandboxError, SandboxSpec, layers
from posttrain.sandbox.session import PythonSession

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")


@pytest.fixture
def session() -> Iterator[PythonSession]:
    with Sandbox(SandboxSpec(memory_mb=512, timeout_s=5)) as sb, PythonSession(sb) as s:
        yield s


def test_state_persists_across_calls(session: PythonSession) -> None:
    assert session.run("x = [1, 2]").ok
    assert session.run("x.append(3); print(sum(x))").stdout == "6\n"


def test_errors_are_reported_and_state_survives(session: PythonSession) -> None:
    session.run("y = 5")
    result = session.run("1 / 0")
    assert not result.ok and "ZeroDivisionError" in result.stderr
    assert session.run("print(y)").stdout == "5\n"


def test_restore_brings_back_the_snapshot_state_repeatedly(session: PythonSession) -> None:
    session.run("db = {'a': 1}")
    snap = session.snapshot()
    session.run("db['a'] = 99; db['b'] = 2")
    session.restore(snap)
    assert session.run("print(db)").stdout == "{'a': 1}\n"
    session.run("db.clear()")
    session.restore(snap)
    assert session.run("print(db)").stdout == "{'a': 1}\n"


def test_hung_call_times_out_and_restore_recovers(session: PythonSession) -> None:
    session.run("v = 'kept'")
    snap = session.snapshot()
    result = session.run("while True: pass", timeout=0.3)
    assert result.timed_out and not result.ok
    assert session.run("print(v)").error is not None
    session.restore(snap)
    assert session.run("print(v)").stdout == "kept\n"


def test_unknown_snapshot_is_an_error(session: PythonSession) -> None:
    with pytest.raises(SandboxError, match="unknown session snapshot"):
        session.restore(42)


def test_session_survives_tasks_but_not_reset() -> None:
    with Sandbox(SandboxSpec(timeout_s=5)) as sb:
        session = PythonSession(sb)
        session.run("z = 1")
        assert sb.run_python("print('task')").ok
        assert session.run("print(z)").stdout == "1\n"
        sb.reset()
        assert session.run("print(z)").error == "no session is open"


def test_dead_sandbox_is_a_result_field(session: PythonSession) -> None:
    session.sandbox._kill()
    session.sandbox._closed = True  # no restart: the call must report, not raise
    result = session.run("print(1)")
    assert not result.ok and result.error and "closed" in result.error


def test_stderr_flood_at_the_fd_level_does_not_block(session: PythonSession) -> None:
    flood = "import os\nfor _ in range(3000):\n    os.write(2, b'x' * 100)\nprint('done')"
    assert session.run(flood, timeout=5).stdout == "done\n"


def test_restore_right_after_snapshot_never_loses_the_frozen_copy(session: PythonSession) -> None:
    session.run("x = 1")
    for _ in range(30):  # the wake-up signal may arrive before the copy reaches its wait
        session.restore(session.snapshot())
    assert session.run("print(x)").stdout == "1\n"


def test_too_many_snapshots_fail_clearly_and_the_session_lives_on(session: PythonSession) -> None:
    session.run("x = 1")
    with pytest.raises(SandboxError, match="snapshot failed"):
        for _ in range(500):  # each snapshot holds a process: the pids limit ends it
            session.snapshot()
    assert session.run("print(x + 1)").stdout == "2\n"


# A process the session starts and leaves running; the host finds it by its argument.
SPAWN = "import subprocess\nsubprocess.Popen(['sleep', '4321'])\n"


def _spawned_left(sb: Sandbox) -> bool:
    for pid in sb.pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == b"sleep\x004321\x00":
                    return True
        except OSError:
            pass
    return False


def test_a_timed_out_call_kills_what_the_session_started(session: PythonSession) -> None:
    result = session.run(SPAWN + "import time\ntime.sleep(60)", timeout=0.5)
    assert result.timed_out
    assert not _spawned_left(session.sandbox)


def test_close_and_reopen_kill_what_the_session_started(session: PythonSession) -> None:
    session.run(SPAWN)
    assert _spawned_left(session.sandbox)  # a session may keep processes between calls
    PythonSession(session.sandbox)  # a new session replaces this one
    assert not _spawned_left(session.sandbox)
    again = PythonSession(session.sandbox)
    again.run(SPAWN)
    again.close()
    assert not _spawned_left(session.sandbox)


def test_restore_kills_what_the_live_copy_started(session: PythonSession) -> None:
    session.run("x = 1")
    snap = session.snapshot()
    session.restore(snap)  # the live process is now a copy forked from the frozen one
    session.run(SPAWN)
    session.restore(snap)
    assert not _spawned_left(session.sandbox)
    assert session.run("print(x)").stdout == "1\n"


_FORGE = """
import gc, json, socket, struct
channel = next(o for o in gc.get_objects() if isinstance(o, socket.socket) and o.fileno() >= 0)
body = json.dumps({body}).encode()
channel.sendall(struct.pack("!II", len(body), 0) + body)
"""


@pytest.mark.parametrize(
    "body",
    [
        '["not", "a", "reply"]',  # once an AttributeError in the host
        '{"ok": True, "stdout": "A" * (2 << 20)}',  # once held whole by the host
        '{"ok": "yes"}',
    ],
)
def test_a_reply_forged_by_the_sessions_code_is_an_error_not_a_crash(
    session: PythonSession, body: str
) -> None:
    result = session.run(_FORGE.format(body=body))
    assert not result.ok and "malformed reply" in (result.error or ""), result
    assert len(result.stdout) == 0


def test_output_in_a_replys_shape_is_cut_to_its_last_64_kib(session: PythonSession) -> None:
    forged = '{"ok": True, "stdout": "A" * 100_000 + "end"}'
    result = session.run(_FORGE.format(body=forged))
    assert result.ok and len(result.stdout) == 65536 and result.stdout.endswith("end")
