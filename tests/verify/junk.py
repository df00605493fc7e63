"""The junk texts every verifier function must survive: shared by the tests/verify files."""

from __future__ import annotations

import random
import string
from typing import Any


def junk_texts(*extra: Any) -> list[Any]:
    """Empty, whitespace, 100 KB of printable noise, broken UTF-8, a lone surrogate, a
    5,000-digit number, 100 KB of '[' — then each file's own `extra` cases."""
    rng = random.Random(0)
    return [
        "",
        "   \n\t",
        "".join(rng.choice(string.printable) for _ in range(100_000)),
        b"\xff\xfe 4\xc3(2 \xed\xa0\x80".decode(errors="replace"),
        "\ud800 12",
        "9" * 5000,
        "[" * 100_000,
        *extra,
    ]
