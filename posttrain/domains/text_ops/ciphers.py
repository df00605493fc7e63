"""`text/*` letter ciphers and codes: Caesar encoding, Vigenère decoding, run-length encoding.

    from posttrain.domains.text_ops.ciphers import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Each answer is one exact string (verification: exact). The Caesar and Vigenère texts
are common lowercase words separated by single spaces; difficulty grows the word count
(`measure`) and, for Vigenère, the key's length. Run-length tasks grow the number of
runs (`measure`).

Not guaranteed: no partial credit, and case matters (the answers are lowercase, except
that run-length codes keep the input's lowercase letters after their counts).
"""

from __future__ import annotations

import random
import string
from itertools import groupby

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.text_ops.formats import judge_text, text_wrongs
from posttrain.domains.text_ops.vocabulary import draw_words
from posttrain.types import Task, Verdict

_EXACT = Axes("text", "none", "single", "exact")
_LOWER_TEXT_ONLY = (
    "Reply with the resulting text only: lowercase letters, words separated by single "
    "spaces, nothing else."
)


def _shift(letter: str, by: int) -> str:
    return chr((ord(letter) - ord("a") + by) % 26 + ord("a"))


def caesar(text: str, by: int) -> str:
    """Every lowercase letter moved `by` places forward in the alphabet (wrapping)."""
    return "".join(_shift(c, by) if c.islower() else c for c in text)


def word_count(difficulty: int) -> int:
    """2 words at d=1 up to 6 at d=10."""
    return 2 + (difficulty - 1) * 4 // 9


class CaesarEncode(AnswerDomain):
    """Shift every letter of a phrase forward by k places, wrapping z to a."""

    id = "text/caesar-encode-v1"
    axes = _EXACT
    instructions = _LOWER_TEXT_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        words = draw_words(rng, word_count(difficulty))
        plain = " ".join(words)
        k = rng.randint(1, 3) if difficulty <= 2 else rng.randint(4, 25)
        prompt = (
            f"Encode this text with a Caesar cipher of shift {k}: replace every letter by "
            f"the letter {k} places later in the alphabet, wrapping around from z to a; "
            f"keep the spaces.\n{plain}"
        )
        meta = {"plain": plain, "k": k}
        return Problem(prompt, caesar(plain, k), meta, measure=word_count(difficulty))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_text(caesar(task.meta["plain"], task.meta["k"]), text, "the encoded text")

    def wrong(self, task: Task) -> list[str]:
        plain, k = task.meta["plain"], task.meta["k"]
        answer = caesar(plain, k)
        first = plain.split()[0]
        mistakes = [
            caesar(plain, -k),  # shifted backwards: decoding instead
            caesar(plain, k + 1),
            plain[0] + answer[1:],  # the first letter left as it was
            caesar(first, k),  # only the first word
        ]
        return text_wrongs(answer, mistakes)


def vigenere(text: str, key: str, sign: int) -> str:
    """Letters shifted by the repeating key (a=0 ... z=25), forward for sign 1 and back
    for -1; spaces are copied and do not use up a key letter."""
    out, used = [], 0
    for c in text:
        if c.islower():
            out.append(_shift(c, sign * (ord(key[used % len(key)]) - ord("a"))))
            used += 1
        else:
            out.append(c)
    return "".join(out)


class VigenereDecode(AnswerDomain):
    """Decrypt a Vigenère ciphertext given its key."""

    id = "text/vigenere-decode-v1"
    axes = _EXACT
    instructions = _LOWER_TEXT_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        words = draw_words(rng, word_count(difficulty))
        plain = " ".join(words)
        # Distinct letters, none of them a (no shift): every key mistake shows.
        key = "".join(rng.sample(string.ascii_lowercase[1:], 2 + difficulty // 4))
        cipher = vigenere(plain, key, 1)
        prompt = (
            f"This text was encrypted with the Vigenère cipher and the key '{key}': each "
            "letter was moved forward in the alphabet by the value of a key letter (a=0, "
            "b=1, ..., z=25, wrapping from z to a), using the key's letters in turn and "
            "repeating the key; spaces were copied unchanged and do not use up a key "
            f"letter. Decrypt it.\n{cipher}"
        )
        meta = {"cipher": cipher, "key": key}
        return Problem(prompt, plain, meta, measure=word_count(difficulty))

    def judge(self, task: Task, text: str) -> Verdict:
        plain = vigenere(task.meta["cipher"], task.meta["key"], -1)
        return judge_text(plain, text, "the decrypted text")

    def wrong(self, task: Task) -> list[str]:
        cipher, key = task.meta["cipher"], task.meta["key"]
        answer = vigenere(cipher, key, -1)
        rotated_key = key[1:] + key[0]
        # Spaces consuming a key letter: decrypt as if they were letters, then restore them.
        spaced = vigenere(cipher.replace(" ", "a"), key, -1)
        with_spaces = "".join(" " if c == " " else s for c, s in zip(cipher, spaced, strict=True))
        mistakes = [
            vigenere(cipher, key, 1),  # encrypted again instead of decrypted
            vigenere(cipher, rotated_key, -1),
            with_spaces,
            answer.rsplit(" ", 1)[0],  # the last word missing
        ]
        return text_wrongs(answer, mistakes)


def run_length(text: str) -> str:
    """`aaab` → `3a1b`: each run of one repeated letter as its length and the letter."""
    return "".join(f"{len(list(run))}{letter}" for letter, run in groupby(text))


class RunLengthEncode(AnswerDomain):
    """Run-length encode a string of letters: every run as its count then its letter."""

    id = "text/rle-encode-v1"
    axes = _EXACT
    instructions = "Reply with the encoding only (digits and letters, no spaces), nothing else."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        runs = 3 + difficulty
        letters = "abcde"[: 3 + min(2, difficulty // 4)]
        text, last = "", ""
        for i in range(runs):
            letter = rng.choice([c for c in letters if c != last])
            length = 1 if i == 1 else rng.randint(1, 3 + difficulty // 2)  # one run of 1
            text, last = text + letter * length, letter
        prompt = (
            "Run-length encode this string: write each run of the same letter as the run's "
            "length followed by the letter, and always write the length, even when it is 1 "
            f"(for example, aaabcc becomes 3a1b2c).\n{text}"
        )
        return Problem(prompt, run_length(text), {"text": text}, measure=runs)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_text(run_length(task.meta["text"]), text, "the run-length encoding")

    def wrong(self, task: Task) -> list[str]:
        plain = task.meta["text"]
        answer = run_length(plain)
        runs = [(letter, len(list(run))) for letter, run in groupby(plain)]
        mistakes = [
            "".join(f"{n}{c}" if n > 1 else c for c, n in runs),  # lengths of 1 left out
            "".join(f"{c}{n}" for c, n in runs),  # letter before length
            "".join(f"{n + (i == 0)}{c}" for i, (c, n) in enumerate(runs)),
            "".join(f"{n}{c}" for c, n in runs[:-1]),  # the last run missing
        ]
        return text_wrongs(answer, mistakes)


DOMAINS: tuple[AnswerDomain, ...] = (CaesarEncode(), VigenereDecode(), RunLengthEncode())
