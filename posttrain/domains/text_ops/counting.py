"""`text/*` counting and measuring: vowels, whole-word occurrences, the index of a
substring, edit distance, and letter frequencies as JSON.

    from posttrain.domains.text_ops.counting import DOMAINS
    task = DOMAINS[4].generate(seed=0, difficulty=3)

All but the last answer one integer (verification: exact). `text/char-frequency-v1`
answers a JSON object of letter counts, checked by structure: it must parse, map
single lowercase letters to integers, and hold exactly the right counts (any key order
and JSON spacing); a well-formed object earns half the share of letters it counts
right (still failed). Difficulty grows the text's length (`measure`).

Not guaranteed: counts follow each prompt's stated rule (y is not a vowel; a word
occurrence ignores case and punctuation but not a longer word that contains it).
"""

from __future__ import annotations

import json
import random
from collections import Counter

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.text_ops.formats import (
    INTEGER_ONLY,
    MAX_CHARS,
    distinct_wrongs,
    integer_wrongs,
    judge_integer,
)
from posttrain.domains.text_ops.vocabulary import draw_words, random_letters
from posttrain.types import Task, Verdict
from posttrain.verify.structure import parse_json

_EXACT = Axes("text", "none", "single", "exact")
_STRUCTURE = Axes("text", "none", "single", "structure")


def _capitalized_sometimes(rng: random.Random, words: list[str]) -> list[str]:
    return [w.capitalize() if rng.random() < 0.3 else w for w in words]


def _vowels(text: str, vowels: str = "aeiou") -> int:
    return sum(1 for c in text.lower() if c in vowels)


