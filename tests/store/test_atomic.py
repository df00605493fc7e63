"""Atomic files and directories: whole or absent, even when the writer dies."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from posttrain.store import atomic as atomic_module
from posttrain.store.atomic import (
    COMPLETE_MARKER,
    atomic_directory,
    atomic_write_bytes,
    atomic_write_text,
    is_complete,
    publish_directory,
    remove_directory,
    sweep_leftovers,
)


def test_atomic_write_text_writes_content(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    atomic_write_text(target, "héllo\n")
    assert target.read_text(encoding="utf-8") == "héllo\n"


def test_atomic_write_bytes_replaces_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    target.write_bytes(b"old")
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "a.txt", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_atomic_write_gives_files_the_umask_mode(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    target = tmp_path / "a.txt"
    atomic_write_text(target, "x")
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_failed_atomic_write_keeps_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "a.txt"
    target.write_text("old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_atomic_write_into_a_missing_directory_names_the_destination(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "a.txt"
    with pytest.raises(FileNotFoundError) as info:
        atomic_write_text(target, "x")
    assert info.value.filename == str(target)
    assert info.value.errno == errno.ENOENT
    assert str(target) in str(info.value)


def test_atomic_directory_moves_filled_directory_into_place(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        assert tmp.name.startswith(".ckpt.tmp-") and tmp.parent == tmp_path
        (tmp / "weights.bin").write_bytes(b"w")
        (tmp / "sub").mkdir()
        (tmp / "sub" / "state.json").write_text("{}")
    assert is_complete(final)
    assert (final / "weights.bin").read_bytes() == b"w"
    assert (final / "sub" / "state.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_atomic_directory_is_absent_until_the_block_ends(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"w")
        assert not final.exists()
        assert not is_complete(tmp)
    assert is_complete(final)


def test_atomic_directory_leaves_nothing_on_exception(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with pytest.raises(RuntimeError, match="boom"), atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_atomic_directory_exception_keeps_existing_directory(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v1")
    with pytest.raises(RuntimeError), atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v2-partial")
        raise RuntimeError("boom")
    assert is_complete(final)
    assert (final / "weights.bin").read_bytes() == b"v1"


def test_atomic_directory_replaces_existing_directory(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "old_only.bin").write_bytes(b"v1")
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v2")
    assert is_complete(final)
    assert sorted(p.name for p in final.iterdir()) == [COMPLETE_MARKER, "weights.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_atomic_directory_restores_old_version_when_final_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v1")
    real_replace = os.replace

    def replace_failing_on_move_in(src: str | Path, dst: str | Path) -> None:
        if Path(src).name.startswith(".ckpt.tmp-"):
            raise OSError("rename failed")
        real_replace(src, dst)

    monkeypatch.setattr(atomic_module, "_RENAMEAT2", None)  # the two-rename path
    monkeypatch.setattr(os, "replace", replace_failing_on_move_in)
    with pytest.raises(OSError, match="rename failed"), atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v2")
    assert is_complete(final)
    assert (final / "weights.bin").read_bytes() == b"v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_replacing_a_directory_is_one_swap_with_no_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v1")

    def no_rename(src: str | Path, dst: str | Path) -> None:
        raise AssertionError(f"os.replace({src}, {dst}) during a swap")

    monkeypatch.setattr(os, "replace", no_rename)
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v2")
    assert (final / "weights.bin").read_bytes() == b"v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_a_writer_killed_right_after_the_swap_leaves_the_new_directory(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v1")
    child = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from posttrain.store import atomic
        atomic._remove = lambda path: os.kill(os.getpid(), signal.SIGKILL)
        with atomic.atomic_directory(Path({str(final)!r})) as tmp:
            (tmp / "weights.bin").write_bytes(b"v2")
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], check=False)
    assert proc.returncode == -signal.SIGKILL
    assert is_complete(final) and (final / "weights.bin").read_bytes() == b"v2"
    (aside,) = [p for p in tmp_path.iterdir() if p.name != "ckpt"]  # the old one, to sweep
    assert (aside / "weights.bin").read_bytes() == b"v1"


@pytest.mark.parametrize("code", [errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP])
def test_without_the_swap_two_renames_replace_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v1")

    def unsupported(*args: object) -> int:
        ctypes.set_errno(code)
        return -1

    monkeypatch.setattr(atomic_module, "_RENAMEAT2", unsupported)
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v2")
    assert (final / "weights.bin").read_bytes() == b"v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_a_failing_swap_keeps_the_old_directory_and_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v1")

    def denied(*args: object) -> int:
        ctypes.set_errno(errno.EACCES)
        return -1

    monkeypatch.setattr(atomic_module, "_RENAMEAT2", denied)
    with pytest.raises(PermissionError, match="ckpt"), atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v2")
    assert (final / "weights.bin").read_bytes() == b"v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_killed_writer_never_leaves_a_complete_directory(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    child = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from posttrain.store.atomic import atomic_directory
        with atomic_directory(Path({str(final)!r})) as tmp:
            (tmp / "weights.bin").write_bytes(b"partial")
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], check=False)
    assert proc.returncode == -signal.SIGKILL
    assert not final.exists()
    assert not is_complete(final)
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".ckpt.tmp-")]
    assert len(leftovers) == 1
    assert not is_complete(leftovers[0])


def test_atomic_directory_gets_the_umask_mode(tmp_path: Path) -> None:
    mask = os.umask(0o022)
    os.umask(mask)
    with atomic_directory(tmp_path / "ckpt") as tmp:
        (tmp / "weights.bin").write_bytes(b"w")
    assert (tmp_path / "ckpt").stat().st_mode & 0o777 == 0o777 & ~mask


def test_two_threads_writing_one_directory_publish_one_whole_set(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    both_inside = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    def write(tag: str) -> None:
        try:
            with atomic_directory(final) as tmp:
                both_inside.wait()  # each fills while the other's directory is open
                (tmp / f"{tag}.bin").write_text(tag)
                (tmp / "config.json").write_text(tag)
                both_inside.wait()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=write, args=(tag,)) for tag in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert is_complete(final)
    names = sorted(p.name for p in final.iterdir())
    tag = (final / "config.json").read_text()
    assert names == [COMPLETE_MARKER, f"{tag}.bin", "config.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_publish_directory_marks_and_replaces_an_existing_directory(tmp_path: Path) -> None:
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "weights.bin").write_bytes(b"v1")
    filled = tmp_path / "filled"
    filled.mkdir()
    (filled / "weights.bin").write_bytes(b"v2")
    publish_directory(filled, final)
    assert is_complete(final)
    assert (final / "weights.bin").read_bytes() == b"v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]


def test_is_complete_is_false_without_marker(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert not is_complete(tmp_path / "plain")
    assert not is_complete(tmp_path / "missing")


def test_a_delete_cut_short_leaves_nothing_half_deleted_at_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain rmtree killed after its first unlink left COMPLETE without state.json,
    which every later resume tripped on."""
    final = tmp_path / "grpo-state"
    with atomic_directory(final) as tmp:
        (tmp / "state.json").write_text("{}")
        (tmp / "tensors.pt").write_bytes(b"x")

    def killed_midway(path: Path, *args: object, **kwargs: object) -> None:
        (Path(path) / "state.json").unlink()
        raise OSError("killed")

    monkeypatch.setattr(atomic_module.shutil, "rmtree", killed_midway)
    with pytest.raises(OSError, match="killed"):
        remove_directory(final)
    monkeypatch.undo()
    assert not final.exists()  # gone whole; the rest waits under a trash name
    (trash,) = tmp_path.iterdir()
    assert trash.name.startswith(".grpo-state.trash-")
    assert sweep_leftovers(tmp_path) == [trash.name]
    assert list(tmp_path.iterdir()) == []


