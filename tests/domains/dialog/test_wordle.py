"""wordle: the marks, hard-mode consistency and the verdict."""

from __future__ import annotations

from posttrain.domains.dialog.wordle import WORDS, WordleDomain, fits, marks


def test_marks_follow_wordles_rule_for_repeated_letters() -> None:
    assert marks("crane", "nanny") == "-Y-G-"
    assert marks("apple", "papal") == "YYG-Y"
    assert marks("crane", "crane") == "GGGGG"


def test_fits_refuses_a_word_the_marks_exclude() -> None:
    history = [["crane", marks("brick", "crane")]]
    assert fits("brick", history)
    assert not fits("crane", history)


def test_every_built_in_word_is_five_lowercase_letters_and_unique() -> None:
    assert len(set(WORDS)) == len(WORDS)
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in WORDS)


def test_guess_that_ignores_marks_is_a_violation_even_when_solved() -> None:
    domain = WordleDomain()
    task = domain.generate(4, 6)
    reference = domain.solve(task)
    state = domain.play(task, reference[:1] + reference[:1] + reference[1:])
    assert state["solved"] and state["violations"] == 1
    assert not domain.judge(task, state).passed


def test_uppercase_guess_is_accepted_as_the_same_word() -> None:
    domain = WordleDomain()
    task = domain.generate(1, 3)
    turns = [t.upper().replace("GUESS: ", "GUESS: ") for t in domain.solve(task)]
    assert domain.judge(task, domain.play(task, turns)).passed
