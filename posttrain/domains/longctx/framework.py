"""The shared body of the `longctx` domains: the span parameter and the document-question base.

`Spanned` gives a domain its length span: `Domain(span=(64, 512))` or
`domain.with_span(64, 512)` is the same task kind whose prompts grow from 64 SmolLM2
tokens at difficulty 1 to 512 at difficulty 10, with the id `base_id@64-512`; the
default span (1k to 1M tokens) keeps the bare `base_id`.

`DocumentDomain` is the base of the single-turn haystack families. A subclass sets
`base_id`, `axes`, and writes `case(rng, difficulty, tokens) -> Case` (the fact
sentences with their depths, the question with its answer format, the answer and the
evidence), `score(task, text)` (the verdict on the stripped final text, already known
to be short) and `wrong(task)` (known-wrong answers). The prompt is one user message:
a one-line preamble, the document, then the question as the last paragraph; the
question and the evidence sentences are also kept in `task.meta`.

Not guaranteed: the prompt length is the target only approximately (see `haystack`);
answers longer than `max_answer_chars` are rejected unread, so echoing a 4 MB prompt
costs no more than a short answer.
"""

from __future__ import annotations

import random
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Domain, check_difficulty, task_id, task_rng
from posttrain.domains.longctx.haystack import (
    DEFAULT_SPAN,
    check_span,
    compose,
    filler_chars,
    target_tokens,
)
from posttrain.types import Message, Task, Verdict
from posttrain.verify import parse_json

PREAMBLE = "Read the document below, then answer the question after it."


class SpannedDomain(Domain, Protocol):
    """What every `longctx` domain offers: a `Domain` with a length span."""

    span: tuple[int, int]

    def with_span(self, min_tokens: int, max_tokens: int) -> SpannedDomain: ...

    def tokens(self, difficulty: int) -> int: ...

    def difficulty_measure(self, task: Task) -> float: ...


class Spanned:
    """The span parameter: `base_id`, `span`, the id with its `@min-max` suffix, `with_span`."""

    base_id: ClassVar[str]
    id: str

    def __init__(self, span: tuple[int, int] = DEFAULT_SPAN) -> None:
        self.span = check_span(span)
        lo, hi = self.span
        self.id = self.base_id if self.span == DEFAULT_SPAN else f"{self.base_id}@{lo}-{hi}"

    def with_span(self, min_tokens: int, max_tokens: int) -> Self:
        """The same task kind with prompts from `min_tokens` (d1) to `max_tokens` (d10)."""
        return type(self)((min_tokens, max_tokens))

    def tokens(self, difficulty: int) -> int:
        """This instance's prompt-length target at `difficulty`, in SmolLM2 tokens."""
        return target_tokens(difficulty, self.span)

    def difficulty_measure(self, task: Task) -> float:
        """The prompt's target length in SmolLM2 tokens."""
        return float(task.meta["target_tokens"])


@dataclass(frozen=True)
class Case:
    """One generated question before the filler goes around it.

    `facts` are (depth, sentence) pairs placed into the document; `question` ends with
    the answer format; `evidence` are the sentences (among the facts) that decide the
    answer."""

    facts: list[tuple[float, str]]
    question: str
    answer: str
    evidence: list[str]
    meta: dict[str, Any] = field(default_factory=dict)


class DocumentDomain(Spanned, AnswerDomain):
    """Base of the single-turn haystack families; see the module docstring."""

    instructions: ClassVar[str] = ""  # each question states its own answer format
    max_answer_chars: ClassVar[int] = 80

    @abstractmethod
    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        """Written by each subclass."""

    @abstractmethod
    def score(self, task: Task, text: str) -> Verdict:
        """Written by each subclass: the verdict on the stripped, short final text."""

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        tokens = self.tokens(difficulty)
        case = self.case(rng, difficulty, tokens)
        fixed = len(PREAMBLE) + len(case.question) + sum(len(s) + 1 for _, s in case.facts)
        document = compose(rng, filler_chars(tokens, fixed), case.facts)
        meta = {
            **case.meta,
            "question": case.question,
            "evidence": list(case.evidence),
            "target_tokens": tokens,
            "span": list(self.span),
        }
        return Problem(f"{PREAMBLE}\n\n{document}\n\n{case.question}", case.answer, meta, tokens)

    def generate(self, seed: int, difficulty: int) -> Task:
        # Not AnswerDomain's: that one appends the instructions after the question.
        check_difficulty(difficulty)
        problem = self.make(task_rng(self.id, seed, difficulty), difficulty)
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", problem.prompt)],
            answer=problem.answer,
            difficulty=difficulty,
            seed=seed,
            meta={**problem.meta, "measure": float(problem.measure)},
        )

    def judge(self, task: Task, text: str) -> Verdict:
        stripped = text.strip()
        if len(stripped) > self.max_answer_chars:
            why = f"the answer is {len(stripped)} characters, longer than the format allows"
            return Verdict(0.0, False, f"Wrong format: {why}.", {"correct": 0.0})
        return self.score(task, stripped)


def json_list(text: str, item: type) -> list[Any] | None:
    """The items when the text is exactly one JSON list of `item` (int or str), else None.

    >>> json_list("[3, 1]", int), json_list('["a"]', int), json_list("3, 1", int)
    ([3, 1], None, None)
    """
    value = parse_json(text)
    if not isinstance(value, list):
        return None
    if not all(type(v) is item for v in value):  # `type is`: a bool is not an int here
        return None
    return value


def depths(rng: random.Random, count: int, ordered: bool = False) -> list[float]:
    """`count` depths in [0.02, 0.98], sorted when the facts must keep their order."""
    drawn = [rng.uniform(0.02, 0.98) for _ in range(count)]
    return sorted(drawn) if ordered else drawn