def test_remove_directory_of_a_missing_path_does_nothing(tmp_path: Path) -> None:
    remove_directory(tmp_path / "nope")
    assert list(tmp_path.iterdir()) == []


def test_sweep_removes_crash_leftovers_and_puts_back_a_directory_set_aside(
    tmp_path: Path,
) -> None:
    for name in (".sft.tmp-k2j3h4x1", ".sft.old-123", ".grpo-state.trash-ab12cd34",
                 ".dpo.old-77", "grpo", "sft"):  # fmt: skip
        (tmp_path / name).mkdir()
        (tmp_path / name / "weights.bin").write_bytes(name.encode())
    (tmp_path / ".config.yaml.x1y2z3ab.tmp").write_text("half")  # atomic_write_bytes'
    (tmp_path / ".lock").write_text("1")  # not a leftover
    swept = sweep_leftovers(tmp_path)
    assert swept == [".config.yaml.x1y2z3ab.tmp", ".dpo.old-77", ".grpo-state.trash-ab12cd34",
                     ".sft.old-123", ".sft.tmp-k2j3h4x1"]  # fmt: skip
    # A crash between the two renames of a replace left no `dpo`: the old one goes back.
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "dpo", "grpo", "sft"]
    assert (tmp_path / "dpo" / "weights.bin").read_bytes() == b".dpo.old-77"
    assert (tmp_path / "sft" / "weights.bin").read_bytes() == b"sft"
