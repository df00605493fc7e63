"""The haystack: English-like filler prose, the length schedule, and facts placed at depths.

    tokens = target_tokens(difficulty, span=(1_000, 1_000_000))   # d1 = 1k, d10 = 1M
    text = compose(rng, filler_chars(tokens, fixed_chars), [(0.37, "The code is 4821.")])

The filler is built from a fixed pool of sentences (templates × vocabulary, drawn once
per process from a fixed seed, so every process has the same pool); a task draws its
sentences from the pool with its own `rng`, groups them into paragraphs of three to
six sentences and puts a chapter heading before every six to ten paragraphs. Facts
(needles, assignments, reports) are whole sentences inserted at the depths the caller
gives (0 = start, 1 = end; equal depths keep the caller's order). The text is made
from pre-made pieces joined once, so a 1M-token document takes well under a second.

Lengths are counted in SmolLM2-135M tokens; `CHARS_PER_TOKEN` was measured on this
filler with that tokenizer (see docs/domains/longctx.md) and converts a token target
into characters, so no tokenizer is needed at generation time.

Not guaranteed: the filler is ASCII prose with no digits and none of the family
keywords (code, vault, budget, shipped, staff, VAR_), but it is not meaningful text;
the token count is an estimate (within about 6% at 1k tokens and up, worse for prompts
dominated by digit-heavy facts, such as spans under ~200 tokens).
"""

from __future__ import annotations

import functools
import math
import random

DEFAULT_SPAN = (1_000, 1_000_000)
CHARS_PER_TOKEN = 4.8  # SmolLM2-135M tokens on this filler: 4.87 measured, less the headings
FACT_CHARS_PER_TOKEN = 3.3  # the facts and questions, with their digits and ids

_ADJECTIVES = (
    "quiet", "amber", "narrow", "distant", "patient", "weathered", "bright", "hollow",
    "gentle", "crooked", "silver", "restless", "humble", "ancient", "careful", "dusty",
    "golden", "tangled", "solemn", "crowded", "pale", "stubborn", "windy", "modest",
    "faded", "curious", "steady", "broad", "shadowed", "lively", "frozen", "tidy",
)  # fmt: skip
_NOUNS = (
    "harbor", "orchard", "lantern", "meadow", "library", "bridge", "market", "chapel",
    "river", "workshop", "garden", "tower", "valley", "kitchen", "courtyard", "mill",
    "forest", "station", "cottage", "hillside", "ferry", "village", "quarry", "stable",
    "balcony", "corridor", "terrace", "pasture", "monastery", "lighthouse", "canal", "barn",
)  # fmt: skip
_PEOPLE = (
    "the miller", "the old teacher", "a young clerk", "the ferryman", "the baker",
    "the surveyor", "a traveling painter", "the innkeeper", "the shepherd", "the scribe",
    "a tired courier", "the gardener", "the weaver", "the night watchman", "the potter",
    "the carpenter", "a quiet student", "the fisherman", "the mapmaker", "the healer",
)  # fmt: skip
_VERBS = (
    "walked past", "repaired", "painted", "described", "visited", "cleaned", "sketched",
    "remembered", "guarded", "admired", "avoided", "measured", "studied", "praised",
    "photographed", "explored", "watched", "mentioned", "restored", "circled",
)  # fmt: skip
_TIMES = (
    "in the early morning", "after the long rain", "before the harvest", "at dusk",
    "during the winter fair", "on a grey afternoon", "late in the evening",
    "when the bells rang", "after the market closed", "in the first week of spring",
    "during the festival", "before the snow came", "at the turn of the season",
)  # fmt: skip
_FEELINGS = (
    "calm", "uneasy", "hopeful", "tired", "grateful", "puzzled", "content", "wistful",
    "proud", "restless", "amused", "cautious",
)  # fmt: skip
_TEMPLATES = (
    "{P} {v} the {a} {n} {t}.",
    "The {a} {n} stood near the {n2}, and {p} {v} it {t}.",
    "{T}, {p} felt {f} while looking at the {a} {n}.",
    "Nobody in the {n} could explain why the {n2} seemed so {a} {t}.",
    "{P} wrote a long letter about the {a} {n} and the {a2} {n2}.",
    "It was said that the {n} had always been {a}, even {t}.",
    "{P} {v} the {n2} and then returned to the {a} {n}.",
    "The path from the {n} to the {n2} was {a} and rarely used.",
    "{T}, the {n} grew {a}, and {p} stayed {f}.",
    "Some travelers claimed the {a} {n} was older than the {n2}.",
    "{P} kept a small notebook about the {n}, full of {a} drawings.",
    "A {a} light fell across the {n2} while {p} {v} the {n}.",
    "The story of the {a} {n} was told again {t}.",
    "{P} was {f} to see that the {n2} looked {a} once more.",
    "Between the {n} and the {n2} there was a {a} field of tall grass.",
    "Children often ran from the {n} to the {a} {n2} {t}.",
    "{P} believed the {a} {n} held memories of better years.",
    "The {n2} was {a2}, but the {n} felt {a} and strangely warm.",
    "No one {v} the {a} {n} without stopping for a while.",
    "{T}, a {a} wind moved through the {n} and over the {n2}.",
    "In the end, {p} decided the {n} should stay as {a} as before.",
    "The walls of the {n} were {a}, and the roof of the {n2} was {a2}.",
)  # fmt: skip
_TITLE_NOUNS = tuple(n.capitalize() for n in _NOUNS)
_TITLE_ADJECTIVES = tuple(a.capitalize() for a in _ADJECTIVES)


