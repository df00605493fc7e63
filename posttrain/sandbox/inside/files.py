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
    except PermissionError:  # locked by the task (mode 000): the file is ours, unlock it
        os.chmod(path, os.lstat(path).st_mode | 0o600)  # `resolve` refused symlinks
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


def _walk(root: str, remove: bool = False) -> list[tuple[str, os.stat_result]]:
    """Every entry under `root` as (relative path, lstat), parents before children;
    with `remove=True` each entry is also deleted (files on the way down, folders on
    the way back up).

    Iterative, and by relative `chdir` steps, so a task's 3,000-deep tree hits neither
    Python's recursion limit nor PATH_MAX; folders a task locked (mode 000) are
    unlocked first (they belong to the sandbox uid, like the server). Never follows
    a symlink. Restores the working directory.
    """
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.chdir(root)
        out: list[tuple[str, os.stat_result]] = []
        stack: list[tuple[list[str], str]] = [(sorted(os.listdir("."), reverse=True), "")]
        while stack:
            names, prefix = stack[-1]
            if not names:
                stack.pop()
                if stack:
                    os.chdir("..")
                    if remove:
                        with contextlib.suppress(OSError):
                            os.rmdir(prefix.rstrip("/").rpartition("/")[2])
                continue
            name = names.pop()
            try:
                st = os.lstat(name)
            except OSError:
                continue
            out.append((prefix + name, st))
            if not stat.S_ISDIR(st.st_mode):
                if remove:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name)
                elif stat.S_ISREG(st.st_mode) and st.st_mode & 0o600 != 0o600:
                    with contextlib.suppress(OSError):  # a file the task locked: ours to read
                        os.chmod(name, st.st_mode | 0o600)
                continue
            try:
                if st.st_mode & 0o700 != 0o700:
                    os.chmod(name, st.st_mode | 0o700)
                os.chdir(name)
            except OSError:
                continue  # `wipe` reports what it could not remove
            try:
                children = sorted(os.listdir("."), reverse=True)
            except OSError:
                children = []
            stack.append((children, prefix + name + "/"))
        return out
    finally:
        os.fchdir(here)
        os.close(here)


def list_files(root: str) -> list[str]:
    return sorted(rel for rel, st in _walk(root) if stat.S_ISREG(st.st_mode))


def wipe(root: str) -> None:
    """Empty a folder, however deep, locked or strange; raise if anything survives."""
    os.chmod(root, 0o755)  # a task may have locked the folder itself
    _walk(root, remove=True)
    left = os.listdir(root)
    if left:
        raise OSError(f"could not empty {root}: {left[:5]}")


def tar_workspace(root: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, st in _walk(root):
            full = os.path.join(root, rel)
            info = tar.gettarinfo(full, arcname=rel)
            if info.islnk():  # a second hard link becomes a copy: restore recreates every path
                info.type, info.linkname, info.size = tarfile.REGTYPE, "", st.st_size
            if info.isreg():
                with open(full, "rb") as f:
                    tar.addfile(info, f)
            elif info.isdir() or info.issym():
                tar.addfile(info)  # devices, FIFOs and sockets are not workspace content
    return buf.getvalue()


def untar_workspace(root: str, data: bytes) -> None:
    """Make `root` exactly the archive: regular files, folders and symlinks, nothing else.

    Hand-rolled rather than `extractall(filter="data")`, which the sandbox's
    interpreter may predate (Python < 3.11.4); names are checked by `resolve`.
    """
    wipe(root)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            path = resolve(root, member.name)
            if member.isdir():
                os.makedirs(path, exist_ok=True)
            elif member.isfile():
                handle = tar.extractfile(member)
                write_file(root, member.name, handle.read() if handle else b"", member.mode)
            elif member.issym():
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.symlink(member.linkname, path)
        for member in tar.getmembers():
            if member.isdir():
                os.chmod(resolve(root, member.name), (member.mode & 0o777) | 0o700)
