"""`num/words.py`: the canonical American spelling, written and read."""

from __future__ import annotations

import doctest

from posttrain.domains.num import words
from posttrain.domains.num.words import FromWords, ToWords, to_words


def test_the_doctests_hold() -> None:
    assert doctest.testmod(words).failed == 0


def test_spelling_covers_teens_round_tens_and_empty_groups() -> None:
    assert to_words(13) == "thirteen"
    assert to_words(90) == "ninety"
    assert to_words(1_000_005) == "one million five"
    assert to_words(700_000_000_021) == "seven hundred billion twenty-one"


def test_to_words_ignores_case_and_spacing_but_not_and_or_missing_hyphens() -> None:
    domain = ToWords()
    task = domain.generate(0, 5)
    assert domain.judge(task, "  " + task.answer.upper().replace(" ", "  ") + "\n").passed
    assert not domain.judge(task, to_words(task.meta["n"], british=True)).passed
    assert not domain.judge(task, task.answer.replace("-", " ")).passed
    assert not domain.judge(task, task.answer + ".").passed


def test_from_words_answer_spells_back_to_the_prompt() -> None:
    domain = FromWords()
    for seed in range(10):
        task = domain.generate(seed, 10)
        assert to_words(int(task.answer)) in task.prompt[0].content
