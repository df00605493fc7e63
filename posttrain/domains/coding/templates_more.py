"""The rest of the template library (intervals, stock keeping, a CLI report) and `TEMPLATES`.

`TEMPLATES` is every Python template, in a fixed order (generation indexes it):

    from posttrain.domains.coding.templates_more import TEMPLATES

Not guaranteed: see `templates.py`.
"""

from __future__ import annotations

import random

from posttrain.domains.coding.templates import (
    KVPARSE,
    RINGBUFFER,
    STATS,
    TEXTUTIL,
    WORDS,
    Function,
    Site,
    Template,
)


def _intervals(rng: random.Random, n: int) -> list[list[int]]:
    return [(lambda a: [a, a + rng.randint(0, 6)])(rng.randint(0, 25)) for _ in range(rng.randint(1, n + 1))]  # fmt: skip


INTERVALS = Template(
    "intervals", "interval arithmetic",
    '''"""Closed integer intervals [start, end]: merging, covered length, membership."""


def merge(intervals):
    """Overlapping or touching intervals merged into one, sorted by start."""
    result = []
    for start, end in sorted(intervals):
        if result and start <= result[-1][1]:
            result[-1][1] = max(result[-1][1], end)
        else:
            result.append([start, end])
    return result


def total_length(intervals):
    """The length covered by the union of the intervals."""
    return sum(end - start for start, end in merge(intervals))


def contains(intervals, point):
    """Whether some interval covers `point` (both ends included)."""
    return any(start <= point <= end for start, end in intervals)
''',
    (
        Function("merge", lambda rng, n: [_intervals(rng, n)]),
        Function("total_length", lambda rng, n: [_intervals(rng, n)]),
        Function("contains", lambda rng, n: (lambda iv: [iv, rng.choice([x for i in iv for x in i] + [rng.randint(0, 30)])])(_intervals(rng, n))),
    ),
    (
        Site("wrong_operator", "merge", "if result and start <= result[-1][1]:", "if result and start < result[-1][1]:", 2),
        Site("missing_edge_case", "merge", "result[-1][1] = max(result[-1][1], end)", "result[-1][1] = end", 2),
        Site("off_by_one", "contains", "start <= point <= end", "start <= point < end", 2),
        Site("missing_step", "merge", "for start, end in sorted(intervals):", "for start, end in intervals:", 1),
    ),
)  # fmt: skip

INVENTORY = Template(
    "inventory", "stock keeping",
    '''"""Stock keeping: counts per item name, rebuilt per order, and low-stock reports."""


def add_item(name, count, stock=None):
    """`stock` (a new dict when omitted) with `count` more of `name`."""
    if stock is None:
        stock = {}
    stock[name] = stock.get(name, 0) + count
    return stock


def restock(orders):
    """One stock dict per order ([[name, count], ...]), each counted from zero."""
    result = []
    for order in orders:
        stock = add_item(order[0][0], order[0][1]) if order else {}
        for name, count in order[1:]:
            add_item(name, count, stock)
        result.append(stock)
    return result


def low_items(stock, threshold=2):
    """Names whose count is below `threshold`, sorted."""
    return sorted(name for name, count in stock.items() if count < threshold)
''',
    (
        Function("restock", lambda rng, n: [[[[rng.choice(WORDS[:5]), rng.randint(1, 4)] for _ in range(rng.randint(1, 3))] for _ in range(rng.randint(2, n + 2))]]),
        Function("low_items", lambda rng, n: [{w: rng.randint(0, 4) for w in rng.sample(WORDS, rng.randint(1, min(n + 1, 9)))}]),
    ),
    (
        Site("mutable_default", "add_item", "def add_item(name, count, stock=None):\n    \"\"\"`stock` (a new dict when omitted) with `count` more of `name`.\"\"\"\n    if stock is None:\n        stock = {}\n",
             "def add_item(name, count, stock={}):\n    \"\"\"`stock` (a new dict when omitted) with `count` more of `name`.\"\"\"\n", 2),
        Site("wrong_default", "low_items", "threshold=2", "threshold=3", 2),
        Site("wrong_operator", "low_items", "if count < threshold", "if count <= threshold", 2),
        Site("swapped_arguments", "restock", "add_item(name, count, stock)", "add_item(count, name, stock)", 1),
    ),
)  # fmt: skip

