"""`text_ops/formats.py` and `text_ops/vocabulary.py`: shared judges and the word bank."""

from __future__ import annotations

from posttrain.domains.text_ops.formats import integer_wrongs, judge_text, judge_word_set
from posttrain.domains.text_ops.vocabulary import WORDS


def test_text_ignores_outer_whitespace_only() -> None:
    assert judge_text("ab cd", "  ab cd\n", "x").passed
    assert not judge_text("ab cd", "ab  cd", "x").passed
    assert not judge_text("ab cd", "Ab cd", "x").passed


def test_word_set_refuses_capitals_and_other_separators() -> None:
    assert judge_word_set(["tab", "bat"], "bat, tab", "x").passed
    assert not judge_word_set(["tab", "bat"], "bat; tab", "x").passed
    assert judge_word_set(["tab", "bat"], "Bat, tab", "x").reward == 0.0


def test_integer_wrongs_never_include_the_answer() -> None:
    assert "5" not in integer_wrongs(5, [5, 4])


def test_every_bank_word_is_lowercase_with_a_vowel() -> None:
    assert len(set(WORDS)) == len(WORDS) > 150
    assert all(w.isalpha() and w.islower() and set(w) & set("aeiou") for w in WORDS)
