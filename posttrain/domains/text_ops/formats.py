"""Answer judges shared by the `text/*` domains: one exact string, one integer, a word set.

    judge_text("uryyb", "uryyb\n", "the encoded text")     # passed: outer whitespace aside
    judge_word_set(["tab", "bat"], "bat, tab", "anagrams")  # passed: any order, each once

The whole final text must be the answer in the stated format, so prose around an answer
or an echoed prompt scores 0. `judge_integer`, `judge_items` and `distinct_wrongs` come
from the `list` family's `formats` module and behave the same here.

Not guaranteed: strings are compared exactly (case and inner spacing count) after
stripping outer whitespace; texts longer than `MAX_CHARS` are malformed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from posttrain.domains.answer_domain import verdict
from posttrain.domains.list_ops.formats import (
    INTEGER_ONLY,
    MAX_CHARS,
    distinct_wrongs,
    judge_integer,
    judge_items,
)
from posttrain.types import Verdict
from posttrain.verify.answers import strict_integer

__all__ = [
    "INTEGER_ONLY",
    "MAX_CHARS",
    "distinct_wrongs",
    "integer_wrongs",
    "judge_integer",
    "judge_text",
    "judge_word_set",
    "text_wrongs",
]

_WORD = re.compile(r"[a-z]+")


def judge_text(expected: str, text: str, what: str) -> Verdict:
    """Exactly `expected` once outer whitespace is stripped."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return verdict(False, what, why="the text is too long")
    got = text.strip()
    shown = got if len(got) <= 60 else got[:57] + "..."
    return verdict(got == expected, what, why=f"got {shown!r}")


def read_words(text: str) -> list[str] | None:
    """The words when the whole text is lowercase words separated by commas, else None."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    pieces = [p.strip() for p in text.split(",")]
    if not all(_WORD.fullmatch(p) for p in pieces):
        return None
    return pieces


def judge_word_set(gold: Sequence[str], text: str, what: str) -> Verdict:
    """The words of `gold` in any order, each once, comma-separated."""
    got = read_words(text)
    return judge_items(got, list(gold), what, ",".join(got or []))


def text_wrongs(answer: str, candidates: Sequence[str]) -> list[str]:
    """The distinct candidates that differ from the answer after stripping."""
    return distinct_wrongs(answer, [c.strip() for c in candidates], lambda t: t == answer)


def integer_wrongs(answer: int, extra: Sequence[int]) -> list[str]:
    """The domain's own mistakes, then the answer off by one either way and by two."""
    texts = [str(v) for v in [*extra, answer + 1, answer - 1, answer + 2]]
    return distinct_wrongs(str(answer), texts, lambda t: strict_integer(t) == answer)