def _sentence(rng: random.Random) -> str:
    template = rng.choice(_TEMPLATES)
    person, time = rng.choice(_PEOPLE), rng.choice(_TIMES)
    noun, other = rng.sample(_NOUNS, 2)
    adjective, second = rng.sample(_ADJECTIVES, 2)
    return template.format(
        P=person[0].upper() + person[1:], p=person, v=rng.choice(_VERBS), a=adjective,
        a2=second, n=noun, n2=other, t=time, T=time[0].upper() + time[1:],
        f=rng.choice(_FEELINGS),
    )  # fmt: skip


@functools.cache
def sentence_pool() -> tuple[str, ...]:
    """The process-wide filler sentences: 4096 of them, the same in every process."""
    rng = random.Random(20_240_917)
    return tuple(_sentence(rng) for _ in range(4096))


@functools.cache
def _mean_sentence_chars() -> float:
    pool = sentence_pool()
    return sum(len(s) + 1 for s in pool) / len(pool)


def check_span(span: tuple[int, int]) -> tuple[int, int]:
    """The span as a pair of ints, or ValueError unless 16 <= min <= max."""
    lo, hi = (int(span[0]), int(span[1]))
    if not 16 <= lo <= hi:
        raise ValueError(f"span must satisfy 16 <= min_tokens <= max_tokens, got {span!r}")
    return lo, hi


def target_tokens(difficulty: int, span: tuple[int, int] = DEFAULT_SPAN) -> int:
    """The prompt's length target in SmolLM2 tokens: geometric from span[0] (d1) to span[1] (d10).

    >>> [target_tokens(d) for d in (1, 4, 7, 10)]
    [1000, 10000, 100000, 1000000]
    >>> target_tokens(1, (64, 512)), target_tokens(10, (64, 512))
    (64, 512)
    """
    lo, hi = span
    return round(lo * (hi / lo) ** ((difficulty - 1) / 9))


def length_scale(tokens: int) -> int:
    """A small count that grows with the length: 0 at ≤128 tokens, +1 per doubling (13 at 1M)."""
    return max(0, int(math.log2(max(tokens, 128) / 128)))


def filler_chars(tokens: int, fixed_chars: int) -> int:
    """Characters of filler that bring a prompt with `fixed_chars` of other text to `tokens`.

    The other text (facts, question) is digit-heavy, so it is counted at
    `FACT_CHARS_PER_TOKEN`, denser than the filler."""
    return max(0, round((tokens - fixed_chars / FACT_CHARS_PER_TOKEN) * CHARS_PER_TOKEN))


def heading(rng: random.Random, number: int) -> str:
    return f"Chapter {number}: The {rng.choice(_TITLE_ADJECTIVES)} {rng.choice(_TITLE_NOUNS)}"


def compose(rng: random.Random, chars: int, facts: list[tuple[float, str]]) -> str:
    """About `chars` characters of filler in chapters, with each fact sentence at its depth.

    Facts with equal depths keep the order given; every fact lands inside a paragraph."""
    mean = _mean_sentence_chars()
    count = max(0, round(chars / mean))
    sentences = rng.choices(sentence_pool(), k=count)
    merged: list[str] = []
    start = 0
    for depth, fact in sorted(facts, key=lambda item: item[0]):
        cut = min(count, max(start, int(min(max(depth, 0.0), 1.0) * count + 0.5)))
        merged += sentences[start:cut]
        merged.append(fact)
        start = cut
    merged += sentences[start:]
    blocks: list[str] = []
    chapter, until_heading, i = 0, 0, 0
    while i < len(merged):
        if until_heading <= 0 and len(merged) - i > 3:
            chapter += 1
            blocks.append(heading(rng, chapter))
            until_heading = rng.randint(6, 10)
        size = rng.randint(3, 6)
        blocks.append(" ".join(merged[i : i + size]))
        i += size
        until_heading -= 1
    return "\n\n".join(blocks)
