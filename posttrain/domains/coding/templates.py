"""Program templates: small Python modules, each with its test inputs and its bug sites.

A `Template` is one module of a generated repository (`repo.py`): its correct
source, the functions tests call (`Function`: a name and an input generator
`args(rng, size)`), and the places where a bug from the catalogue (`bugs.py`) can be
injected (`Site`: an exact substring of the source and its buggy replacement).

    from posttrain.domains.coding.templates_more import TEMPLATES
    template = TEMPLATES[0]; template.functions[0].args(rng, 4)

Not guaranteed: a site's buggy code must not loop forever on any generated input
(the generator runs it on the host); `tests/domains/coding/test_templates.py`
checks that every site applies and changes some output.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Args = Callable[[random.Random, int], list[Any]]


@dataclass(frozen=True)
class Function:
    name: str
    args: Args  # (rng, size) -> positional arguments, JSON values only
    capture: bool = False  # the case's value is [return value, printed text]


@dataclass(frozen=True)
class Site:
    """One injectable bug: `old` occurs exactly once in the source and becomes `new`."""

    kind: str  # a `bugs.KINDS` name
    function: str  # the function (or method's class) the site is in
    old: str
    new: str
    subtlety: int  # 1 (the output is plainly wrong) .. 3 (only rare inputs show it)


@dataclass(frozen=True)
class Template:
    module: str
    topic: str  # what the README calls it
    source: str
    functions: tuple[Function, ...]
    sites: tuple[Site, ...]


WORDS = ("alpha", "beta", "gamma", "delta", "omega", "kiwi", "lime", "fig", "plum", "date")


def _text(rng: random.Random, size: int) -> str:
    parts = [rng.choice(WORDS).capitalize() if rng.random() < 0.3 else rng.choice(WORDS)
             for _ in range(rng.randint(1, size + 1))]  # fmt: skip
    return "".join(p + rng.choice([" ", ", ", "! ", " - ", "  "]) for p in parts).rstrip()


def _ints(rng: random.Random, n: int, lo: int = -5, hi: int = 20) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


TEXTUTIL = Template(
    "textutil", "text utilities",
    '''"""Text utilities: slugs, truncation, word counts."""


def slugify(text, sep="-"):
    """Lower-case words of `text` joined by `sep`; other characters are dropped."""
    words = []
    current = ""
    for ch in text.lower():
        if ch.isalnum():
            current += ch
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    return sep.join(words)


def truncate(text, width, marker="..."):
    """`text` cut to at most `width` characters, ending in `marker` when it was cut."""
    if len(text) <= width:
        return text
    if width <= len(marker):
        return marker[:width]
    return text[: width - len(marker)] + marker


def word_counts(text):
    """How often each lower-cased word occurs."""
    counts = {}
    for word in text.lower().split():
        counts[word] = counts.get(word, 0) + 1
    return counts
''',
    (
        Function("slugify", lambda rng, n: [_text(rng, n)] if rng.random() < 0.8 else [_text(rng, n), "_"]),
        Function("truncate", lambda rng, n: (lambda t: [t, max(0, len(t) + rng.randint(-6, 1))])(_text(rng, n))),
        Function("word_counts", lambda rng, n: [" ".join(rng.choice(WORDS[:4]) for _ in range(rng.randint(0, n + 2)))]),
    ),
    (
        Site("missing_edge_case", "slugify", "    if current:\n        words.append(current)\n", "", 1),
        Site("wrong_default", "slugify", 'sep="-"', 'sep="_"', 1),
        Site("wrong_operator", "truncate", "if len(text) <= width:", "if len(text) < width:", 2),
        Site("off_by_one", "truncate", "text[: width - len(marker)]", "text[: width - len(marker) + 1]", 2),
        Site("wrong_branch", "truncate", "return marker[:width]", "return text[:width]", 3),
    ),
)  # fmt: skip

KVPARSE = Template(
    "kvparse", "a parser of settings strings",
    '''"""Parsers for settings strings: integers, `key=value` pairs, number ranges."""


def parse_int(text, default=0):
    """The integer in `text` (spaces around it allowed), or `default` if it is not one."""
    try:
        return int(text.strip())
    except ValueError:
        return default


def parse_pairs(text, sep=";"):
    """`"a=1;b=2"` -> {"a": 1, "b": 2}; values go through parse_int; empty items are skipped."""
    result = {}
    for item in text.split(sep):
        if not item.strip():
            continue
        key, _, value = item.partition("=")
        result[key.strip()] = parse_int(value)
    return result


def parse_ranges(text):
    """`"1-3,7"` -> [1, 2, 3, 7]: comma-separated numbers and inclusive ranges."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-")
            out.extend(range(int(low), int(high) + 1))
        else:
            out.append(int(part))
    return out
