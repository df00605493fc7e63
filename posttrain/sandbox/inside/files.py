"""Workspace file operations for host requests: never outside the root, never via a symlink.

Walks are iterative and step by relative `chdir`, so a task's 3,000-deep tree or a
folder it locked (mode 000) neither crashes nor hides anything.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tarfile
from collections.abc import Iterator


def resolve(root: str, rel: str) -> str:
    """`root/rel`, refusing absolute paths, `..` and any symlink on the way."""
    if not rel or rel.startswith("/") or "\0" in rel:
        raise ValueError(f"path must be relative to the workspace: {rel!r}")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"path must stay inside the workspace: {rel!r}")
    path = root
    for part in parts:
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise ValueError(f"path goes through a symlink: {rel!r}")
    return path


def read_file(root: str, rel: str) -> bytes:
    path = resolve(root, rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except PermissionError:  # locked by the task (mode 000): the file is ours, open it anyway
        with _unlocked(path, 0o400):  # `resolve` refused symlinks
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"not a regular file: {rel!r}")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def write_file(root: str, rel: str, data: bytes, mode: int) -> None:
    path = resolve(root, rel)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    resolve(root, os.path.relpath(path, root))  # the parents just made hold no symlink
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode & 0o777)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode & 0o777)


@contextlib.contextmanager
def _unlocked(path: str, bits: int) -> Iterator[None]:
    """`path` (never a symlink) with the owner's `bits` added for the block, then its mode
    put back exactly: the server runs as the sandbox uid, so what a task locked is ours."""
    mode = stat.S_IMODE(os.lstat(path).st_mode)
    if mode & bits == bits:
        yield
        return
    os.chmod(path, mode | bits)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.chmod(path, mode)


def _walk(root: str, remove: bool = False) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under `root` as (relative path, lstat), parents before children, each
    yielded while the folders above it are open to the server; with `remove=True` each
    entry is also deleted after it is yielded (files on the way down, folders on the
    way back up).

    Iterative, and by relative `chdir` steps, so a task's 3,000-deep tree hits neither
    Python's recursion limit nor PATH_MAX. Folders a task locked (mode 000) are opened
    for the walk (they belong to the sandbox uid, like the server) and get their mode
    back on the way up: a walk that removes nothing leaves every mode as it found it.
    The lstat is taken before any change. Never follows a symlink. Restores the
    working directory.
    """
    need = 0o700 if remove else 0o500  # r-x lists a folder; deleting in it takes w too
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    # One level per folder entered: names still to visit, relative prefix, the folder's
    # own mode to put back on the way up (None: untouched, or it is being removed).
    stack: list[tuple[list[str], str, int | None]] = []
    try:
        os.chdir(root)
        stack.append((sorted(os.listdir("."), reverse=True), "", None))
        while stack:
            names, prefix, _ = stack[-1]
            if not names:
                _leave(stack, remove)
                continue
            name = names.pop()
            try:
                st = os.lstat(name)
            except OSError:
                continue
            yield prefix + name, st
            if not stat.S_ISDIR(st.st_mode):
                if remove:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name)
                continue
            mode = stat.S_IMODE(st.st_mode)
            put_back = mode if mode & need != need and not remove else None
            try:
                if mode & need != need:
                    os.chmod(name, mode | need)
                os.chdir(name)
            except OSError:
                if put_back is not None:
                    with contextlib.suppress(OSError):
                        os.chmod(name, put_back)
                continue  # `wipe` reports what it could not remove
            try:
                children = sorted(os.listdir("."), reverse=True)
            except OSError:
                children = []
            stack.append((children, prefix + name + "/", put_back))
    finally:
        while len(stack) > 1:  # left early (an error, or the caller stopped): modes back
            try:
                _leave(stack, remove=False)
            except OSError:
                break
        os.fchdir(here)
        os.close(here)


def _leave(stack: list[tuple[list[str], str, int | None]], remove: bool) -> None:
    """Pop the innermost folder of a walk: step up out of it (OSError if that fails), then
    remove it or put its mode back."""
    _, prefix, put_back = stack.pop()
    if not stack:
        return
    os.chdir("..")
    folder = prefix.rstrip("/").rpartition("/")[2]
    with contextlib.suppress(OSError):
        if remove:
            os.rmdir(folder)
        elif put_back is not None:
            os.chmod(folder, put_back)


def list_files(root: str) -> list[str]:
    """Regular files under `root`, relative and sorted; changes nothing (modes included)."""
    return sorted(rel for rel, st in _walk(root) if stat.S_ISREG(st.st_mode))


def wipe(root: str) -> None:
    """Empty a folder, however deep, locked or strange, and clear what a task can leave
    on the folder itself (its mode, extended attributes, times): the next task must not
    tell its run from a fresh one. Raise if anything survives."""
    os.chmod(root, 0o755)  # a task may have locked the folder itself
    for _ in _walk(root, remove=True):
        pass
    left = os.listdir(root)
    if left:
        raise OSError(f"could not empty {root}: {left[:5]}")
    try:
        names = os.listxattr(root)
    except OSError:  # a file system without extended attributes
        names = []
    for name in names:
        os.removexattr(root, name)
    os.utime(root, ns=(0, 0))


def tar_workspace(root: str, max_bytes: int | None = None) -> bytes:
    """The workspace as a tar archive with every mode as it was; changes nothing. Fails
    (ENAMETOOLONG) on a path past PATH_MAX, which `untar_workspace` could not restore,
    and with ValueError, before reading the file that would pass it, when the files'
    sizes add up to more than `max_bytes`: a sparse file or a hard link takes a few
    bytes of the workspace and its full size in the archive."""
    buf = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, st in _walk(root):
            full = os.path.join(root, rel)
            info = tar.gettarinfo(full, arcname=rel)
            info.mode = stat.S_IMODE(st.st_mode)  # as the task left it
            if info.islnk():  # a second hard link becomes a copy: restore recreates every path
                info.type, info.linkname, info.size = tarfile.REGTYPE, "", st.st_size
            total += info.size + tarfile.BLOCKSIZE
            if max_bytes is not None and total > max_bytes:
                raise ValueError(
                    f"the workspace's files take more than {max_bytes} bytes as a snapshot "
                    "(sparse files and hard links count at their full size)"
                )
            if info.isreg():
                with _unlocked(full, 0o400), open(full, "rb") as f:
                    tar.addfile(info, f)
            elif info.isdir() or info.issym():
                tar.addfile(info)  # devices, FIFOs and sockets are not workspace content
    return buf.getvalue()


def untar_workspace(root: str, data: bytes) -> None:
    """Make `root` exactly the archive: regular files, folders and symlinks, nothing else,
    with their modes (folders' last, deepest first, so a read-only folder is still filled).

    Hand-rolled rather than `extractall(filter="data")`, which the sandbox's
    interpreter may predate (Python < 3.11.4); names are checked by `resolve`.
    """
    wipe(root)
    folders: list[tuple[str, int]] = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            path = resolve(root, member.name)
            if member.isdir():
                os.makedirs(path, exist_ok=True)
                folders.append((path, member.mode & 0o7777))
            elif member.isfile():
                handle = tar.extractfile(member)
                write_file(root, member.name, handle.read() if handle else b"", member.mode)
            elif member.issym():
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.symlink(member.linkname, path)
    for path, mode in sorted(folders, key=lambda f: f[0].count("/"), reverse=True):
        os.chmod(path, mode)
