"""Atomic writes: a file or a directory is either wholly there or not there at all.

    atomic_write_text(run / "summary.md", text)

    with atomic_directory(run / "checkpoints" / "grpo") as tmp:
        save_weights(tmp / "model.safetensors")
    assert is_complete(run / "checkpoints" / "grpo")

Files are written to a temporary sibling, flushed and fsynced, then moved into
place with `os.replace`, which is atomic on POSIX file systems. Directories are
filled under a hidden sibling `.{name}.tmp-XXXXXXXX` of their own (one per writer,
so two writers of one path never share it); on a clean exit every file in it is
fsynced, a `COMPLETE` marker is written last, and the directory is renamed into
place (`publish_directory`, also for a directory filled by several processes). An
existing directory is swapped with the new one in a single step (Linux
`renameat2(RENAME_EXCHANGE)`), so a crash at any moment leaves the old directory
or the new one at the final path. A directory that lacks the marker is a leftover
of a crash and must not be trusted: readers check `is_complete`.

Not guaranteed: atomicity holds only within one local POSIX file system (not
across mounts, and not on some network file systems). Where the swap is not
available (not Linux, or a file system without it), replacing an existing
directory takes two renames; a crash between them leaves *no* directory at the
final path (the old one survives aside as `.{name}.old-{pid}`), never a partial
one. Two writers filling the same final path at once each publish a whole
directory and the last rename wins; threads of one process take turns at it,
separate processes may see one of them fail.

`remove_directory` deletes a directory crash-safely: it is renamed to a hidden
`.{name}.trash-XXXXXXXX` sibling first (the rename made durable), then deleted, so a
kill leaves the whole directory or none of it at its path, never a part (a plain
`shutil.rmtree` can leave a `COMPLETE` marker without the files it vouched for).
`sweep_leftovers(parent)` removes what crashed writers left in `parent`: the `.tmp-`,
`.old-` and `.trash-` siblings above and `atomic_write_bytes`' `.*.tmp` files, and puts
an `.old-` directory back where its final path is missing (a crash between the two
renames). Call it only while no other process writes in `parent` (the recipe does so
on resume, holding the run's lock: `RunDir.lock`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

COMPLETE_MARKER = "COMPLETE"


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp and mkdtemp create 0600 files and 0700 directories; atomic ones get the mode
# a plain open() or mkdir() would give. Read once at import: os.umask can only be
# read by setting it.
_UMASK = _read_umask()
_FILE_MODE = 0o666 & ~_UMASK
_DIR_MODE = 0o777 & ~_UMASK


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old content or the new, never a mix."""
    path = Path(path)
    try:
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        # mkstemp names its random temporary file; the caller knows only `path`.
        # OSError(errno, ...) gives back the same subclass (FileNotFoundError, ...).
        raise OSError(e.errno, e.strerror, str(path)) from e
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _FILE_MODE)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Write `text` to `path` atomically (see `atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode(encoding))


@contextlib.contextmanager
def atomic_directory(final_path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling directory to fill; on success it becomes `final_path`.

    On a clean exit the directory gets a `COMPLETE` marker and replaces whatever
    was at `final_path`. On an exception it is removed and the exception re-raised;
    an existing `final_path` is then left untouched.
    """
    final = Path(final_path)
    final.parent.mkdir(parents=True, exist_ok=True)
    # A fresh name per call, not one made from the pid: two threads writing one path
    # must not fill (and publish) the same directory.
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.tmp-"))
    try:
        os.chmod(tmp, _DIR_MODE)
        yield tmp
        publish_directory(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def publish_directory(tmp: str | Path, final_path: str | Path) -> None:
    """Mark the filled directory `tmp` complete and rename it to `final_path`.

    What `atomic_directory` does on a clean exit, for a directory it cannot wrap
    (one that several processes fill): every file under `tmp` is fsynced, the
    `COMPLETE` marker is written and fsynced last, and an existing `final_path` is
    set aside, replaced, then deleted. If the move fails, the previous `final_path`
    is put back and `tmp` is left for the caller to remove.
    """
    tmp, final = Path(tmp), Path(final_path)
    _fsync_tree(tmp)
    with open(tmp / COMPLETE_MARKER, "wb") as f:
        os.fsync(f.fileno())
    _fsync_dir(tmp)
    _move_into_place(tmp, final)


def remove_directory(path: str | Path) -> None:
    """Delete the directory `path` (if there is one) so that a crash at any moment leaves
    it whole or gone: renamed to a hidden trash sibling, the rename made durable, then
    deleted. A crash mid-delete, or a file the delete cannot remove, leaves the trash
    for `sweep_leftovers`; OSError when the trash cannot be made or the rename fails
    (`path` is then untouched, and no trash is left)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    trash = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.trash-"))
    try:
        os.replace(path, trash)  # over the empty directory mkdtemp made: a fresh name
    except OSError:
        trash.rmdir()
        raise
    _fsync_dir(path.parent)
    shutil.rmtree(trash, ignore_errors=True)  # out of the way already: nothing reads it


# What the writers above leave behind when killed: `atomic_directory`'s fill directory,
# `_move_into_place`'s set-aside old one, `remove_directory`'s trash, and
# `atomic_write_bytes`' temporary file.
_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?:(?P<kind>tmp|old|trash)-[^/]+|[^./]+\.tmp)$")


def sweep_leftovers(parent: str | Path) -> list[str]:
    """Remove the leftovers of crashed atomic writes and deletes in the directory
    `parent` (see the module doc); an `.old-` directory whose final path is missing is
    renamed back to it instead. Returns the names removed or put back, sorted. Only
    safe while no other process writes in `parent`."""
    parent = Path(parent)
    if not parent.is_dir():
        return []
    handled = []
    for entry in sorted(parent.iterdir()):
        match = _LEFTOVER.match(entry.name)
        if match is None:
            continue
        final = parent / match["name"]
        if match["kind"] == "old" and not final.exists() and not final.is_symlink():
            os.replace(entry, final)  # the previous version, set aside by a crashed swap
        else:
            _remove(entry)
        handled.append(entry.name)
    if handled:
        _fsync_dir(parent)
    return handled


def is_complete(path: str | Path) -> bool:
    """True when `path` is a directory finished by `atomic_directory` (it holds the marker)."""
    path = Path(path)
    return path.is_dir() and (path / COMPLETE_MARKER).is_file()


# Threads publishing one path take turns: interleaved, one could find `final` set
# aside by the other, or share its `.old-{pid}` name.
_MOVE_LOCK = threading.Lock()


def _move_into_place(tmp: Path, final: Path) -> None:
    """Rename `tmp` to `final`, setting an existing `final` aside first and deleting it after."""
    with _MOVE_LOCK:
        _move_into_place_unlocked(tmp, final)


def _move_into_place_unlocked(tmp: Path, final: Path) -> None:
    if not final.exists() and not final.is_symlink():
        os.replace(tmp, final)
        _fsync_dir(final.parent)
        return
    if _exchange(tmp, final):  # one atomic step: `final` is new, `tmp` holds the old
        _fsync_dir(final.parent)
        _remove(tmp)
        return
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    _remove(old)
    os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        os.replace(old, final)  # put the previous version back
        raise
    _fsync_dir(final.parent)
    _remove(old)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# What renameat2 answers where the kernel, the C library or the file system lacks the swap.
_NO_EXCHANGE = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}


def _load_renameat2() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return cast(Callable[..., int], libc.renameat2)
    except (OSError, AttributeError):  # not Linux, or a C library older than glibc 2.28
        return None


_RENAMEAT2 = _load_renameat2()


def _exchange(a: Path, b: Path) -> bool:
    """Swap the entries `a` and `b` atomically; False where this system cannot."""
    if _RENAMEAT2 is None:
        return False
    args = (_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if _RENAMEAT2(*args) == 0:
        return True
    code = ctypes.get_errno()
    if code in _NO_EXCHANGE:
        return False
    raise OSError(code, os.strerror(code), str(b))


def _remove(path: Path) -> None:
    """Delete a file, link or directory tree at `path`, if there is one."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _fsync_tree(root: Path) -> None:
    """Flush every regular file under `root`, and the directories holding them, to disk."""
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            file_path = os.path.join(dirpath, name)
            if os.path.islink(file_path):
                continue
            fd = os.open(file_path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(dirpath))


def _fsync_dir(path: Path) -> None:
    """Make a rename or create inside `path` durable; best effort where directories can't be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
