"""`longctx-search/needle-v1`: find one planted fact among look-alikes with search tools.

The haystack (10k tokens at difficulty 1, growing geometrically to 1M at 10) holds
one needle, "The access code for the archive at Harrowgate is 4821.", and 1 + d//2
look-alikes: the same fact for a look-alike place ("Harrowmere") or another facility
at the same place, and from difficulty 4 a stale version ("... used to be 3310, but
it was replaced"). Digit-free sentences naming the facility and place add search
noise. The question paraphrases the needle, sharing only the facility and place
names. The answer is `{"value": "4821", "chunk": "doc#37"}`: the value (a string
or an integer) and the chunk it came from.

Reward: 0.5 for the value, 0.5 for the citation (the cited chunk covers the needle's
value and was read in this episode); passing needs both. An answer given without
reading any chunk scores 0, whatever it says; a reply that is not exactly that JSON
object scores 0.

Not guaranteed: the look-alikes differ by one name or one word ("used to be"),
which a careful reader resolves; the question's wording comes from a small set of
templates per fact kind.
"""

from __future__ import annotations

import json
import random
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.longctx_search import world
from posttrain.domains.longctx_search.framework import (
    READ,
    SEARCH,
    Built,
    Corpus,
    Evidence,
    RetrievalDomain,
    Setup,
    Target,
    calls_turn,
    failed,
)
from posttrain.domains.longctx_search.haystack import Fact, HaystackSpec, build_haystack
from posttrain.types import Message, Reference, Task, ToolCall, Verdict
from posttrain.verify.structure import parse_json

TITLES = ("A chronicle of the {p} coast", "Parish notes from the {p} district",
          "Letters and records of the {p} valley", "A gazetteer of towns around {p}")  # fmt: skip


def haystack_tokens(difficulty: int) -> int:
    """10k tokens at difficulty 1 to 1M at 10, geometric, rounded to hundreds."""
    return int(round(10_000 * 100 ** ((difficulty - 1) / 9), -2))


def title_of(rng: random.Random, place: str) -> str:
    return rng.choice(TITLES).format(p=place)


