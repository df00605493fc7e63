"""Answer formats shared by the `list/*` domains: integer lists, integers, sets, JSON grids.

Each `judge_*` takes the model's whole final text and returns the `Verdict`; the text
must be exactly the answer in the stated format (surrounding whitespace aside), so
prose around an answer, or an echoed prompt, scores 0:

    judge_int_list([1, 2], "1, 2", "the deduplicated list")   # passed
    judge_int_set([3, 1], "1,3", "the intersection")           # passed: any order
    judge_int_set([3, 1], "1,3,3", "the intersection")         # reward 0: a repeat

`joined` writes the canonical list text and `distinct_wrongs` filters a domain's
candidate corruptions down to distinct texts the judge really rejects.

Not guaranteed: ASCII digits only, no thousands separators; texts longer than
`MAX_CHARS` characters are malformed; a set answer must be non-empty (no domain here
has an empty gold set), and a failed but well-formed set earns half its F1 as reward.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any

from posttrain.domains.answer_domain import verdict
from posttrain.types import Verdict
from posttrain.verify.answers import parse_int_list, strict_integer
from posttrain.verify.structure import parse_json

MAX_CHARS = 4000
INT_LIST_ONLY = (
    "Reply with the list as comma-separated integers (for example: 4,-1,7), nothing else."
)
INTEGER_ONLY = "Reply with the integer only (digits, with a leading minus sign if negative), nothing else."  # fmt: skip
INT_SET_ONLY = (
    "Reply with the integers separated by commas, each exactly once, in any order "
    "(for example: 4,-1,7), nothing else."
)
JSON_GRID_ONLY = (
    "Reply with a JSON array of arrays of integers (for example: [[1,2],[3]]), nothing else."
)
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def joined(values: Iterable[int]) -> str:
    """The canonical list text: `1,-2,3`."""
    return ",".join(str(v) for v in values)


def distinct_wrongs(
    answer: str, candidates: Iterable[str], is_right: Callable[[str], bool]
) -> list[str]:
    """The candidates in order, without repeats, the answer, or any the judge accepts."""
    out: list[str] = []
    for text in candidates:
        if text and text != answer and text not in out and not is_right(text):
            out.append(text)
    return out


def read_int_list(text: str) -> list[int] | None:
    """The integers when the whole text is a comma-separated list, else None."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    return parse_int_list(text)


def judge_int_list(expected: Sequence[int], text: str, what: str) -> Verdict:
    """Exactly the list `expected`, in order."""
    got = read_int_list(text)
    components = {"format": float(got is not None), "correct": float(got == list(expected))}
    if got is None:
        return verdict(False, what, components=components, why="the text is not an integer list")
    return verdict(got == list(expected), what, components=components, why=f"got {joined(got)}")


def judge_integer(expected: int, text: str, what: str) -> Verdict:
    """Exactly the integer `expected`."""
    got = strict_integer(text) if isinstance(text, str) and len(text) < MAX_CHARS else None
    components = {"format": float(got is not None), "correct": float(got == expected)}
    if got is None:
        return verdict(False, what, components=components, why="the text is not one integer")
    return verdict(got == expected, what, components=components, why=f"got {got}")


def read_decimal(text: str) -> Fraction | None:
    """The exact value when the whole text is an integer or a decimal like `-3.50`."""
    if not isinstance(text, str) or len(text) > 100:
        return None
    stripped = text.strip()
    return Fraction(stripped) if _DECIMAL.fullmatch(stripped) else None


def decimal_text(value: Fraction) -> str:
    """`7` or `3.5`: the shortest exact decimal of a value with a finite expansion."""
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.6f}".rstrip("0")


def set_reward(got: Sequence[Any], gold: Sequence[Any]) -> float:
    """Half the F1 of the two sets: partial credit for a well-formed, repeat-free set."""
    common = len(set(got) & set(gold))
    return 0.0 if common == 0 else 0.5 * 2 * common / (len(set(got)) + len(set(gold)))


def judge_items(got: list[Any] | None, gold: Sequence[Any], what: str, shown: str) -> Verdict:
    """The verdict for a parsed set answer (`got` None when malformed): same items, any
    order, none repeated."""
    if got is None:
        components = {"format": 0.0, "no_repeats": 0.0, "correct": 0.0}
        return verdict(False, what, components=components, why="the text is not in the format")
    repeats = len(set(got)) != len(got)
    passed = not repeats and set(got) == set(gold)
    components = {"format": 1.0, "no_repeats": float(not repeats), "correct": float(passed)}
    if repeats:
        return verdict(False, what, components=components, why="an item is repeated")
    reward = 1.0 if passed else set_reward(got, gold)
    return verdict(passed, what, components=components, reward=reward, why=f"got {shown}")


def judge_int_set(expected: Sequence[int], text: str, what: str) -> Verdict:
    """The integers of `expected` in any order, each once."""
    got = read_int_list(text)
    return judge_items(got, expected, what, joined(got or []))


def read_grid(text: str) -> list[list[int]] | None:
    """The value when the whole text is a JSON array of arrays of integers (ragged allowed)."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    value = parse_json(text)
    if not isinstance(value, list):
        return None
    for row in value:
        if not isinstance(row, list):
            return None
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in row):
            return None
    return value


def grid_text(grid: Sequence[Sequence[int]]) -> str:
    """The canonical JSON text of a grid: `[[1,2],[3]]`."""
    return "[" + ",".join("[" + joined(row) + "]" for row in grid) + "]"


def judge_grid(expected: Sequence[Sequence[int]], text: str, what: str) -> Verdict:
    """Exactly the grid `expected`; a grid of the right shape with a wrong value earns 0.2."""
    gold = [list(row) for row in expected]
    got = read_grid(text)
    if got is None:
        components = {"format": 0.0, "shape": 0.0, "correct": 0.0}
        why = "the text is not a JSON array of integer arrays"
        return verdict(False, what, components=components, why=why)
    shape = [len(row) for row in got] == [len(row) for row in gold]
    passed = got == gold
    components = {"format": 1.0, "shape": float(shape), "correct": float(passed)}
    reward = 1.0 if passed else 0.2 if shape else 0.0
    why = "a value is wrong" if shape else "the shape is wrong"
    return verdict(passed, what, components=components, reward=reward, why=why)
