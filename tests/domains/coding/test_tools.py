"""`CodingSession`: tools edit a host-side workspace; shell runs in a leased sandbox."""

from __future__ import annotations

import pytest

from posttrain.domains.coding import tools
from posttrain.domains.coding.tools import CodingSession, clip
from posttrain.sandbox import layers
from posttrain.types import ToolCall

needs_sandbox = pytest.mark.skipif(
    layers.best_mode() is None, reason="no isolation on this machine"
)


def call(session: CodingSession, name: str, **arguments: str) -> tuple[str, bool]:
    obs = session.call(ToolCall(name, arguments))
    return obs.content, obs.error


def test_write_then_read_a_file() -> None:
    session = CodingSession({"a.txt": "one\n"})
    call(session, "write_file", path="dir/b.txt", content="two\n")
    assert call(session, "read_file", path="dir/b.txt") == ("two\n", False)
    assert len(session.history) == 2


def test_apply_patch_edits_and_reports_a_bad_patch() -> None:
    session = CodingSession({"a.txt": "one\n"})
    assert not call(session, "apply_patch", patch="--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+uno\n")[1]  # fmt: skip
    assert session.files()["a.txt"] == b"uno\n"
    text, error = call(session, "apply_patch", patch="--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-zzz\n+x\n")  # fmt: skip
    assert error and "does not match" in text


@pytest.mark.parametrize("gone", ["x[1].py", "*.py", "x?.py"])
def test_a_patch_deleting_a_file_with_glob_characters_deletes_only_it(gone: str) -> None:
    others = {"x1.py": "keep\n", "xy.py": "keep\n", "x[1].py": "keep\n", "*.py": "keep\n"}
    session = CodingSession({**others, gone: "bye\n"})
    patch = f"--- a/{gone}\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    assert not call(session, "apply_patch", patch=patch)[1]
    assert sorted(session.files()) == sorted(set(others) - {gone})


@pytest.mark.parametrize(("name", "arguments"), [("read_file", {"path": "../etc/passwd"}), ("read_file", {"path": "missing"}), ("rm", {}), ("shell", {})])  # fmt: skip
def test_bad_calls_are_error_observations(name: str, arguments: dict[str, str]) -> None:
    assert call(CodingSession({"a": "b"}), name, **arguments)[1]


def test_the_call_budget_ends_with_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "MAX_CALLS", 2)
    session = CodingSession({"a": "b"})
    results = [call(session, "read_file", path="a")[1] for _ in range(3)]
    assert results == [False, False, True]


def test_long_output_is_clipped_keeping_both_ends() -> None:
    text = clip("a" * 5000 + "b" * 5000, 1000)
    assert len(text) < 1100 and text.startswith("a") and text.endswith("b")


@needs_sandbox
def test_shell_changes_persist_with_their_modes() -> None:
    session = CodingSession({"p.c": '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n'})
    call(session, "shell", command="gcc -o p p.c")
    assert call(session, "shell", command="./p") == ("[exit code 0]\nhi", False)


@needs_sandbox
def test_restore_rewinds_the_workspace_and_history() -> None:
    session = CodingSession({"a": "1"})
    mark = session.snapshot()
    call(session, "shell", command="echo 2 > a")
    session.restore(mark)
    assert session.files()["a"] == b"1" and session.history == []


@needs_sandbox
def test_a_workspace_whose_snapshot_would_pass_8_mb_keeps_its_files_as_they_were() -> None:
    # Sparse files cost the sandbox nothing and the snapshot their full size: refused
    # inside the sandbox, before the host reads them.
    session = CodingSession({"a.txt": "one\n"})
    out, error = call(session, "shell", command="truncate -s 6M s1 && truncate -s 6M s2 && ls")
    assert not error and "changes were discarded" in out
    assert call(session, "read_file", path="s1")[1]  # not kept
    assert call(session, "read_file", path="a.txt") == ("one\n", False)
