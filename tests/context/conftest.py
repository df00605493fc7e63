"""Fixtures for the long-context tests: SmolLM2's tokenizer (loaded once) and a
structured sample document."""

from __future__ import annotations

import random
from typing import Any

import pytest


@pytest.fixture(scope="session")
def smollm2() -> Any:
    """SmolLM2-135M's tokenizer (~2 s), the unit long-context budgets are stated in."""
    from posttrain.models import smollm2_tokenizer

    return smollm2_tokenizer()


_WORDS = [
    "river",
    "stone",
    "market",
    "harbor",
    "lantern",
    "copper",
    "velvet",
    "quiet",
    "northern",
    "engine",
    "garden",
    "orchard",
    "signal",
    "ledger",
    "bridge",
    "meadow",
    "canal",
    "tower",
    "winter",
    "summer",
]


def sample_document(seed: int = 0, chapters: int = 4, paragraphs: int = 8) -> str:
    """Chapters of prose paragraphs with a table in each chapter."""
    rng = random.Random(seed)

    def sentence() -> str:
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16)))
        return words.capitalize() + "."

    parts: list[str] = []
    for c in range(1, chapters + 1):
        parts.append(f"Chapter {c}")
        for p in range(paragraphs):
            parts.append(" ".join(sentence() for _ in range(rng.randint(1, 7))))
            if p == 2:
                rows = [f"| {rng.choice(_WORDS)} | {rng.randint(0, 999)} |" for _ in range(6)]
                parts.append("| item | count |\n|---|---|\n" + "\n".join(rows))
    return "\n\n".join(parts)


@pytest.fixture(scope="session")
def document() -> str:
    return sample_document()
