"""`dialog/wordle-v1`: guess a hidden five-letter word from a listed set, in hard mode.

The prompt lists N candidate words (8 at d=1 to all 224 at d=10, drawn from the built-in
`WORDS`); the secret is one of them. Every turn is `GUESS: <word>` and the user answers
five marks, one per letter: `G` (right letter, right place), `Y` (in the word, another
place) and `-` (not in the word, or no more copies of it), with Wordle's rule for
repeated letters. Every guess must be a listed word that fits all marks so far (a
guess that does not is a violation); the word must be found within the budget, which
is `max(6, reference turns + 1)`. Difficulty measure: log2 N.

The reference always guesses the first listed word that fits all marks so far.

Not guaranteed: the words are common English words picked by hand, not a dictionary;
the budget depends on the reference strategy.
"""

from __future__ import annotations

import math
import random
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.dialog.framework import (
    DialogDomain,
    Setup,
    new_counters,
    protocol_value,
    standard_verdict,
)
from posttrain.types import Task, Verdict

_WORD_TEXT = """
    about above acorn actor adapt adult after again agent agree ahead alarm album alert
    alike alive allow alone along alter amber angel anger angle angry apple apply apron
    arena argue arise armor aroma arrow aside audio avoid awake award badge baker basic
    basin beach beard beast begin being below bench berry birth black blade blame blank
    blast blend bless blind block bloom board boast brain brand brave bread break brick
    bride brief bring broad brook brown brush build bunch burst cabin cable camel candy
    cargo carry catch cause chain chair chalk charm chart chase cheap check cheek chess
    chest chief child chill civic claim class clean clear climb clock close cloud coach
    coast couch count court cover craft crane crash cream crisp cross crowd crown crust
    curve cycle daily dance delta depth diary dirty dough draft drain drama dream dress
    drift drink drive eager eagle early earth eight elbow elder empty enjoy enter equal
    error event exact extra faint faith false feast fence fever field fight final flame
    flash fleet flock flood floor flour fluid focus force forge frame fresh front frost
    fruit giant glass globe glove grace grade grain grand grape grass great green grill
    guard guest guide habit happy heart heavy hedge honey horse hotel house human humor
    ideal image index inner input irony ivory jelly jewel joint judge juice knife label
    """
WORDS: tuple[str, ...] = tuple(_WORD_TEXT.split())
MARKS_HELP = "G = right letter, right place; Y = in the word, another place; - = not in it"


def marks(secret: str, guess: str) -> str:
    """Wordle marks for `guess` against `secret` (greens first, then yellows left to right).

    >>> marks("crane", "nanny")
    '-Y-G-'
    """
    result = ["-"] * 5
    spare: dict[str, int] = {}
    for i in range(5):
        if guess[i] == secret[i]:
            result[i] = "G"
        else:
            spare[secret[i]] = spare.get(secret[i], 0) + 1
    for i in range(5):
        if result[i] != "G" and spare.get(guess[i], 0) > 0:
            result[i] = "Y"
            spare[guess[i]] -= 1
    return "".join(result)


def fits(word: str, history: list[list[str]]) -> bool:
    """True when `word` as the secret would have given every (guess, marks) seen."""
    return all(marks(word, guess) == seen for guess, seen in history)


def _count(difficulty: int) -> int:
    return 8 * round(2 ** ((difficulty - 1) * math.log2(len(WORDS) // 8) / 9))


def first_fit_game(words: list[str], secret: str) -> list[str]:
    """The guesses of the reference strategy: always the first listed word that fits."""
    history: list[list[str]] = []
    guesses = []
    while True:
        guess = next(w for w in words if fits(w, history))
        guesses.append(guess)
        if guess == secret:
            return guesses
        history.append([guess, marks(secret, guess)])


class WordleDomain(DialogDomain):
    """Hard-mode Wordle over a listed set of words."""

    id = "dialog/wordle-v1"
    axes = Axes("conversation", "none", "multi", "validity")
    max_turns = 16

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        words = sorted(rng.sample(WORDS, min(len(WORDS), _count(difficulty))))
        secret = rng.choice(words[1:])  # never the first listed word: one turn is no game
        game = first_fit_game(words, secret)
        budget = min(self.max_turns, max(6, len(game) + 1))
        prompt = (
            "Find my secret five-letter word. It is one of these words:\n"
            + " ".join(words)
            + "\nEach of your turns must be exactly one line `GUESS: <word>` (for example "
            f"`GUESS: {words[0]}`), with a word from the list, and nothing else. I answer "
            f"with five marks, one per letter: {MARKS_HELP} (or no more copies of it). "
            "Hard mode: every guess must be a listed word that fits all marks so far. "
            f"You have {budget} turns; a malformed turn uses one of them."
        )
        world = {"words": words, "secret": secret, "game": game}
        return Setup(prompt, secret, world, budget, math.log2(len(words)))

    def new_state(self, task: Task) -> dict[str, Any]:
        return {**new_counters(), "history": []}

    def respond(self, task: Task, state: dict[str, Any], text: str) -> str | None:
        world = task.meta["world"]
        value = protocol_value(text, "GUESS")
        guess = value.lower() if value is not None else ""
        if len(guess) != 5 or not guess.isascii() or not guess.isalpha():
            state["malformed"] += 1
            return "Please reply with exactly one line `GUESS: <word>` with a listed word."
        if guess not in world["words"] or not fits(guess, state["history"]):
            state["violations"] += 1
        if guess == world["secret"]:
            state["solved"] = True
            return None
        seen = marks(world["secret"], guess)
        state["history"].append([guess, seen])
        return seen

    def judge(self, task: Task, state: dict[str, Any]) -> Verdict:
        return standard_verdict(state, task.meta["budget"], "Found the word in hard mode")

    def solve(self, task: Task) -> list[str]:
        return [f"GUESS: {w}" for w in task.meta["world"]["game"]]

    def wrong(self, task: Task) -> list[list[str]]:
        """Give up after one guess; the first guess repeated (it no longer fits); the
        word without the protocol; an unlisted word slipped in before the last guess."""
        reference = self.solve(task)
        secret = task.meta["world"]["secret"]
        return [
            reference[:1] + ["I give up."],
            reference[:1] + reference[:1] + reference[1:],
            reference[:-1] + [secret],
            reference[:-1] + ["GUESS: zzzzz", reference[-1]],
        ]


DOMAINS: tuple[DialogDomain, ...] = (WordleDomain(),)
