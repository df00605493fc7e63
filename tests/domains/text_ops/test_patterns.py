"""`text_ops/patterns.py`: palindromes, anagrams, bracket completion."""

from __future__ import annotations

from posttrain.domains.text_ops.patterns import (
    Anagrams,
    BracketCompletion,
    Palindromes,
    _is_palindrome,
    _open_stack,
)


def test_palindromes_ignore_spaces_and_case() -> None:
    assert _is_palindrome("Taco c aT") and not _is_palindrome("ab")


def test_palindrome_tasks_mix_palindromes_and_near_misses() -> None:
    domain = Palindromes()
    for seed in range(10):
        task = domain.generate(seed, 3)
        chosen = task.answer.split(",")
        assert 0 < len(chosen) < len(task.meta["items"])


def test_palindromes_accept_any_order() -> None:
    domain = Palindromes()
    task = domain.generate(0, 6)
    assert domain.judge(task, ", ".join(reversed(task.answer.split(",")))).passed


def test_anagrams_exclude_the_target_itself() -> None:
    domain = Anagrams()
    task = domain.generate(0, 2)
    with_target = f"{task.answer},{task.meta['target']}"
    assert not domain.judge(task, with_target).passed


def test_anagrams_refuse_numbered_answers() -> None:
    domain = Anagrams()
    task = domain.generate(0, 2)
    assert domain.judge(task, "1, 2").reward == 0.0


def test_bracket_stack_rejects_crossed_pairs() -> None:
    assert _open_stack("([)]") is None and _open_stack("([]") == ["("]


def test_brackets_accept_another_valid_completion() -> None:
    domain = BracketCompletion()
    task = domain.generate(0, 4)
    prefix, total = task.meta["prefix"], task.meta["total"]
    closers = task.answer[len(prefix) :].replace("()", "", 1)
    other = prefix + "<>" + closers
    assert other != task.answer and len(other) == total
    assert domain.judge(task, other).passed


def test_brackets_refuse_a_changed_prefix_or_length() -> None:
    domain = BracketCompletion()
    task = domain.generate(0, 4)
    verdict = domain.judge(task, "[]" + task.answer[:-2])
    assert not verdict.passed and verdict.components["prefix"] == 0.0
    assert not domain.judge(task, task.answer + "()").passed
