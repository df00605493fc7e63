"""`longctx/goal-retention-v1`: keep a rule from the first turn through long pasted notes.

The scripted user opens with two rules: acknowledge every pasted note with one stated
word (NOTED, LOGGED ...), and a constraint on the final answer, one of

- currency — amounts in euros, whole numbers, at a stated dollar rate;
- distance — distances in meters;
- approved names — pick people only from an approved list.

Then come 1 (d1 to d3) to 4 (d10) turns of long notes (the haystack, with look-alike
amounts and names), each to be acknowledged, and last a question whose right answer
depends on the turn-1 constraint ("The lamp costs 120 dollars. What is that amount?").
The first user message is the prompt; `GoalSession.user_turn` plays the rest of the
script, kept in `task.meta["user_turns"]`. All user turns together have about the
target token length.

`verify` replays the rollout's assistant turns by position: `acks` is the share of
note turns answered with exactly the word, `correct` whether the answer turn is
exactly the answer. Reward 1 when both hold, 0.5 + 0.5·acks when only the answer is
right, 0 when the answer is wrong.

Not guaranteed: the verdict reads turns by position, so a tool-call turn (answered
with an error) shifts the script; the notes are filler, not content the answer needs.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.domains.longctx.framework import Spanned
from posttrain.domains.longctx.haystack import compose, filler_chars, length_scale
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict
from posttrain.verify import strict_integer

MAX_NOTE_TURNS = 4
_ACKS = ("NOTED", "LOGGED", "RECEIVED", "FILED")
_ITEMS = ("desk lamp", "train ticket", "hotel night", "repair kit", "conference pass",
          "printer", "rain jacket", "museum tour", "taxi ride", "toolbox")  # fmt: skip
_TRAILS = ("ridge trail", "river walk", "forest loop", "coast path", "canal towpath")
_PEOPLE = ("Ada", "Bram", "Cleo", "Dario", "Edith", "Farid", "Greta", "Hugo", "Ines", "Jonas",
           "Kira", "Luca", "Mona", "Nils", "Olga", "Pavel")  # fmt: skip
_JOBS = ("budget review", "site visit", "safety audit", "vendor call", "team offsite")


def _currency(rng: random.Random) -> tuple[str, str, str, list[str], list[str]]:
    rate = rng.randint(55, 95)
    item = rng.choice(_ITEMS)
    dollars = rng.randint(12, 900)
    while dollars * rate % 100 == 50:  # no ties, so "rounded" has one meaning
        dollars += 1
    euros = (dollars * rate + 50) // 100
    rule = (f"Every amount you give me must be in euros, rounded to a whole number; "
            f"use 1 dollar = 0.{rate} euros.")  # fmt: skip
    question = f"Last question: the {item} costs {dollars} dollars. What is that amount? Reply with the number only."  # fmt: skip
    others = [f"The {rng.choice(_ITEMS)} was quoted at {rng.randint(12, 900)} dollars." for _ in range(3)]  # fmt: skip
    return rule, question, str(euros), [str(dollars), str(euros + 1)], others


def _distance(rng: random.Random) -> tuple[str, str, str, list[str], list[str]]:
    trail = rng.choice(_TRAILS)
    km, tenth = rng.randint(1, 40), rng.randint(1, 9)
    rule = "Every distance you give me must be in meters, as a whole number."
    question = f"Last question: the {trail} is {km}.{tenth} kilometers long. How long is it? Reply with the number only."  # fmt: skip
    others = [f"The {rng.choice(_TRAILS)} was once measured at {rng.randint(1, 40)}.{rng.randint(1, 9)} kilometers." for _ in range(3)]  # fmt: skip
    meters = km * 1000 + tenth * 100
    return rule, question, str(meters), [f"{km}.{tenth}", str(meters + 100)], others


def _approved(rng: random.Random) -> tuple[str, str, str, list[str], list[str]]:
    people = rng.sample(_PEOPLE, 6)
    approved, offered = people[:3], [people[0], people[3], people[4]]
    rng.shuffle(offered)
    job = rng.choice(_JOBS)
    rule = f"When I ask you to pick a person, answer only with a name from this approved list: {', '.join(approved)}."  # fmt: skip
    question = f"Last question: who should lead the {job}: {offered[0]}, {offered[1]} or {offered[2]}? Reply with the name only."  # fmt: skip
    others = [f"{name} offered to lead the {job} and has done it well before." for name in people[3:]]  # fmt: skip
    return rule, question, people[0], [people[3], people[4]], others


_CONSTRAINTS = (_currency, _distance, _approved)


class GoalSession:
    """The scripted user: the later note turns, then the question, then the end."""

    def __init__(self, task: Task) -> None:
        self.script: list[str] = list(task.meta["user_turns"])
        self.tools: list[dict[str, Any]] = []
        self.position = 0
        self.closed = False

    def call(self, tool_call: ToolCall) -> Observation:
        if self.closed:
            raise RuntimeError("call() on a closed GoalSession")
        return Observation("error: this conversation has no tools", error=True)

    def user_turn(self, assistant_message: Message) -> Message | None:
        if self.closed:
            raise RuntimeError("user_turn() on a closed GoalSession")
        if self.position >= len(self.script):
            return None
        self.position += 1
        return Message("user", self.script[self.position - 1])

    def snapshot(self) -> int:
        return self.position

    def restore(self, snapshot: Any) -> None:
        self.position = int(snapshot)

    def close(self) -> None:
        self.closed = True


class GoalRetentionDomain(Spanned):
    """A turn-1 rule that the last answer must follow, after long acknowledged notes."""

    base_id = "longctx/goal-retention-v1"
    axes = Axes("conversation", "none", "multi", "exact")
    max_turns = MAX_NOTE_TURNS + 1

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        tokens = self.tokens(difficulty)
        notes = min(MAX_NOTE_TURNS, 1 + (difficulty - 1) // 3)
        ack = rng.choice(_ACKS)
        kind = rng.randrange(len(_CONSTRAINTS))
        rule, question, answer, wrong, others = _CONSTRAINTS[kind](rng)
        opening = (
            "Two rules for this whole conversation. First: whenever I paste notes, reply "
            f"with exactly the word {ack} and nothing else. Second: {rule}\n\nMy first notes:"
        )
        decoys = others[: 1 + length_scale(tokens) // 4]
        fixed = len(opening) + len(question) + sum(len(d) for d in decoys) + 12 * notes
        per_turn = filler_chars(tokens, fixed) // notes
        placed: list[list[tuple[float, str]]] = [[] for _ in range(notes)]
        for decoy in decoys:  # the look-alikes go into random note turns
            placed[rng.randrange(notes)].append((rng.random(), decoy))
        chunks = [compose(rng, per_turn, facts) for facts in placed]
        later = [f"More notes:\n\n{chunk}" for chunk in chunks[1:]] + [question]
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", f"{opening}\n\n{chunks[0]}")],
            answer=answer,
            difficulty=difficulty,
            seed=seed,
            meta={
                "ack": ack,
                "notes": notes,
                "constraint": ("currency", "distance", "approved")[kind],
                "user_turns": later,
                "question": question,
                "evidence": [rule],
                "wrong": wrong,
                "target_tokens": tokens,
                "span": list(self.span),
            },
        )

    def open(self, task: Task, sandbox: object | None = None) -> GoalSession:
        """A fresh scripted user for one episode of `task`; `sandbox` is not used."""
        return GoalSession(task)

    def reference(self, task: Task) -> Reference:
        acks = [Message("assistant", task.meta["ack"]) for _ in range(task.meta["notes"])]
        return Reference([*acks, Message("assistant", task.answer)])

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        try:
            return self._judge(task, [t.text if isinstance(t.text, str) else "" for t in rollout.turns])  # fmt: skip
        except Exception as exc:  # the verifier failed, not the answer
            return Verdict(0.0, False, "The verifier failed on this conversation.",
                           {"correct": 0.0}, error=f"{type(exc).__name__}: {exc}")  # fmt: skip

    def _judge(self, task: Task, turns: list[str]) -> Verdict:
        notes = int(task.meta["notes"])
        acks = sum(t.strip() == task.meta["ack"] for t in turns[:notes]) / notes
        final = turns[notes].strip() if len(turns) > notes else ""
        if task.answer.isdigit():
            correct = strict_integer(final) == int(task.answer) if len(final) < 20 else False
        else:
            correct = final == task.answer
        components = {"acks": acks, "correct": float(correct)}
        if correct and acks == 1.0:
            return Verdict(1.0, True, "The final answer follows the first-turn rule, and every note was acknowledged.", components)  # fmt: skip
        if correct:
            return Verdict(0.5 + 0.5 * acks, False, f"The answer is right, but only {acks:.0%} of the notes got exactly {task.meta['ack']}.", components)  # fmt: skip
        if not final:
            return Verdict(0.0, False, f"No answer turn after the {notes} note turn(s).", components)  # fmt: skip
        return Verdict(0.0, False, f"Wrong: the answer under the first-turn rule is {task.answer}.", components)  # fmt: skip

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """The rule ignored, a near-miss answer, a sloppy acknowledgement, no acknowledgements."""
        head = reference.turns[:-1]
        out = [Reference([*head, Message("assistant", w)]) for w in task.meta["wrong"]]
        sloppy = copy.deepcopy(reference)
        sloppy.turns[0] = Message("assistant", "OK, got it.")
        return [*out, sloppy, Reference.single(task.answer)]


DOMAINS: tuple[GoalRetentionDomain, ...] = (GoalRetentionDomain(),)
