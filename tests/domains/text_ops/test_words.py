"""`text_ops/words.py`: snake/camel case, title case, acronym, pig latin, sorting words,
longest word."""

from __future__ import annotations

from posttrain.domains.text_ops.words import (
    Acronym,
    LongestWord,
    SnakeCamel,
    SortWordsByLength,
    TitleCase,
    _acronym,
    _pig,
    _title,
)


def test_snake_camel_goes_both_ways() -> None:
    domain = SnakeCamel()
    tasks = [domain.generate(seed, 4) for seed in range(10)]
    assert {t.meta["to_camel"] for t in tasks} == {True, False}
    for task in tasks:
        assert ("_" in task.answer) != task.meta["to_camel"]


def test_snake_camel_refuses_pascal_case() -> None:
    domain = SnakeCamel()
    task = next(t for t in (domain.generate(s, 3) for s in range(10)) if t.meta["to_camel"])
    assert not domain.judge(task, task.answer[0].upper() + task.answer[1:]).passed


def test_title_case_keeps_inner_small_words_lowercase() -> None:
    assert _title(["the", "lord", "of", "the", "rings"]) == "The Lord of the Rings"
    assert _title(["war", "and"]) == "War And"


def test_title_case_refuses_capitalized_small_words() -> None:
    domain = TitleCase()
    task = domain.generate(0, 6)
    capitalized = " ".join(w.capitalize() for w in task.meta["words"])
    assert not domain.judge(task, capitalized).passed


def test_acronym_splits_hyphens_and_skips_small_words() -> None:
    assert _acronym(["state-of-the-art", "machine", "for", "learning"]) == "SAML"


def test_acronym_refuses_lowercase() -> None:
    domain = Acronym()
    task = domain.generate(0, 2)
    assert not domain.judge(task, task.answer.lower()).passed


def test_pig_latin_moves_the_whole_consonant_cluster() -> None:
    assert [_pig(w) for w in ("string", "apple", "quiet", "young")] == [
        "ingstray",
        "appleway",
        "uietqay",
        "oungyay",
    ]


def test_sort_words_breaks_length_ties_alphabetically() -> None:
    domain = SortWordsByLength()
    task = domain.generate(0, 1)
    task.meta["words"] = ["pear", "fig", "kiwi"]
    assert domain.judge(task, "fig kiwi pear").passed
    assert not domain.judge(task, "fig pear kiwi").passed


def test_longest_word_takes_the_first_of_a_tie() -> None:
    domain = LongestWord()
    task = domain.generate(0, 1)
    task.meta["words"] = ["cat", "horse", "apple", "ox"]
    assert domain.judge(task, "horse").passed and not domain.judge(task, "apple").passed