REPORT = Template(
    "report", "a command-line word report",
    '''"""`python3 -m PACKAGE.report [--top K] WORD...`: a table of word counts and a total."""

import sys


def tally(words):
    """[[word, count], ...] sorted by count (highest first), then by word."""
    counts = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return sorted(([w, c] for w, c in counts.items()), key=lambda pair: (-pair[1], pair[0]))


def format_table(rows, width=8):
    """One line per [label, number]: the label padded with dots to `width`, then the number."""
    return "\\n".join(label.ljust(width, ".") + str(number) for label, number in rows)


def main(argv):
    """Print the table of the words' counts (the `--top K` most common only), then the total."""
    top = None
    if len(argv) >= 2 and argv[0] == "--top":
        top = int(argv[1])
        argv = argv[2:]
    rows = tally(argv)
    if top is not None:
        rows = rows[:top]
    print(format_table(rows))
    print(f"total: {len(argv)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
''',
    (
        Function("main", lambda rng, n: [(["--top", str(rng.randint(1, 3))] if rng.random() < 0.5 else [])
                 + [rng.choice(WORDS[: 3 + n // 2]) for _ in range(rng.randint(1, n + 3))]], capture=True),
        Function("tally", lambda rng, n: [[rng.choice(WORDS[:4]) for _ in range(rng.randint(0, n + 2))]]),
    ),
    (
        Site("wrong_operator", "tally", "key=lambda pair: (-pair[1], pair[0])", "key=lambda pair: (pair[1], pair[0])", 1),
        Site("off_by_one", "main", "rows = rows[:top]", "rows = rows[: top - 1]", 1),
        Site("wrong_value", "main", 'print(f"total: {len(argv)}")', 'print(f"total: {len(rows)}")', 2),
        Site("wrong_default", "format_table", "def format_table(rows, width=8):", "def format_table(rows, width=6):", 2),
    ),
)  # fmt: skip

NAMES = ("ann", "bo", "cy", "dee", "eli", "fay", "gus")


def _grades_argv(rng: random.Random, n: int) -> list[list[str]]:
    items = [f"{rng.choice(NAMES)}:{rng.choice([rng.randint(40, 100), rng.randint(4, 10) * 10])}" for _ in range(rng.randint(0, n + 1))]  # fmt: skip
    if rng.random() < 0.2:
        items.insert(rng.randint(0, len(items)), rng.choice(NAMES))
    return [(["--pass", str(rng.choice([50, 70, 75]))] if rng.random() < 0.4 else []) + items]


GRADES = Template(
    "grades", "a command-line grade report",
    '''"""`python3 -m PACKAGE.grades [--pass N] NAME:SCORE...`: letter grades and a summary."""

import sys


def letter(score):
    """A for 90 and up, B for 80 and up, C for 70 and up, D for 60 and up, else F."""
    for bound, grade in ((90, "A"), (80, "B"), (70, "C"), (60, "D")):
        if score >= bound:
            return grade
    return "F"


def parse(items):
    """["ann:91", ...] -> [["ann", 91], ...]; items without a colon are skipped."""
    out = []
    for item in items:
        name, sep, score = item.partition(":")
        if sep:
            out.append([name, int(score)])
    return out


def main(argv):
    """Print `NAME GRADE` per student in order, then `passed: P/N` and the average score."""
    threshold = 60
    if len(argv) >= 2 and argv[0] == "--pass":
        threshold = int(argv[1])
        argv = argv[2:]
    students = parse(argv)
    for name, score in students:
        print(f"{name} {letter(score)}")
    passed = sum(1 for _, score in students if score >= threshold)
    print(f"passed: {passed}/{len(students)}")
    if students:
        print(f"average: {sum(s for _, s in students) / len(students):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
''',
    (
        Function("main", _grades_argv, capture=True),
        Function("parse", lambda rng, n: _grades_argv(rng, n)[0][-3:]),
    ),
    (
        Site("wrong_operator", "letter", "if score >= bound:", "if score > bound:", 2),
        Site("wrong_default", "main", "threshold = 60", "threshold = 50", 1),
        Site("wrong_operator", "main", "if score >= threshold)", "if score > threshold)", 2),
        Site("missing_edge_case", "main", "    if students:\n        print(", "    if True:\n        print(", 3),
        Site("wrong_operator", "main", "/ len(students):.1f", "// len(students):.1f", 2),
        Site("missing_edge_case", "parse", "        if sep:\n            out.append", "        if True:\n            out.append", 1),
    ),
)  # fmt: skip

TEMPLATES: tuple[Template, ...] = (
    TEXTUTIL,
    KVPARSE,
    STATS,
    RINGBUFFER,
    INTERVALS,
    INVENTORY,
    REPORT,
    GRADES,
)
