"""`text/*` pattern recognition: pick the palindromes, pick the anagrams, and complete a
bracket string.

    from posttrain.domains.text_ops.patterns import DOMAINS
    task = DOMAINS[2].generate(seed=0, difficulty=3)

`text/palindromes-v1` and `text/anagrams-v1` are set matches (the chosen numbers or
words in any order, each once; a repeat scores 0; a well-formed wrong set earns half
its F1). Their candidates include near-misses (one letter changed). `text/bracket-completion-v1`
is checked for validity: many completions are right, and the verifier checks the
constraints (the given prefix kept, the stated length, every bracket closed by its own
kind in order) rather than comparing with one string. Difficulty grows the number of
candidates or the prefix's length (`measure`).

Not guaranteed: palindromes ignore spaces and case only (the candidates hold no
punctuation); the anagram candidates are random letter strings, not words.
"""

from __future__ import annotations

import random
import re
import string

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.list_ops.formats import INT_SET_ONLY, joined, judge_int_set
from posttrain.domains.text_ops.formats import MAX_CHARS, distinct_wrongs, judge_word_set
from posttrain.domains.text_ops.vocabulary import random_letters
from posttrain.types import Task, Verdict

_SET_MATCH = Axes("text", "none", "single", "set_match")
_VALIDITY = Axes("text", "none", "single", "validity")


def _is_palindrome(text: str) -> bool:
    letters = text.replace(" ", "").lower()
    return letters == letters[::-1]


def _one_letter_changed(rng: random.Random, text: str) -> str:
    positions = [i for i, c in enumerate(text) if c != " "]
    i = rng.choice(positions)
    replacement = rng.choice([c for c in string.ascii_lowercase if c != text[i].lower()])
    return text[:i] + replacement + text[i + 1 :]