''',
    (
        Function("parse_int", lambda rng, n: [rng.choice([f" {rng.randint(-99, 99)}", str(rng.randint(0, 999)), rng.choice(WORDS), "", "4x"])]),
        Function("parse_pairs", lambda rng, n: [";".join(
            rng.choice(["", f"{rng.choice(WORDS)}={rng.choice([str(rng.randint(0, 50)), 'x', ' 7 '])}"])
            if rng.random() < 0.25 else f"{rng.choice(WORDS)}={rng.randint(0, 50)}"
            for _ in range(rng.randint(1, n + 1)))]),
        Function("parse_ranges", lambda rng, n: [",".join(
            (lambda a: f"{a}-{a + rng.randint(0, 3)}" if rng.random() < 0.5 else str(a))(rng.randint(0, 30))
            for _ in range(rng.randint(1, n)))]),
    ),
    (
        Site("exception_not_handled", "parse_int",
             "    try:\n        return int(text.strip())\n    except ValueError:\n        return default\n",
             "    return int(text.strip())\n", 1),
        Site("off_by_one", "parse_ranges", "range(int(low), int(high) + 1)", "range(int(low), int(high))", 1),
        Site("missing_edge_case", "parse_pairs", "        if not item.strip():\n            continue\n", "", 2),
        Site("wrong_default", "parse_int", "def parse_int(text, default=0):", "def parse_int(text, default=-1):", 2),
    ),
)  # fmt: skip

STATS = Template(
    "stats", "numeric routines",
    '''"""Numeric routines over lists of numbers."""


def mean(values):
    """The arithmetic mean; 0.0 for an empty list."""
    if not values:
        return 0.0
    return sum(values) / len(values)


def clamp(value, low, high):
    """`value` limited to the range [low, high]."""
    return max(low, min(value, high))


def normalize(values, low=0, high=100):
    """Every value clamped to [low, high]."""
    return [clamp(v, low, high) for v in values]


def moving_sums(values, window):
    """The sums of every `window` consecutive values, in order."""
    return [sum(values[i : i + window]) for i in range(len(values) - window + 1)]


def median(values):
    """The middle of the sorted values (the mean of the middle two for an even count)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
''',
    (
        Function("mean", lambda rng, n: [_ints(rng, rng.choice([0, rng.randint(1, n + 1)]))]),
        Function("normalize", lambda rng, n: [_ints(rng, rng.randint(1, n + 1), -50, 150)]),
        Function("moving_sums", lambda rng, n: [_ints(rng, rng.randint(1, n + 2)), rng.randint(1, 3)]),
        Function("median", lambda rng, n: [_ints(rng, rng.randint(1, n + 1))]),
    ),
    (
        Site("swapped_arguments", "normalize", "clamp(v, low, high)", "clamp(low, v, high)", 2),
        Site("off_by_one", "moving_sums", "range(len(values) - window + 1)", "range(len(values) - window)", 1),
        Site("wrong_branch", "median", "if len(ordered) % 2 == 1:", "if len(ordered) % 2 == 0:", 1),
        Site("missing_edge_case", "mean", "    if not values:\n        return 0.0\n", "", 2),
        Site("wrong_default", "normalize", "low=0, high=100", "low=0, high=10", 2),
    ),
)  # fmt: skip


def _ring_ops(rng: random.Random, n: int) -> list[Any]:
    ops = [rng.choice([f"push {rng.randint(0, 9)}"] * 3 + ["pop", "peek"]) for _ in range(n + 3)]
    return [rng.choice([0, 1, 2, 3, 3, 4]) if rng.random() < 0.15 else rng.randint(1, 4), ops]


RINGBUFFER = Template(
    "ringbuffer", "a data structure",
    '''"""A fixed-capacity ring buffer and a driver that replays operations on one."""


class RingBuffer:
    """A queue of at most `capacity` items that drops its oldest item when full."""

    def __init__(self, capacity):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.items = []

    def push(self, item):
        self.items.append(item)
        if len(self.items) > self.capacity:
            self.items.pop(0)

    def pop(self):
        if not self.items:
            raise IndexError("pop from an empty buffer")
        return self.items.pop(0)

    def peek(self):
        return self.items[0] if self.items else None


def run(capacity, ops):
    """Apply `ops` ("push N", "pop", "peek") to a new buffer; what pop and peek return."""
    buffer = RingBuffer(capacity)
    out = []
    for op in ops:
        if op.startswith("push "):
            buffer.push(int(op[5:]))
        elif op == "pop":
            out.append(buffer.pop() if buffer.items else None)
        else:
            out.append(buffer.peek())
    return out
''',
    (Function("run", _ring_ops),),
    (
        Site("wrong_operator", "RingBuffer", "if len(self.items) > self.capacity:", "if len(self.items) >= self.capacity:", 1),
        Site("wrong_branch", "run", "buffer.pop() if buffer.items else None", "None if buffer.items else buffer.pop()", 1),
        Site("off_by_one", "RingBuffer", "            self.items.pop(0)\n", "            self.items.pop(1)\n", 2),
        Site("missing_edge_case", "RingBuffer", "if capacity < 1:", "if capacity < 0:", 3),
    ),
)  # fmt: skip
