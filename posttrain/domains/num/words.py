"""`num/*` numbers in English words, both ways: writing an integer out and reading it back.

    from posttrain.domains.num.words import DOMAINS, to_words
    to_words(1204017)  # 'one million two hundred four thousand seventeen'

`num/to-words-v1` asks for the one canonical American spelling (lower case, tens and
units hyphenated, no "and", no commas) and compares after collapsing whitespace and
ignoring case; `num/from-words-v1` gives that spelling and asks for the digits. Both
are exact; the number has 2 (d=1) to 11 (d=10) digits, which is the `measure`.

Not guaranteed: British forms ("one hundred and five"), "a hundred", "twelve hundred",
commas between groups and missing hyphens are wrong answers for `num/to-words-v1`,
as its prompt says; numbers reach the hundreds of billions, no further.
"""

from __future__ import annotations

import random
import re

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.num.numerals import judge_integer, number_with_digits, wrong_answers
from posttrain.types import Task, Verdict
from posttrain.verify.answers import normalize_text, strict_integer

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
         "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
         "seventeen", "eighteen", "nineteen"]  # fmt: skip
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_GROUPS = ["", "thousand", "million", "billion"]


def _below_thousand(n: int, british: bool = False) -> list[str]:
    words: list[str] = []
    hundreds, rest = divmod(n, 100)
    if hundreds:
        words += [_ONES[hundreds], "hundred"]
        if rest and british:
            words.append("and")
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        words.append(_TENS[tens] + (f"-{_ONES[ones]}" if ones else ""))
    elif rest:
        words.append(_ONES[rest])
    return words


def to_words(n: int, *, british: bool = False) -> str:
    """`n` in 0..10**12 - 1 in American English words (`british=True` adds "and").

    >>> to_words(0), to_words(40), to_words(1204017)
    ('zero', 'forty', 'one million two hundred four thousand seventeen')
    """
    if n == 0:
        return "zero"
    words: list[str] = []
    for power in range(len(_GROUPS) - 1, -1, -1):
        group = n // 1000**power % 1000
        if group:
            words += _below_thousand(group, british) + ([_GROUPS[power]] if power else [])
    return " ".join(words)


def _digits(difficulty: int) -> int:
    return difficulty + 1


class ToWords(AnswerDomain):
    """Write an integer out in English words."""

    id = "num/to-words-v1"
    axes = Axes("text", "none", "single", "exact")
    instructions = (
        "Write it in lower-case American English: hyphenate tens and units (forty-two), no "
        "'and', no commas, one space between words. Example: 1204017 is one million two "
        "hundred four thousand seventeen. Reply with the words only."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = number_with_digits(rng, _digits(difficulty))
        return Problem(f"Write {n} in words.", to_words(n), {"n": n}, _digits(difficulty))

    def judge(self, task: Task, text: str) -> Verdict:
        said = normalize_text(text).lower() if len(text) < 2_000 else ""
        well_formed = re.fullmatch(r"[a-z]+(?:[ -][a-z]+)*", said) is not None
        right = said == task.answer
        components = {"format": float(well_formed), "correct": float(right)}
        why = "the text is not words only" if not well_formed else f"got {said[:80]!r}"
        return verdict(right, "the number in words", components=components, why=why)

    def wrong(self, task: Task) -> list[str]:
        n = task.meta["n"]
        candidates = [
            to_words(n, british=True),
            task.answer.replace("-", " "),  # hyphens left out
            to_words(n + 1),
            to_words(n - 1),
            to_words(n - n % 1000) if n >= 1000 else to_words(n - n % 10),  # a group left off
            str(n),
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


class FromWords(AnswerDomain):
    """Read an integer written in English words and give its digits."""

    id = "num/from-words-v1"
    axes = Axes("text", "none", "single", "exact")
    instructions = "Reply with the integer in digits only: no commas, spaces or other text."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = number_with_digits(rng, _digits(difficulty))
        return Problem(
            f'Write the number "{to_words(n)}" in digits.', str(n), {"n": n}, _digits(difficulty)
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(int(task.answer), text, "the number in digits")

    def wrong(self, task: Task) -> list[str]:
        n = int(task.answer)
        # A group left off, or a group's place value wrong by a thousand.
        candidates = [str(v) for v in (n - n % 1000, n + 1, n - 1, n * 1000, n // 1000)]
        return wrong_answers(task.answer, candidates, lambda t: strict_integer(t) == n)


DOMAINS: tuple[AnswerDomain, ...] = (ToWords(), FromWords())