def _palindrome(rng: random.Random, length: int) -> str:
    half = random_letters(rng, length // 2, "abcdeilmnorst")
    middle = random_letters(rng, length % 2, "abcdeilmnorst")
    letters = half + middle + half[::-1]
    out = ""
    for c in letters:  # spaces and capitals that the reader must see past
        out += (" " if rng.random() < 0.2 and out and out[-1] != " " else "") + c
    return "".join(c.upper() if rng.random() < 0.2 else c for c in out).strip()


def _list_items(items: list[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))


class Palindromes(AnswerDomain):
    """Which numbered strings read the same backwards (ignoring spaces and case)?"""

    id = "text/palindromes-v1"
    axes = _SET_MATCH
    instructions = INT_SET_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        count = 4 + difficulty
        length = 4 + difficulty
        items = []
        for i in range(count):
            text = _palindrome(rng, length + rng.randint(0, 2))
            if i % 2:  # half are near-misses
                while _is_palindrome(text):
                    text = _one_letter_changed(rng, text)
            items.append(text)
        rng.shuffle(items)
        prompt = (
            "Which of these strings are palindromes, reading the same forwards and "
            "backwards once spaces are removed and case is ignored? Give their numbers.\n"
            + _list_items(items)
        )
        answer = [i for i, t in enumerate(items, 1) if _is_palindrome(t)]
        return Problem(prompt, joined(answer), {"items": items}, measure=count)

    def judge(self, task: Task, text: str) -> Verdict:
        items = task.meta["items"]
        gold = [i for i, t in enumerate(items, 1) if _is_palindrome(t)]
        return judge_int_set(gold, text, "the numbers of the palindromes")

    def wrong(self, task: Task) -> list[str]:
        items = task.meta["items"]
        gold = [i for i, t in enumerate(items, 1) if _is_palindrome(t)]
        others = [i for i in range(1, len(items) + 1) if i not in gold]
        mistakes = [others, gold[:-1], [*gold, others[0]], [*gold, gold[0]]]
        texts = [joined(m) for m in mistakes if m]
        return distinct_wrongs(joined(gold), texts, lambda t: self.judge(task, t).passed)


def _is_anagram(word: str, target: str) -> bool:
    return word != target and sorted(word) == sorted(target)


class Anagrams(AnswerDomain):
    """Which candidate strings are anagrams of the target (same letters, same counts)?"""

    id = "text/anagrams-v1"
    axes = _SET_MATCH
    instructions = (
        "Reply with the anagrams separated by commas, each exactly once, in any order, "
        "nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        length = 4 + difficulty // 2
        count = 4 + difficulty
        target = "".join(rng.sample("abcdefghilmnoprstu", length))  # distinct: many shuffles
        candidates: list[str] = []
        while len(candidates) < count:
            letters = list(target)
            rng.shuffle(letters)
            word = "".join(letters)
            if len(candidates) % 2:  # a near-miss: one letter swapped for another
                word = _one_letter_changed(rng, word)
            if word != target and word not in candidates:
                candidates.append(word)
        rng.shuffle(candidates)
        prompt = (
            f"Which of these strings are anagrams of '{target}' (made of exactly the same "
            f"letters, each used as many times)?\n{', '.join(candidates)}"
        )
        answer = [w for w in candidates if _is_anagram(w, target)]
        meta = {"target": target, "candidates": candidates}
        return Problem(prompt, ",".join(answer), meta, measure=count)

    def judge(self, task: Task, text: str) -> Verdict:
        target = task.meta["target"]
        gold = [w for w in task.meta["candidates"] if _is_anagram(w, target)]
        return judge_word_set(gold, text, f"the anagrams of '{target}'")

    def wrong(self, task: Task) -> list[str]:
        target, candidates = task.meta["target"], task.meta["candidates"]
        gold = [w for w in candidates if _is_anagram(w, target)]
        others = [w for w in candidates if w not in gold]
        mistakes = [others, gold[:-1], [*gold, others[0]], [*gold, gold[0]], [*gold, target]]
        texts = [",".join(m) for m in mistakes if m]
        return distinct_wrongs(",".join(gold), texts, lambda t: self.judge(task, t).passed)


_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_BRACKETS = re.compile(r"[()\[\]{}<>]+")


def _open_stack(text: str) -> list[str] | None:
    """The still-open brackets after reading `text`, or None when a closer mismatches."""
    stack: list[str] = []
    for c in text:
        if c in _PAIRS:
            stack.append(c)
        elif not stack or _PAIRS[stack.pop()] != c:
            return None
    return stack


def _closers(prefix: str) -> str:
    stack = _open_stack(prefix) or []
    return "".join(_PAIRS[c] for c in reversed(stack))


class BracketCompletion(AnswerDomain):
    """Complete a bracket prefix into a balanced string of an exact, longer-than-needed length."""

    id = "text/bracket-completion-v1"
    axes = _VALIDITY
    instructions = "Reply with the complete bracket string only, no spaces, nothing else."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        length = 4 + 2 * difficulty
        opens = list(_PAIRS)[: 2 + min(2, difficulty // 3)]
        prefix = ""
        stack: list[str] = []
        while len(prefix) < length or not stack:
            if stack and rng.random() < 0.4:
                prefix += _PAIRS[stack.pop()]
            else:
                stack.append(rng.choice(opens))
                prefix += stack[-1]
        extra = 1 + difficulty // 3
        total = len(prefix) + len(stack) + 2 * extra
        prompt = (
            f"Extend the bracket string {prefix} by appending characters so that the whole "
            f"string is exactly {total} characters long and balanced: every bracket among "
            "( [ { < is closed by its own kind ) ] } > in the right nesting order. Keep "
            "the given beginning unchanged; any balanced completion of that length is right."
        )
        answer = prefix + "()" * extra + _closers(prefix)
        meta = {"prefix": prefix, "total": total}
        return Problem(prompt, answer, meta, measure=length)

    def judge(self, task: Task, text: str) -> Verdict:
        prefix, total = task.meta["prefix"], task.meta["total"]
        got = text.strip() if isinstance(text, str) and len(text) <= MAX_CHARS else ""
        what = f"a balanced string of {total} characters starting with {prefix}"
        if not _BRACKETS.fullmatch(got):
            components = {"format": 0.0, "prefix": 0.0, "length": 0.0, "balanced": 0.0}
            return verdict(False, what, components=components, why="not only brackets")
        keeps_prefix = got.startswith(prefix)
        right_length = len(got) == total
        balanced = _open_stack(got) == []
        components = {
            "format": 1.0,
            "prefix": float(keeps_prefix),
            "length": float(right_length),
            "balanced": float(balanced),
        }
        passed = keeps_prefix and right_length and balanced
        broken = [name for name, ok in components.items() if not ok]
        return verdict(passed, what, components=components, why=f"fails {', '.join(broken)}")

    def wrong(self, task: Task) -> list[str]:
        prefix, total = task.meta["prefix"], task.meta["total"]
        closers = _closers(prefix)
        extra = "()" * ((total - len(prefix) - len(closers)) // 2)
        swapped = closers[1:] + closers[0]
        mistakes = [
            prefix + closers,  # balanced but too short
            prefix + extra + closers[::-1],  # closed in the wrong order
            prefix + extra + swapped,
            extra + closers + prefix[: len(prefix)],  # the prefix moved to the end
            prefix + extra + closers[:-1] + ")",
            prefix + extra + closers + "()",
        ]
        return distinct_wrongs(prefix + extra + closers, mistakes, lambda t: self.judge(task, t).passed)  # fmt: skip


DOMAINS: tuple[AnswerDomain, ...] = (Palindromes(), Anagrams(), BracketCompletion())