def read_value(value: Any) -> str | None:
    """A cited value as text: a string of digits or a non-negative integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 0:
        return str(value)
    if isinstance(value, str) and value.strip().isdigit() and len(value) < 20:
        return value.strip()
    return None


class Needle(RetrievalDomain):
    """One fact among look-alikes in a long haystack: its value and the chunk holding it."""

    id = "longctx-search/needle-v1"
    axes = Axes("document", "retrieval", "multi", "fields_citations")

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        attribute = rng.choice(world.ATTRIBUTES)
        places: set[str] = set()
        place = world.new_place(rng, places)
        facility = rng.choice(world.FACILITIES)
        n_decoys = 1 + difficulty // 2
        numbers = world.values(rng, 1 + n_decoys)
        facts = [Fact(attribute.needle.format(f=facility, p=place, v=numbers[0]), numbers[0], rng.uniform(0.02, 0.98))]  # fmt: skip
        kinds = ["twin", "other_facility"] + (["stale"] if difficulty >= 4 else [])
        for i, value in enumerate(numbers[1:]):
            kind = kinds[i % len(kinds)]
            f, p, template = facility, place, attribute.needle
            if kind == "twin":
                p = world.lookalike_place(rng, place, places)
            elif kind == "other_facility":
                f = rng.choice([x for x in world.FACILITIES if x != facility])
            else:
                template = attribute.stale
            facts.append(Fact(template.format(f=f, p=p, v=value), value, rng.uniform(0.02, 0.98)))  # fmt: skip
        facts += [Fact(world.mention(rng, facility, place), "", rng.uniform(0.0, 1.0)) for _ in range(difficulty)]  # fmt: skip
        tokens = haystack_tokens(difficulty)
        spec = HaystackSpec(rng.randrange(2**31), tokens, tuple(facts))
        return Setup(
            question=f"Question: {attribute.question.format(f=facility, p=place)}",
            answer_format=(
                'Answer with one JSON object and nothing else: {"value": "<the number, as a '
                'string of digits>", "chunk": "<the id of the chunk you read it in, such as '
                'doc#12>"}.'
            ),
            title=title_of(rng, place),
            tokens=tokens,
            doc=spec.to_meta(),
            answer=numbers[0],
            meta={"query": attribute.query.format(f=facility, p=place), "decoys": numbers[1:]},
        )

    def build(self, task: Task) -> Built:
        hay = build_haystack(HaystackSpec.from_meta(task.meta["doc"]))
        spans = {"needle": hay.spans[0]}
        spans.update({f"decoy{i}": hay.spans[i + 1] for i in range(len(task.meta["decoys"]))})
        return Built(hay.text, spans)

    def targets(self, task: Task) -> list[Target]:
        return [Target(task.meta["query"], "needle")]

    def final_answer(self, task: Task, chunk_ids: list[str]) -> str:
        return json.dumps({"value": task.answer, "chunk": chunk_ids[0]})

    def judge(self, task: Task, final: str, evidence: Evidence, corpus: Corpus) -> Verdict:
        got = parse_json(final)
        if not isinstance(got, dict) or sorted(got) != ["chunk", "value"]:
            return failed('The reply is not exactly {"value": ..., "chunk": ...}.')
        right = read_value(got["value"]) == task.answer
        cited = corpus.covers(got["chunk"], "needle") and got["chunk"] in evidence.read
        passed = right and cited
        reward = 0.5 * right + 0.5 * cited
        components = {"format": 1.0, "value": float(right), "citation": float(cited),
                      "searched": float(evidence.searches > 0)}  # fmt: skip
        if passed:
            reason = "The value is right and its chunk, which was read, holds the needle."
        else:
            value_words = "right" if right else "wrong"
            cite_words = "holds the needle and was read" if cited else "does not hold the needle or was not read"  # fmt: skip
            reason = f"The value is {value_words}; the cited chunk {cite_words}."
        return Verdict(reward, passed, reason, components)

    def wrong(self, task: Task, reference: Reference) -> list[Reference]:
        corpus = self.corpus(task)
        search_turn, final = reference.turns[0], json.loads(reference.final)
        decoy = next(c for c in corpus.chunks if corpus.covers(c, "decoy0"))
        miss = decoy if not corpus.covers(decoy, "needle") else _uncovering(corpus, "needle")
        read_miss = calls_turn([ToolCall(READ, {"id": miss})])
        read_right = reference.turns[1]
        answer = task.answer
        return [
            # the look-alike's value, cited to the look-alike's chunk
            Reference(
                [
                    search_turn,
                    calls_turn([ToolCall(READ, {"id": decoy})]),
                    Message(
                        "assistant", json.dumps({"value": task.meta["decoys"][0], "chunk": decoy})
                    ),
                ]
            ),  # fmt: skip
            # the right value cited to a chunk without the needle
            Reference(
                [
                    search_turn,
                    read_miss,
                    Message("assistant", json.dumps({"value": answer, "chunk": miss})),
                ]
            ),  # fmt: skip
            # the right answer guessed without any tool call
            Reference.single(json.dumps(final)),
            # the right citation, never read: only a search and another chunk
            Reference(
                [
                    calls_turn([ToolCall(SEARCH, {"query": task.meta["query"]})]),
                    read_miss,
                    Message("assistant", json.dumps(final)),
                ]
            ),  # fmt: skip
            # a value off by one, right chunk
            Reference(
                [
                    search_turn,
                    read_right,
                    Message(
                        "assistant",
                        json.dumps({"value": str(int(answer) + 1), "chunk": final["chunk"]}),
                    ),
                ]
            ),  # fmt: skip
        ]


def _uncovering(corpus: Corpus, span: str) -> str:
    """The first chunk that does not cover `span`."""
    return next(c for c in corpus.chunks if not corpus.covers(c, span))


DOMAINS = (Needle(),)