class VowelCount(AnswerDomain):
    """Count the vowels a, e, i, o, u (either case) in a sentence."""

    id = "text/vowel-count-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 2 + difficulty
        sentence = " ".join(_capitalized_sometimes(rng, draw_words(rng, n)))
        prompt = (
            "How many vowels does this text contain? Count every a, e, i, o and u, "
            f"uppercase or lowercase (y is not a vowel).\n{sentence}"
        )
        return Problem(prompt, str(_vowels(sentence)), {"text": sentence}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(_vowels(task.meta["text"]), text, "the number of vowels")

    def wrong(self, task: Task) -> list[str]:
        sentence: str = task.meta["text"]
        answer = _vowels(sentence)
        consonants = sum(1 for c in sentence if c.isalpha()) - answer
        lowercase_only = sum(1 for c in sentence if c in "aeiou")
        return integer_wrongs(answer, [_vowels(sentence, "aeiouy"), lowercase_only, consonants])


def _occurrences(text: str, word: str) -> int:
    return sum(1 for w in text.split() if w.strip(".,;!?").lower() == word)


class WordOccurrences(AnswerDomain):
    """How often a word occurs as a whole word (ignoring case and punctuation)."""

    id = "text/word-occurrences-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 4 + 2 * difficulty
        target, *others = draw_words(rng, 4)
        decoys = [target + "s", target + others[0], others[1] + target]
        pool = [*draw_words(rng, n), *([target] * rng.randint(1, 2 + difficulty // 2))]
        pool += rng.sample(decoys, 1 + difficulty // 4)
        rng.shuffle(pool)
        words = _capitalized_sometimes(rng, pool)
        words = [w + rng.choice([",", ".", ""]) if rng.random() < 0.2 else w for w in words]
        passage = " ".join(words)
        prompt = (
            f"How many times does the word '{target}' occur in this text as a whole word? "
            "Ignore uppercase/lowercase and punctuation; a longer word that merely contains "
            f"it does not count.\n{passage}"
        )
        answer = _occurrences(passage, target)
        meta = {"text": passage, "word": target}
        return Problem(prompt, str(answer), meta, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        answer = _occurrences(task.meta["text"], task.meta["word"])
        return judge_integer(answer, text, f"the count of '{task.meta['word']}'")

    def wrong(self, task: Task) -> list[str]:
        passage, word = task.meta["text"], task.meta["word"]
        answer = _occurrences(passage, word)
        substring = passage.lower().count(word)  # decoys counted too
        exact_case = sum(1 for w in passage.split() if w == word)
        return integer_wrongs(answer, [substring, exact_case])


class FindIndex(AnswerDomain):
    """The 0-based index of the first occurrence of a pattern in a string."""

    id = "text/find-index-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        length = 6 + 4 * difficulty
        alphabet = "abcd" if difficulty <= 5 else "abc"
        pattern = random_letters(rng, 2 + difficulty // 3, alphabet)
        text = random_letters(rng, length, alphabet)
        if pattern not in text or text.index(pattern) == 0:
            at = rng.randint(1, length - len(pattern))
            text = text[:at] + pattern + text[at + len(pattern) :]
        prompt = (
            f"At which position does '{pattern}' first occur in the string below? Count "
            f"positions from 0 (the first character is at position 0).\n{text}"
        )
        answer = text.index(pattern)
        return Problem(prompt, str(answer), {"text": text, "pattern": pattern}, measure=length)

    def judge(self, task: Task, text: str) -> Verdict:
        answer = task.meta["text"].index(task.meta["pattern"])
        return judge_integer(answer, text, "the first position (from 0)")

    def wrong(self, task: Task) -> list[str]:
        haystack, pattern = task.meta["text"], task.meta["pattern"]
        answer = haystack.index(pattern)
        return integer_wrongs(answer, [answer + 1, haystack.rindex(pattern), -1])


def levenshtein(a: str, b: str) -> int:
    """The fewest single-character insertions, deletions and substitutions from a to b."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _edited(rng: random.Random, word: str, edits: int) -> str:
    out = list(word)
    for _ in range(edits):
        kind = rng.choice(["insert", "delete", "substitute"]) if len(out) > 2 else "insert"
        i = rng.randrange(len(out) + (kind == "insert"))
        if kind == "insert":
            out.insert(i, random_letters(rng, 1))
        elif kind == "delete":
            del out[i]
        else:
            out[i] = random_letters(rng, 1)
    return "".join(out)


class EditDistance(AnswerDomain):
    """The Levenshtein distance between two strings."""

    id = "text/edit-distance-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        length = 3 + difficulty
        first = random_letters(rng, length, "abcdefgh")
        second = _edited(rng, first, 1 + difficulty // 2)
        if second == first:
            second = first[1:]
        prompt = (
            f"What is the edit distance (Levenshtein distance) between '{first}' and "
            f"'{second}': the fewest single-letter insertions, deletions or substitutions "
            "that turn the first string into the second?"
        )
        meta = {"first": first, "second": second}
        return Problem(prompt, str(levenshtein(first, second)), meta, measure=length)

    def judge(self, task: Task, text: str) -> Verdict:
        answer = levenshtein(task.meta["first"], task.meta["second"])
        return judge_integer(answer, text, "the edit distance")

    def wrong(self, task: Task) -> list[str]:
        a, b = task.meta["first"], task.meta["second"]
        answer = levenshtein(a, b)
        position_mismatches = sum(x != y for x, y in zip(a, b, strict=False)) + abs(len(a) - len(b))  # fmt: skip
        return integer_wrongs(answer, [position_mismatches, abs(len(a) - len(b)), 0])


def _frequencies(text: str) -> dict[str, int]:
    counts = Counter(c for c in text.lower() if c.isalpha())
    return {letter: counts[letter] for letter in sorted(counts)}


def _object_text(counts: dict[str, int]) -> str:
    return json.dumps(counts, separators=(", ", ": "))


class CharFrequency(AnswerDomain):
    """Count each letter of a text, as a JSON object from letter to count."""

    id = "text/char-frequency-v1"
    axes = _STRUCTURE
    instructions = (
        "Reply with one JSON object mapping each lowercase letter that occurs to its count "
        '(for example: {"a": 2, "b": 1}), in any key order, nothing else.'
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        length = 5 + 3 * difficulty
        letters = random_letters(rng, length, "abcdefghij"[: 3 + difficulty // 2])
        shown = "".join(c.upper() if rng.random() < 0.25 else c for c in letters)
        prompt = (
            "Count how many times each letter occurs in this string, treating uppercase and "
            f"lowercase as the same letter.\n{shown}"
        )
        answer = _object_text(_frequencies(shown))
        return Problem(prompt, answer, {"text": shown}, measure=length)

    def judge(self, task: Task, text: str) -> Verdict:
        gold = _frequencies(task.meta["text"])
        got = parse_json(text) if isinstance(text, str) and len(text) <= MAX_CHARS else None
        well_formed = isinstance(got, dict) and all(
            len(k) == 1 and "a" <= k <= "z" and isinstance(v, int) and not isinstance(v, bool)
            for k, v in got.items()
        )
        what = "the letter counts as a JSON object"
        if not isinstance(got, dict) or not well_formed:
            components = {"format": 0.0, "letters": 0.0, "correct": 0.0}
            return verdict(False, what, components=components, why="not a JSON object of letter counts")  # fmt: skip
        letters = sorted({*gold, *got})
        right = sum(1 for k in letters if got.get(k) == gold.get(k)) / len(letters)
        passed = got == gold
        components = {"format": 1.0, "letters": right, "correct": float(passed)}
        reward = 1.0 if passed else 0.5 * right
        why = f"{right:.0%} of the letters counted right"
        return verdict(passed, what, components=components, reward=reward, why=why)

    def wrong(self, task: Task) -> list[str]:
        gold = _frequencies(task.meta["text"])
        first = next(iter(gold))
        off = {**gold, first: gold[first] + 1}
        missing = {k: v for k, v in gold.items() if k != first}
        case_sensitive = dict(Counter(c for c in task.meta["text"] if c.isalpha()))
        as_strings = json.dumps({k: str(v) for k, v in gold.items()})
        mistakes = [_object_text(off), _object_text(missing), _object_text(case_sensitive), as_strings]  # fmt: skip
        return distinct_wrongs(_object_text(gold), mistakes, lambda t: self.judge(task, t).passed)


DOMAINS: tuple[AnswerDomain, ...] = (
    VowelCount(),
    WordOccurrences(),
    FindIndex(),
    EditDistance(),
    CharFrequency(),
)
