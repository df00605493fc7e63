"""Apply a unified diff (`git diff` / `diff -u` output) to files held on the host.

    new_files = apply_patch({"pkg/m.py": source}, patch_text)   # raises PatchError

Headers `--- a/path` / `+++ b/path` (the `a/`, `b/` prefixes are optional; `/dev/null`
creates or deletes a file) and hunks `@@ -l,n +l,n @@`. A hunk applies where its
context and removed lines match exactly (line endings aside), searched outward from
the line its header names, so stale line numbers are fine. All hunks apply or none.

Not guaranteed: no fuzz (context must match), no binary patches, no renames; a file's
trailing newline follows the patch's `\\ No newline at end of file` markers only roughly.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(ValueError):
    """The patch is malformed or does not apply; the message says where."""


@dataclass
class _Hunk:
    start: int  # 1-based line in the old file
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)


@dataclass
class _FilePatch:
    old_path: str | None
    new_path: str | None
    hunks: list[_Hunk] = field(default_factory=list)


def clean_path(raw: str) -> str | None:
    """A workspace-relative path from a header or tool argument; None for /dev/null."""
    path = raw.split("\t")[0].strip()
    if path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        path = path[2:]
    norm = posixpath.normpath(path)
    if not path or norm.startswith(("/", "..")) or norm == ".":
        raise PatchError(f"path {raw[:80]!r} is not inside the workspace")
    return norm


def _parse(patch: str) -> list[_FilePatch]:
    lines = patch.splitlines()
    out: list[_FilePatch] = []
    i = 0
    while i < len(lines):
        if not (
            lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ):
            i += 1
            continue
        current = _FilePatch(clean_path(lines[i][4:]), clean_path(lines[i + 1][4:]))
        out.append(current)
        i += 2
        while i < len(lines) and (match := _HUNK.match(lines[i])):
            old_n = int(match.group(2)) if match.group(2) is not None else 1
            new_n = int(match.group(4)) if match.group(4) is not None else 1
            hunk = _Hunk(int(match.group(1)))
            i += 1
            while i < len(lines) and (len(hunk.old) < old_n or len(hunk.new) < new_n):
                line = lines[i]
                tag, body = (line[:1], line[1:]) if line else (" ", "")
                if tag == " ":
                    hunk.old.append(body)
                    hunk.new.append(body)
                elif tag == "-":
                    hunk.old.append(body)
                elif tag == "+":
                    hunk.new.append(body)
                elif tag != "\\":
                    raise PatchError(f"line {i + 1}: unexpected {line[:40]!r} inside a hunk")
                i += 1
            if (len(hunk.old), len(hunk.new)) != (old_n, new_n):
                raise PatchError(f"line {i}: the hunk ends early (its header promised more lines)")
            while i < len(lines) and lines[i].startswith("\\"):
                i += 1
            current.hunks.append(hunk)
    if not out:
        raise PatchError("no file headers (--- a/path, +++ b/path) found")
    return out


def _find(lines: list[str], block: list[str], hint: int) -> int:
    """The index nearest `hint` where `block` matches `lines`, or -1."""
    if not block:
        return min(max(hint, 0), len(lines))
    hint = min(max(hint, 0), max(len(lines) - len(block), 0))
    for offset in range(len(lines) + 1):
        for at in (hint - offset, hint + offset):
            if 0 <= at <= len(lines) - len(block) and lines[at : at + len(block)] == block:
                return at
    return -1


def apply_patch(files: Mapping[str, str], patch: str) -> dict[str, str]:
    """A new file mapping with `patch` applied; PatchError when any part does not apply."""
    if not isinstance(patch, str) or not patch.strip():
        raise PatchError("the patch is empty")
    result = dict(files)
    for fp in _parse(patch):
        if fp.old_path is None and fp.new_path is None:
            raise PatchError("a file patch goes from /dev/null to /dev/null")
        if fp.old_path is not None and fp.old_path not in result:
            raise PatchError(f"{fp.old_path}: no such file")
        text = result.get(fp.old_path, "") if fp.old_path is not None else ""
        lines = text.splitlines()
        shift = 0
        for hunk in fp.hunks:
            at = _find(lines, hunk.old, hunk.start - 1 + shift)
            if at < 0:
                first = hunk.old[0][:60] if hunk.old else ""
                raise PatchError(f"{fp.old_path}: hunk at line {hunk.start} does not match (first line {first!r})")  # fmt: skip
            lines[at : at + len(hunk.old)] = hunk.new
            shift += len(hunk.new) - len(hunk.old)
        if fp.old_path is not None and fp.old_path != fp.new_path:
            result.pop(fp.old_path, None)
        if fp.new_path is not None:
            result[fp.new_path] = "\n".join(lines) + ("\n" if lines else "")
    return result
