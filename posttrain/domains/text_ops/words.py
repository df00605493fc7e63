"""`text/*` word rewrites: snake_case ↔ camelCase, title case, acronyms, pig latin,
sorting words by length, and the longest word.

    from posttrain.domains.text_ops.words import DOMAINS
    task = DOMAINS[3].generate(seed=0, difficulty=3)

Each answer is one exact string (verification: exact; case matters). Inputs are common
English words (`vocabulary.WORDS`); difficulty grows the number of words (`measure`).

Not guaranteed: the rules are the ones each prompt states (pig latin treats y as a
consonant; title case keeps a fixed list of small words lowercase), not any style
guide's; no partial credit.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.text_ops.formats import judge_text, text_wrongs
from posttrain.domains.text_ops.vocabulary import draw_words
from posttrain.types import Task, Verdict

_EXACT = Axes("text", "none", "single", "exact")
_SPACED_WORDS_ONLY = "Reply with the words separated by single spaces, nothing else."


def word_count(difficulty: int) -> int:
    """3 words at d=1 up to 12 at d=10."""
    return 2 + difficulty


def _camel(words: list[str]) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:])


class SnakeCamel(AnswerDomain):
    """Convert an identifier between snake_case and camelCase (the direction varies)."""

    id = "text/snake-camel-v1"
    axes = _EXACT
    instructions = "Reply with the converted identifier only, nothing else."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 1 + (difficulty + 1) // 2  # 2..6 words
        words = draw_words(rng, n)
        to_camel = rng.random() < 0.5
        source, target = ("_".join(words), _camel(words))
        if not to_camel:
            source, target = target, source
        style = "camelCase" if to_camel else "snake_case"
        prompt = (
            f"Convert the identifier {source} to {style}. In snake_case the lowercase words "
            "are joined by underscores (user_id); in camelCase they are joined directly, "
            "each word after the first starting with a capital letter (userId)."
        )
        return Problem(prompt, target, {"words": words, "to_camel": to_camel}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_text(task.answer, text, "the converted identifier")

    def wrong(self, task: Task) -> list[str]:
        words: list[str] = task.meta["words"]
        if task.meta["to_camel"]:
            mistakes = [
                "".join(w.capitalize() for w in words),  # PascalCase
                "_".join([words[0], *(w.capitalize() for w in words[1:])]),
                "".join(words),
                _camel(words[:-1]),
            ]
        else:
            mistakes = ["".join(words), "-".join(words), _camel(words), "_".join(words[:-1])]
        return text_wrongs(task.answer, mistakes)


_SMALL = ("a", "an", "the", "of", "in", "on", "and", "or", "to", "for")


def _title(words: list[str]) -> str:
    last = len(words) - 1
    return " ".join(
        w if w in _SMALL and 0 < i < last else w.capitalize() for i, w in enumerate(words)
    )


def _scramble_case(rng: random.Random, word: str) -> str:
    return "".join(c.upper() if rng.random() < 0.35 else c for c in word)


class TitleCase(AnswerDomain):
    """Title-case a phrase: capitalize each word except small words inside the phrase."""

    id = "text/title-case-v1"
    axes = _EXACT
    instructions = _SPACED_WORDS_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = word_count(difficulty)
        words = draw_words(rng, n)
        for _ in range(1 + n // 3):  # small words inside the phrase, where the rule bites
            words.insert(rng.randint(1, len(words) - 1), rng.choice(_SMALL))
        shown = " ".join(_scramble_case(rng, w) for w in words)
        small = ", ".join(_SMALL)
        prompt = (
            f"Rewrite this phrase in title case: every word starts with a capital letter and "
            f"the rest of the word is lowercase, except that these small words stay all "
            f"lowercase when they are neither the first nor the last word: {small}.\n{shown}"
        )
        return Problem(prompt, _title(words), {"words": words, "shown": shown}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_text(_title(task.meta["words"]), text, "the phrase in title case")

    def wrong(self, task: Task) -> list[str]:
        words: list[str] = task.meta["words"]
        answer = _title(words)
        mistakes = [
            " ".join(w.capitalize() for w in words),  # small words capitalized too
            task.meta["shown"],
            " ".join(words),
            answer.rsplit(" ", 1)[0],
        ]
        return text_wrongs(answer, mistakes)


_SKIPPED = ("of", "and", "the", "for")


def _acronym(words: list[str]) -> str:
    parts = [p for w in words for p in w.split("-")]
    return "".join(p[0].upper() for p in parts if p not in _SKIPPED)


class Acronym(AnswerDomain):
    """The acronym of a name: first letters, hyphenated parts separately, small words skipped."""

    id = "text/acronym-v1"
    axes = _EXACT
    instructions = "Reply with the acronym only (capital letters, no dots or spaces), nothing else."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = word_count(difficulty)
        words = draw_words(rng, n)
        i = rng.randrange(n - 1)
        words[i : i + 2] = [f"{words[i]}-{words[i + 1]}"]  # one hyphenated word
        words.insert(rng.randint(1, len(words) - 1), rng.choice(_SKIPPED))
        if difficulty >= 5:
            words.insert(rng.randint(1, len(words) - 1), rng.choice(_SKIPPED))
        name = " ".join(words)
        prompt = (
            "Form the acronym of this name: take the first letter of each word, in "
            "uppercase; the parts of a hyphenated word count as separate words; skip the "
            f"words {', '.join(_SKIPPED)}.\n{name}"
        )
        return Problem(prompt, _acronym(words), {"words": words}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_text(_acronym(task.meta["words"]), text, "the acronym")

    def wrong(self, task: Task) -> list[str]:
        words: list[str] = task.meta["words"]
        answer = _acronym(words)
        mistakes = [
            "".join(w[0].upper() for w in words),  # hyphens ignored, small words kept
            "".join(p[0].upper() for w in words for p in w.split("-")),
            answer.lower(),
            answer[:-1],
        ]
        return text_wrongs(answer, mistakes)


def _pig(word: str) -> str:
    for i, c in enumerate(word):
        if c in "aeiou":
            return word + "way" if i == 0 else word[i:] + word[:i] + "ay"
    return word + "ay"


class PigLatin(AnswerDomain):
    """Translate words into pig latin (consonant cluster moved, then "ay"; vowels + "way")."""

    id = "text/pig-latin-v1"
    axes = _EXACT
    instructions = _SPACED_WORDS_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 1 + (difficulty + 1) // 2  # 2..6 words
        vowel_first = [w for w in draw_words(rng, 40) if w[0] in "aeiou"][:1]
        words = draw_words(rng, n - 1) + vowel_first
        rng.shuffle(words)
        prompt = (
            "Translate each word into pig latin. The vowels are a, e, i, o, u (y is a "
            "consonant). A word starting with a vowel gets 'way' added at the end (apple "
            "→ appleway). Otherwise move all the consonants before the first vowel to the "
            "end and add 'ay' (string → ingstray).\n" + " ".join(words)
        )
        answer = " ".join(_pig(w) for w in words)
        return Problem(prompt, answer, {"words": words}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        answer = " ".join(_pig(w) for w in task.meta["words"])
        return judge_text(answer, text, "the words in pig latin")

    def wrong(self, task: Task) -> list[str]:
        words: list[str] = task.meta["words"]
        answer = " ".join(_pig(w) for w in words)
        one_consonant = " ".join(w + "way" if w[0] in "aeiou" else w[1:] + w[0] + "ay" for w in words)  # fmt: skip
        mistakes = [
            one_consonant,
            " ".join(_pig(w)[:-3] + "ay" if w[0] in "aeiou" else _pig(w) for w in words),
            " ".join(words),
            " ".join(w + "ay" for w in words),  # the suffix added, nothing moved
            " ".join([*(_pig(w) for w in words[:-1]), words[-1]]),
        ]
        return text_wrongs(answer, mistakes)


def _by_length(words: list[str]) -> list[str]:
    return sorted(words, key=lambda w: (len(w), w))


class SortWordsByLength(AnswerDomain):
    """Sort words by length, shortest first; equal lengths alphabetically."""

    id = "text/sort-words-v1"
    axes = _EXACT
    instructions = _SPACED_WORDS_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = word_count(difficulty)
        words = draw_words(rng, n)
        if words == _by_length(words):
            words.reverse()
        prompt = (
            "Sort these words by length, shortest first; words of the same length go in "
            "alphabetical order.\n" + " ".join(words)
        )
        return Problem(prompt, " ".join(_by_length(words)), {"words": words}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_text(" ".join(_by_length(task.meta["words"])), text, "the sorted words")

    def wrong(self, task: Task) -> list[str]:
        words: list[str] = task.meta["words"]
        ordered = _by_length(words)
        stable = sorted(words, key=len)  # ties left in input order
        swapped = [ordered[1], ordered[0], *ordered[2:]]
        mistakes = [sorted(words), stable, ordered[::-1], words, ordered[:-1], swapped]
        return text_wrongs(" ".join(ordered), [" ".join(m) for m in mistakes])


def _longest(words: list[str]) -> str:
    return max(words, key=len)  # max keeps the first of equals


class LongestWord(AnswerDomain):
    """The longest word of a sentence; of equally long ones, the first."""

    id = "text/longest-word-v1"
    axes = _EXACT
    instructions = "Reply with the word only, in lowercase, nothing else."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = word_count(difficulty)
        words = draw_words(rng, n)
        longest = len(_longest(words))
        tied = [w for w in words if len(w) == longest]
        if len(tied) == 1 and rng.random() < 0.7:  # plant a later tie: the rule must matter
            later = [w for w in draw_words(rng, 60) if len(w) == longest and w not in words]
            if later:
                words.insert(rng.randint(words.index(tied[0]) + 1, n), later[0])
        prompt = (
            "Which is the longest word in this list? If several words share the greatest "
            "length, give the one that comes first.\n" + " ".join(words)
        )
        return Problem(prompt, _longest(words), {"words": words}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_text(_longest(task.meta["words"]), text, "the first longest word")

    def wrong(self, task: Task) -> list[str]:
        words: list[str] = task.meta["words"]
        answer = _longest(words)
        by_length = sorted(words, key=len)
        last_longest = max(reversed(words), key=len)
        mistakes = [
            last_longest,
            by_length[-2],
            by_length[0],
            words[0],
            answer[:-1],
            answer.upper(),
        ]
        return text_wrongs(answer, mistakes)


DOMAINS: tuple[AnswerDomain, ...] = (
    SnakeCamel(),
    TitleCase(),
    Acronym(),
    PigLatin(),
    SortWordsByLength(),
    LongestWord(),
)
