"""`text/reverse-v1`: reverse a short string of lowercase letters.

The prompt is one user message, `"rev {s}"`, where `s` has `2 + (difficulty + 1) // 2`
(3..7) random lowercase letters; the answer is `s` reversed.

The verdict has two components: `format` (the final text is only lowercase
letters) and `correct` (the last word of the final text, stripped of surrounding
punctuation, is the reversed string); the reward is 1 only when both hold.

Not guaranteed: a palindrome's answer equals its input, so echoing the prompt's
last word is `correct` for those tasks (the echo still fails `format`).
"""

from __future__ import annotations

import re
import string

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.types import Message, Reference, Rollout, Task, Verdict

_LETTERS = re.compile(r"[a-z]+")
_PUNCTUATION = ".,;:!?\"'`()[]{}<>"


def _next_letter(letter: str) -> str:
    return chr((ord(letter) - ord("a") + 1) % 26 + ord("a"))


def _one_letter_changed(word: str) -> str:
    return _next_letter(word[0]) + word[1:]


class ReverseDomain:
    """Write the prompt's letters in reverse order."""

    id = "text/reverse-v1"
    axes = Axes("text", "none", "single", "exact")
    max_turns = 1

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        text = "".join(rng.choice(string.ascii_lowercase) for _ in range(2 + (difficulty + 1) // 2))
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", f"rev {text}")],
            answer=text[::-1],
            difficulty=difficulty,
            seed=seed,
            meta={"text": text},
        )

    def reference(self, task: Task) -> Reference:
        return Reference.single(task.answer)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        text = rollout.final_text if isinstance(rollout.final_text, str) else ""
        expected: str = task.answer
        words = text.split()
        last_word = words[-1].strip(_PUNCTUATION) if words else ""
        well_formed = _LETTERS.fullmatch(text.strip()) is not None
        correct = last_word == expected
        components = {"format": float(well_formed), "correct": float(correct)}
        if well_formed and correct:
            reason = "The letters are correctly reversed."
        elif not words:
            reason = "The final text is empty."
        elif well_formed:
            reason = f"The letters are not the reversed string; expected {expected!r}."
        elif correct:
            reason = "The reversed string appears, but the final text is not only that word."
        else:
            reason = "The final text is not lowercase letters and does not end with the answer."
        passed = well_formed and correct
        return Verdict(float(passed), passed, reason, components)

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """The input unreversed, the answer with its first two letters swapped, and nothing."""
        answer: str = task.answer
        original = answer[::-1]
        unreversed = original if original != answer else _one_letter_changed(answer)
        if answer[0] != answer[1]:
            swapped = answer[1] + answer[0] + answer[2:]
        else:
            swapped = _one_letter_changed(answer)
        return [Reference.single(text) for text in (unreversed, swapped, "")]

    def difficulty_measure(self, task: Task) -> float:
        """The string's length."""
        return float(len(task.answer))
