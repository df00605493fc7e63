"""`text_ops/counting.py`: vowels, word occurrences, substring index, edit distance,
letter frequencies."""

from __future__ import annotations

import json

from posttrain.domains.text_ops.counting import (
    CharFrequency,
    FindIndex,
    VowelCount,
    WordOccurrences,
    _occurrences,
    levenshtein,
)


def test_vowels_count_both_cases_but_not_y() -> None:
    domain = VowelCount()
    task = domain.generate(0, 1)
    task.meta["text"] = "Apple yolk"
    assert domain.judge(task, "3").passed and not domain.judge(task, "4").passed


def test_word_occurrences_skip_longer_words_and_ignore_case() -> None:
    assert _occurrences("Cat cats, cat. concat catfish CAT!", "cat") == 3


def test_word_count_tasks_hold_a_decoy() -> None:
    domain = WordOccurrences()
    for seed in range(5):
        task = domain.generate(seed, 3)
        word = task.meta["word"]
        assert task.meta["text"].lower().count(word) > int(task.answer)


def test_find_index_counts_from_zero() -> None:
    domain = FindIndex()
    task = domain.generate(0, 4)
    index = int(task.answer)
    assert task.meta["text"][index:].startswith(task.meta["pattern"])
    assert not domain.judge(task, str(index + 1)).passed


def test_levenshtein_known_values() -> None:
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "abc") == 3 and levenshtein("abc", "abc") == 0


def test_char_frequency_accepts_any_key_order() -> None:
    domain = CharFrequency()
    task = domain.generate(0, 4)
    counts = json.loads(task.answer)
    shuffled = json.dumps(dict(reversed(list(counts.items()))))
    assert domain.judge(task, shuffled).passed


def test_char_frequency_refuses_string_counts_and_uppercase_keys() -> None:
    domain = CharFrequency()
    task = domain.generate(0, 4)
    counts = json.loads(task.answer)
    assert domain.judge(task, json.dumps({k: str(v) for k, v in counts.items()})).reward == 0.0
    assert domain.judge(task, json.dumps({k.upper(): v for k, v in counts.items()})).reward == 0.0


def test_char_frequency_gives_partial_credit_for_one_wrong_count() -> None:
    domain = CharFrequency()
    task = domain.generate(0, 4)
    counts = json.loads(task.answer)
    first = next(iter(counts))
    verdict = domain.judge(task, json.dumps({**counts, first: counts[first] + 1}))
    assert not verdict.passed and 0.2 < verdict.reward < 0.5
