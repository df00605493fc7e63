"""`longctx-search/multi-hop-v1`: follow two or three planted facts, each naming the next.

Hop 1 names who runs a facility ("The archive at Harrowgate is run by Ada Rusk."); from
difficulty 6 a middle hop names that person's supervisor ("Ada Rusk reports directly
to Nils Quist."); the last hop gives the person's staff badge number. The question
asks for the badge number of the person who runs the facility (or of their
supervisor), so each hop's search needs a name read off the previous hop's chunk.
Distractor chains start at the same facility of a look-alike place and at another
facility of the same place, and people sharing the answer person's surname carry
badges too; every distractor person has a badge, so a wrong turn gives a plausible
wrong number. The haystack grows from 10k tokens (difficulty 1) to 1M (10).

The answer is `{"value": "4821", "chunks": ["doc#12", "doc#80"]}`: the final value and
one chunk per hop, in hop order. Reward: 0.5 for the value plus 0.5 × the share of
hops whose cited chunk covers that hop's key (the name or value it states) and was
read in this episode; passing needs all. No chunk read: 0.

Not guaranteed: a hop's key is a name or number, so a chunk covering that occurrence
counts even when the sentence around it is cut at the chunk's start.
"""

from __future__ import annotations

import json
import random

from posttrain.domains.base import Axes
from posttrain.domains.longctx_search import world
from posttrain.domains.longctx_search.framework import (
    READ,
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
from posttrain.domains.longctx_search.needle import haystack_tokens, read_value, title_of
from posttrain.types import Message, Reference, Task, ToolCall, Verdict
from posttrain.verify.structure import parse_json

RUNS = ("The {f} at {p} is run by {q}.", "{q} has managed the {f} at {p} for several years.")
REPORTS = ("{q} reports directly to {r}.", "The supervisor of {q} is {r}.")
BADGES = ("{q}'s staff badge number is {v}.", "The staff badge issued to {q} bears the number {v}.")


class MultiHop(RetrievalDomain):
    """A chain of planted facts: facility → person (→ supervisor) → badge number."""

    id = "longctx-search/multi-hop-v1"
    axes = Axes("document", "retrieval", "multi", "fields_citations")
    batched = False  # each hop's query needs the name read in the previous hop

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        hops = 2 if difficulty <= 5 else 3
        places: set[str] = set()
        people: set[str] = set()
        place, facility = world.new_place(rng, places), rng.choice(world.FACILITIES)
        chain = [world.new_person(rng, people) for _ in range(hops - 1)]
        numbers = world.values(rng, 4 + difficulty)
        value = numbers.pop()
        facts: list[Fact] = []  # the hops first, in order: spans "hop0", "hop1", ...

        def plant(template: str, key: str, **names: str) -> None:
            facts.append(Fact(template.format(**names), key, rng.uniform(0.02, 0.98)))

        plant(rng.choice(RUNS), chain[0], f=facility, p=place, q=chain[0])
        if hops == 3:
            plant(rng.choice(REPORTS), chain[1], q=chain[0], r=chain[1])
        plant(rng.choice(BADGES), value, q=chain[-1], v=value)
        # Distractor chains: same facility at a look-alike place, another facility here.
        n_chains = 1 + difficulty // 3
        decoy_values = []
        for i in range(n_chains):
            f, p = facility, place
            if i % 2 == 0:
                p = world.lookalike_place(rng, place, places)
            else:
                f = rng.choice([x for x in world.FACILITIES if x != facility])
            q = world.new_person(rng, people)
            plant(rng.choice(RUNS), q, f=f, p=p, q=q)
            if hops == 3:
                r = world.new_person(rng, people)
                plant(rng.choice(REPORTS), r, q=q, r=r)
                q = r
            decoy_values.append(numbers.pop())
            plant(rng.choice(BADGES), decoy_values[-1], q=q, v=decoy_values[-1])
        surname = chain[-1].split()[-1]
        for _ in range(1 + difficulty // 4):  # namesakes of the answer person
            q = world.new_person(rng, people, last=surname)
            plant(rng.choice(BADGES), "", q=q, v=numbers.pop())
        facts += [Fact(world.mention(rng, facility, place), "", rng.uniform(0.0, 1.0)) for _ in range(difficulty)]  # fmt: skip
        tokens = haystack_tokens(difficulty)
        spec = HaystackSpec(rng.randrange(2**31), tokens, tuple(facts))
        whom = "the person who runs" if hops == 2 else "the supervisor of the person who runs"
        queries = [f"{facility} {place} run managed by"]
        if hops == 3:
            queries.append(f"{chain[0]} reports supervisor")
        queries.append(f"{chain[-1]} staff badge number")
        return Setup(
            question=f"Question: What is the staff badge number of {whom} the {facility} at {place}?",  # fmt: skip
            answer_format=(
                'Answer with one JSON object and nothing else: {"value": "<the badge number, '
                'as a string of digits>", "chunks": [<the id of the chunk that states each '
                f'step, in order: {hops} ids such as "doc#12">]}}.'
            ),
            title=title_of(rng, place),
            tokens=tokens,
            doc=spec.to_meta(),
            answer=value,
            meta={"hops": hops, "queries": queries, "chain": chain, "decoy_values": decoy_values},
        )

    def build(self, task: Task) -> Built:
        hay = build_haystack(HaystackSpec.from_meta(task.meta["doc"]))
        hops = task.meta["hops"]
        spans = {f"hop{i}": hay.spans[i] for i in range(hops)}
        # The first distractor chain's badge: its last planted fact.
        spans["decoy"] = hay.spans[2 * hops - 1]
        return Built(hay.text, spans)

    def targets(self, task: Task) -> list[Target]:
        return [Target(q, f"hop{i}") for i, q in enumerate(task.meta["queries"])]

    def final_answer(self, task: Task, chunk_ids: list[str]) -> str:
        return json.dumps({"value": task.answer, "chunks": chunk_ids})

    def judge(self, task: Task, final: str, evidence: Evidence, corpus: Corpus) -> Verdict:
        got = parse_json(final)
        hops = task.meta["hops"]
        if not isinstance(got, dict) or sorted(got) != ["chunks", "value"] or not isinstance(got["chunks"], list):  # fmt: skip
            return failed('The reply is not exactly {"value": ..., "chunks": [...]}.')
        right = read_value(got["value"]) == task.answer
        cited = [
            i < len(got["chunks"])
            and corpus.covers(got["chunks"][i], f"hop{i}")
            and got["chunks"][i] in evidence.read  # fmt: skip
            for i in range(hops)
        ]
        exact_length = len(got["chunks"]) == hops
        share = sum(cited) / hops
        passed = right and all(cited) and exact_length
        reward = min(0.5 * right + 0.5 * share, 1.0 if passed else 0.99)
        components = {"format": 1.0, "value": float(right), "citations": share,
                      "searched": float(evidence.searches > 0)}  # fmt: skip
        if passed:
            reason = "The value is right and every hop's chunk was read and holds that hop."
        else:
            reason = (f"The value is {'right' if right else 'wrong'}; {sum(cited)} of {hops} hops "
                      f"are cited to a chunk that holds them and was read"
                      + ("" if exact_length else f", and {len(got['chunks'])} ids were given for {hops} hops") + ".")  # fmt: skip
        return Verdict(reward, passed, reason, components)

    def wrong(self, task: Task, reference: Reference) -> list[Reference]:
        corpus = self.corpus(task)
        final = json.loads(reference.final)
        chunks: list[str] = final["chunks"]
        decoy = next(c for c in corpus.chunks if corpus.covers(c, "decoy"))
        tools = reference.turns[:-1]
        first_read = calls_turn([ToolCall(READ, {"id": chunks[0]})])
        return [
            # the distractor chain's badge, cited to its chunk in the last place
            Reference(
                [
                    *tools,
                    calls_turn([ToolCall(READ, {"id": decoy})]),
                    Message(
                        "assistant",
                        json.dumps(
                            {"value": task.meta["decoy_values"][0], "chunks": [*chunks[:-1], decoy]}
                        ),
                    ),
                ]
            ),  # fmt: skip
            # the right value with only the last hop cited
            Reference(
                [
                    *tools,
                    Message("assistant", json.dumps({"value": task.answer, "chunks": chunks[-1:]})),
                ]
            ),  # fmt: skip
            # the right answer guessed without any tool call
            Reference.single(reference.final),
            # the right answer after reading only the first hop's chunk
            Reference([first_read, Message("assistant", reference.final)]),
        ]


DOMAINS = (MultiHop(),)
