"""`inside/files.py`: workspace listing, snapshots and restores keep every mode as it was."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from posttrain.sandbox import Sandbox, SandboxSpec, layers
from posttrain.sandbox.inside import files


def modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode) for p in sorted(root.rglob("*"))
    }


def locked_tree(root: Path) -> dict[str, int]:
    """A read-only file, a read-only folder, a folder without read and a file without any."""
    (root / "ro_dir").mkdir()
    (root / "ro_dir" / "f").write_text("x")
    (root / "readonly.txt").write_text("y")
    (root / "locked").mkdir()
    (root / "locked" / "s").write_text("s")
    for rel, mode in {
        "readonly.txt": 0o444,
        "ro_dir": 0o555,
        "locked/s": 0,
        "locked": 0o311,
    }.items():
        os.chmod(root / rel, mode)
    return modes(root)


def archived_modes(archive: bytes) -> dict[str, int]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: m.mode for m in tar.getmembers()}


def test_listing_leaves_every_mode_as_it_was(tmp_path: Path) -> None:
    before = locked_tree(tmp_path)
    assert files.list_files(str(tmp_path)) == ["locked/s", "readonly.txt", "ro_dir/f"]
    assert modes(tmp_path) == before


def test_snapshot_records_modes_and_leaves_them_as_they_were(tmp_path: Path) -> None:
    before = locked_tree(tmp_path)
    archive = files.tar_workspace(str(tmp_path))
    assert modes(tmp_path) == before
    assert archived_modes(archive) == before


def test_restore_gives_folders_their_exact_modes(tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    source.mkdir()
    target.mkdir()
    before = locked_tree(source)
    (target / "junk").write_text("gone after the restore")
    files.untar_workspace(str(target), files.tar_workspace(str(source)))
    assert modes(target) == before
    assert (target / "ro_dir" / "f").read_text() == "x"


def test_a_walk_stopped_early_puts_modes_back(tmp_path: Path) -> None:
    before = locked_tree(tmp_path)
    cwd = os.getcwd()
    walk = files._walk(str(tmp_path))
    for rel, _ in walk:
        if rel == "locked/s":  # inside the unlocked folder
            break
    walk.close()
    assert modes(tmp_path) == before and os.getcwd() == cwd


# The same through a real sandbox, whose server (an unprivileged uid) must unlock to read.

needs_sandbox = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation here")
STAT = "find . -mindepth 1 -printf '%p %m\\n' | sort"


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    if layers.best_mode() is None:
        pytest.skip("no isolation here")
    with Sandbox(SandboxSpec(memory_mb=512, timeout_s=5)) as sandbox:
        yield sandbox


@needs_sandbox
def test_snapshot_and_listing_leave_a_sandbox_workspace_untouched(sb: Sandbox) -> None:
    sb.reset()
    sb.exec("mkdir ro && echo x > ro/f && echo y > r.txt && chmod 444 r.txt && chmod 555 ro")
    before = sb.exec(STAT).stdout
    sb.list_files()
    snap = sb.snapshot()
    assert sb.exec(STAT).stdout == before == "./r.txt 444\n./ro 555\n./ro/f 644\n"
    assert archived_modes(snap.archive) == {"r.txt": 0o444, "ro": 0o555, "ro/f": 0o644}
    assert sb.exec("echo z >> r.txt").exit_code != 0  # still read-only for the task


@needs_sandbox
def test_reading_a_locked_file_leaves_it_locked(sb: Sandbox) -> None:
    sb.reset()
    sb.exec("echo secret > f && chmod 000 f")
    assert sb.read_file("f") == "secret\n"
    assert sb.exec("stat -c %a f").stdout == "0\n"


@needs_sandbox
def test_restore_round_trips_locked_folders_exactly(sb: Sandbox) -> None:
    sb.reset()
    sb.exec(
        "mkdir -p outer/inner locked && echo a > outer/inner/f && chmod 555 outer/inner "
        "&& chmod 600 outer && echo s > locked/s && chmod 000 locked/s && chmod 311 locked"
    )
    snap = sb.snapshot()
    sb.exec("echo junk > junk")
    sb.restore(snap)
    again = sb.snapshot()
    assert archived_modes(again.archive) == archived_modes(snap.archive) == {
        "locked": 0o311, "locked/s": 0, "outer": 0o600, "outer/inner": 0o555,
        "outer/inner/f": 0o644,
    }  # fmt: skip
    assert again.files() == {"locked/s": b"s\n", "outer/inner/f": b"a\n"}
