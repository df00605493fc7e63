"""Keep glibc's heap from holding freed training buffers: `limit_heap_growth()`.

glibc serves an allocation above its mmap threshold with its own mapping and
returns it to the kernel on free, but it raises that threshold (up to 32 MiB) each
time such a block is freed. A training loop frees activation buffers of changing
sizes on every step, so after a few steps they all come from the heap, which then
fragments: in the recipe, 60 SFT steps of the tiny model grew the process from
416 to 712 MB RSS. Pinning the threshold at 1 MiB kept it at 484 MB with the same
step speed (at 64 KiB the page faults halve the speed), measured by
`bench/peak_memory.py` and recorded in docs/benchmarks.md.

`limit_heap_growth()` sets the threshold for this process through `mallopt` and
exports `MALLOC_MMAP_THRESHOLD_` so that spawned children (the control arm) start
with it. A value the user already exported wins.

Not guaranteed: a no-op where the C library is not glibc; memory that torch's own
allocators or other libraries hold is not affected.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MMAP_THRESHOLD_BYTES = 1 << 20
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
_ENV = "MALLOC_MMAP_THRESHOLD_"


def limit_heap_growth(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Pin glibc's mmap threshold (here and in spawned children); True when it took effect."""
    value = int(os.environ.setdefault(_ENV, str(threshold)))
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, value))
