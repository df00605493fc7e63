"""Hybrid retrieval: rank fusion, and the cases where one retriever alone misses."""

from __future__ import annotations

import pytest

from posttrain.context.bm25 import BM25Index, Hit
from posttrain.context.chunking import Chunk, chunk_text
from posttrain.context.hybrid import HybridIndex, reciprocal_rank_fusion

FACTS = "\n\n".join(
    [
        "The automobile was repaired by a mechanic on Tuesday.",
        "The car park behind the station closes at midnight.",
        "Our cat sleeps on the windowsill every afternoon.",
        "Ticket XK-4471 reports a broken login page.",
        "Several tickets mention slow loading of the dashboard.",
        "The quarterly budget was approved by the finance committee.",
        "Heavy rain flooded the basement of the library.",
    ]
)


def _chunk(i: int) -> Chunk:
    return Chunk(f"d#{i}", "d", i, f"text {i}", 0, 1, 1)


def test_rrf_scores_are_weighted_reciprocal_ranks() -> None:
    a, b, c = _chunk(0), _chunk(1), _chunk(2)
    fused = reciprocal_rank_fusion(
        {"bm25": [Hit(a, 9.0), Hit(b, 5.0)], "dense": [Hit(b, 0.9), Hit(c, 0.8)]},
        {"bm25": 1.0, "dense": 2.0},
    )
    assert [h.chunk.id for h in fused] == ["d#1", "d#2", "d#0"]
    assert fused[0].score == pytest.approx(1 / 62 + 2 / 61)


def test_rrf_of_nothing_is_nothing() -> None:
    assert reciprocal_rank_fusion({"bm25": [], "dense": []}, {}) == []


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return chunk_text(FACTS, "f", None, max_tokens=20, overlap_tokens=0)


@pytest.fixture(scope="module")
def index(chunks: list[Chunk]) -> HybridIndex:
    pytest.importorskip("sentence_transformers")
    return HybridIndex(chunks)


@pytest.mark.slow
def test_hybrid_finds_a_paraphrase_bm25_misses(chunks: list[Chunk], index: HybridIndex) -> None:
    query = "When did the car get fixed?"
    bm25 = [h.chunk.text for h in BM25Index(chunks).search(query, k=3)]
    hybrid = [h.chunk.text for h in index.search(query, k=3)]
    assert not any("automobile" in t for t in bm25)
    assert any("automobile" in t for t in hybrid)


@pytest.mark.slow
def test_hybrid_keeps_an_exact_identifier_match_first(index: HybridIndex) -> None:
    assert "XK-4471" in index.search("XK-4471", k=1)[0].chunk.text


@pytest.mark.slow
def test_rerank_mode_only_embeds_bm25_candidates(chunks: list[Chunk]) -> None:
    pytest.importorskip("sentence_transformers")
    index = HybridIndex(chunks, candidates=2)
    hits = index.search("ticket login", k=2)
    assert "XK-4471" in hits[0].chunk.text
    assert len(index._cache) <= 2


@pytest.mark.parametrize(
    ("kwargs", "named"), [({"rrf_k": -1}, "rrf_k"), ({"dense_weight": -1.0}, "weights")]
)
def test_settings_that_break_the_fusion_are_refused(kwargs: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        HybridIndex([_chunk(0)], **kwargs)
