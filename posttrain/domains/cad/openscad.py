"""OpenSCAD inside the sandbox: model-written source in, an STL (or the compiler's errors) out.

    result = compile_scad("cube([10, 10, 2]);")
    result.stl        # binary STL bytes, or None
    result.log        # the compiler's warnings and errors, trimmed (what a `render` tool shows)
    result.error      # set only when the *infrastructure* failed: no openscad, no sandbox

Model code is untrusted, so OpenSCAD runs in a sandbox leased from the process-wide
pool `cad-openscad` (`shared_pool`): no network, its own workspace, rlimits, a wall
clock (`COMPILE_TIMEOUT_S`). The STL is read back through the sandbox API and parsed
on the host (posttrain/verify/geometry.py). Results are cached per source text in
this process (`CACHE_SIZE` entries), since compiling is deterministic and a
self-check or a group of rollouts often compiles the same text twice.

A missing `openscad` binary is reported as `error` (a verifier error, not a wrong
answer); `openscad_available()` says whether it is installed, for tests to skip on.

Not guaranteed: compile time depends on OpenSCAD's CGAL kernel (Debian's 2021.01):
differences with many round holes take a second or more, so verification of one
answer is about 0.3–2 s. Output over `STL_LIMIT_MB` is refused by the sandbox's
file-size limit (the compile then fails).
"""

from __future__ import annotations

import hashlib
import shutil
import threading
from collections import OrderedDict
from dataclasses import dataclass

from posttrain.sandbox import SandboxError, SandboxSpec
from posttrain.sandbox.shared import shared_pool

COMPILE_TIMEOUT_S = 30.0
STL_LIMIT_MB = 32
CACHE_SIZE = 256
MAX_SOURCE_CHARS = 100_000
SPEC = SandboxSpec(memory_mb=2048, timeout_s=COMPILE_TIMEOUT_S, max_processes=16, max_file_mb=STL_LIMIT_MB, tmpfs_mb=96, output_cap=1 << 16)  # fmt: skip
_LOG_LINES = 12


@dataclass(frozen=True)
class CompileResult:
    """One compile: the STL bytes when it succeeded, the trimmed log, or an infra error."""

    stl: bytes | None
    log: str
    timed_out: bool = False
    error: str | None = None


_cache: OrderedDict[str, CompileResult] = OrderedDict()
_lock = threading.Lock()


def openscad_available() -> bool:
    return shutil.which("openscad") is not None


def compile_scad(source: str, timeout: float = COMPILE_TIMEOUT_S) -> CompileResult:
    """Compile `source` to binary STL in a sandbox; never raises."""
    if len(source) > MAX_SOURCE_CHARS:
        return CompileResult(None, f"the source is longer than {MAX_SOURCE_CHARS} characters")
    key = hashlib.sha256(source.encode(errors="replace")).hexdigest()
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    result = _compile(source, timeout)
    if result.error is None:
        with _lock:
            _cache[key] = result
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return result


def _compile(source: str, timeout: float) -> CompileResult:
    if not openscad_available():
        return CompileResult(None, "", error="openscad is not installed (apt-get install openscad)")
    argv = ["openscad", "--export-format", "binstl", "-o", "out.stl", "in.scad"]
    try:
        with shared_pool("cad-openscad", SPEC, size=1, max_tasks=200).lease(timeout=120) as box:
            box.write_file("in.scad", source.encode(errors="replace"))
            run = box.exec(argv, timeout=timeout)
            stl = None
            if run.ok and "out.stl" in box.list_files():
                stl = box.read_file("out.stl", text=False)
    except (SandboxError, TimeoutError, OSError) as exc:
        return CompileResult(None, "", error=f"sandbox: {exc}")
    if run.error:
        return CompileResult(None, "", error=f"sandbox: {run.error}")
    log = _trim_log(run.stderr)
    if run.timed_out:
        return CompileResult(None, f"the compile timed out after {timeout:g} s", timed_out=True)
    if not run.ok or not stl:
        return CompileResult(None, log or f"openscad exited with code {run.exit_code}")
    return CompileResult(stl, log)


def _trim_log(stderr: str) -> str:
    """The lines a modeller needs: errors and warnings, not CGAL's statistics."""
    keep = [
        line.strip()
        for line in stderr.splitlines()
        if any(
            tag in line
            for tag in ("ERROR", "WARNING", "error", "Parser", "top level object is empty")
        )
    ]
    return "\n".join(line[:200] for line in keep[:_LOG_LINES])
