"""Haystacks: long English-like filler prose with a few planted fact sentences at known offsets.

    spec = HaystackSpec(seed=7, tokens=10_000, facts=(Fact("The boathouse at Velmere is run by Ada Rusk.", "Ada Rusk", 0.4),))
    hay = build_haystack(spec)
    start, end = hay.spans[0]          # where "Ada Rusk" sits in hay.text

A haystack is paragraphs of filler sentences drawn from templates and word pools
(about four characters a token, plain ASCII, no digits at all), grown from the
spec's seed until it reaches `tokens × 4` characters. Each `Fact` is then planted
as one sentence inside the paragraph at its relative position `at`; the span of its
`key` (the part an answer rests on: a value, a name) is recorded, so a verifier can
ask whether a chunk of the document covers it. Because filler never holds a digit,
every number in the haystack comes from a planted fact.

Not guaranteed: the prose is grammatical but meaningless and repetitive over a
million tokens; `tokens` is reached from below within one paragraph (the estimate
is characters / 4, not a tokenizer's count); facts at nearly the same `at` land in
the same paragraph, in the order given.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

CHARS_PER_TOKEN = 4

SUBJECTS = ("The harbor master", "A local weaver", "The village council", "Several farmers",
            "The old ferryman", "A traveling merchant", "The schoolteacher", "Two shepherds",
            "The miller's family", "A group of students", "The night watch", "The river pilots",
            "An elderly beekeeper", "The choir", "A visiting surveyor", "The blacksmith",
            "The lighthouse keeper", "A pair of carpenters", "The parish clerk", "Most fishermen")  # fmt: skip
VERBS = ("repaired", "discussed", "painted", "inspected", "measured", "sold", "described",
         "carried", "cleaned", "mapped", "praised", "questioned", "rebuilt", "photographed",
         "guarded", "ignored", "decorated", "studied", "borrowed", "recorded")  # fmt: skip
OBJECTS = ("the stone bridge", "a cart of barley", "the autumn market", "the eastern road",
           "an old map", "the chapel roof", "a crate of lanterns", "the orchard wall",
           "the tide tables", "a bundle of letters", "the grain store", "the town clock",
           "a flock of geese", "the mill race", "the coastal path", "a chest of tools",
           "the parish records", "the drying sheds", "a field of flax", "the north pier")  # fmt: skip
TIMES = ("early in the spring", "after the first frost", "during the long rains", "on market day",
         "before dawn", "late in the evening", "at the end of the harvest", "in the dry season",
         "over the winter", "on a quiet Sunday", "after the storm", "in the middle of summer")  # fmt: skip
CLAUSES = ("while the wind rose over the hills", "because the river had flooded",
           "although few people noticed", "as the bells rang across the valley",
           "when the roads were finally clear", "so that the children could watch",
           "before the visitors arrived", "even though the weather turned",
           "as had been the custom for generations", "without asking anyone for help")  # fmt: skip
ADJECTIVES = ("quiet", "crowded", "muddy", "bright", "neglected", "famous", "narrow", "windy",
              "peaceful", "busy", "ancient", "sheltered")  # fmt: skip
TOWNS = ("Oakhollow", "Brindle Cross", "Saltmarsh", "Greywater", "Fernley", "Copperdale",
         "Mistle End", "Rookwood", "Tallowby", "Winterbourne", "Larkspur Green", "Hobbs Ferry")  # fmt: skip
TOPICS = ("Customs", "Trade", "Weather", "Farming", "Buildings", "Festivals", "Roads", "Crafts",
          "Rivers", "Markets", "Families", "Travel")  # fmt: skip


@dataclass(frozen=True)
class Fact:
    """A sentence to plant at relative position `at` (0 ≤ at < 1); `key` is located in it
    (its last occurrence) and its span recorded; an empty key records nothing useful."""

    sentence: str
    key: str
    at: float


@dataclass(frozen=True)
class HaystackSpec:
    """Everything a haystack is rebuilt from: filler seed, size, planted facts."""

    seed: int
    tokens: int
    facts: tuple[Fact, ...]

    def to_meta(self) -> dict[str, object]:
        return {"seed": self.seed, "tokens": self.tokens,
                "facts": [[f.sentence, f.key, f.at] for f in self.facts]}  # fmt: skip

    @classmethod
    def from_meta(cls, meta: dict[str, object]) -> HaystackSpec:
        facts = tuple(Fact(str(s), str(k), float(a)) for s, k, a in meta["facts"])  # type: ignore[attr-defined]
        return cls(int(meta["seed"]), int(meta["tokens"]), facts)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Haystack:
    """The text and, per planted fact (in spec order), the (start, end) of its key."""

    text: str
    spans: list[tuple[int, int]]


def _sentence(rng: random.Random) -> str:
    kind = rng.randrange(6)
    s, v, o = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)
    if kind == 0:
        return f"{s} {v} {o} {rng.choice(TIMES)}."
    if kind == 1:
        return f"{rng.choice(TIMES).capitalize()}, {s[0].lower()}{s[1:]} {v} {o}."
    if kind == 2:
        return f"{s} {v} {o} {rng.choice(CLAUSES)}."
    if kind == 3:
        return f"Nobody in {rng.choice(TOWNS)} could remember when {o} had last been so {rng.choice(ADJECTIVES)}."  # fmt: skip
    if kind == 4:
        return f"In {rng.choice(TOWNS)}, {s[0].lower()}{s[1:]} {v} {o} {rng.choice(TIMES)}."
    return f"Some say that {o} was {rng.choice(ADJECTIVES)} {rng.choice(CLAUSES)}."


def filler(rng: random.Random, chars: int) -> list[list[str]]:
    """Paragraphs (lists of sentences) of at least `chars` characters in all; every
    twelfth paragraph opens with a heading line."""
    paragraphs: list[list[str]] = []
    length = 0
    while length < chars:
        if len(paragraphs) % 12 == 0:
            heading = f"{rng.choice(TOPICS)} of {rng.choice(TOWNS)}"
            paragraphs.append([heading])
            length += len(heading) + 2
        sentences = [_sentence(rng) for _ in range(rng.randint(3, 7))]
        paragraphs.append(sentences)
        length += sum(len(x) + 1 for x in sentences) + 1
    return paragraphs


def build_haystack(spec: HaystackSpec) -> Haystack:
    """The haystack `spec` describes; the same spec gives the same text in any process."""
    paragraphs = filler(random.Random(spec.seed), spec.tokens * CHARS_PER_TOKEN)
    # A fact goes after a paragraph's first sentence, so it never stands as a heading.
    placed: dict[int, list[int]] = {}
    for number, fact in enumerate(spec.facts):
        index = min(len(paragraphs) - 1, max(0, int(fact.at * len(paragraphs))))
        if len(paragraphs[index]) == 1:  # a heading: use the paragraph after it
            index = min(len(paragraphs) - 1, index + 1)
        placed.setdefault(index, []).append(number)
    texts: list[str] = []
    spans: list[tuple[int, int]] = [(0, 0)] * len(spec.facts)
    offset = 0
    for index, sentences in enumerate(paragraphs):
        numbers = placed.get(index)
        if numbers:
            head = sentences[0] + " "
            cursor = offset + len(head)
            planted = []
            for number in numbers:
                fact = spec.facts[number]
                at = fact.sentence.rfind(fact.key) if fact.key else -1
                start = cursor + max(0, at)
                spans[number] = (start, start + (len(fact.key) if at >= 0 else 0))
                planted.append(fact.sentence)
                cursor += len(fact.sentence) + 1
            text = head + " ".join(planted + sentences[1:])
        else:
            text = " ".join(sentences)
        texts.append(text)
        offset += len(text) + 2
    return Haystack("\n\n".join(texts), spans)
