"""Dense retrieval with MiniLM: paraphrase search, determinism, the missing-extra error.

The model takes ~15-30 s to load on a loaded 2-core machine, so the tests that need
it share one module-scoped index and are marked slow."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from posttrain.context import dense
from posttrain.context.chunking import Chunk, chunk_text

FACTS = "\n\n".join(
    [
        "The automobile was repaired by a mechanic on Tuesday.",
        "Our cat sleeps on the windowsill every afternoon.",
        "The quarterly budget was approved by the finance committee.",
        "Heavy rain flooded the basement of the library.",
        "The choir rehearses hymns in the chapel on Thursdays.",
    ]
)


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    return chunk_text(FACTS, "f", None, max_tokens=20, overlap_tokens=0)


@pytest.fixture(scope="module")
def index(chunks: list[Chunk]) -> dense.DenseIndex:
    pytest.importorskip("sentence_transformers")
    return dense.DenseIndex(chunks)


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense, "_MODEL", None)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r"posttrain\[dense\]"):
        dense.load_model()


def test_empty_input_embeds_to_an_empty_matrix() -> None:
    assert dense.embed([]).shape == (0, 384)


@pytest.mark.slow
def test_finds_a_paraphrase_sharing_no_words(index: dense.DenseIndex) -> None:
    hits = index.search("Who fixed the car?", k=1)
    assert "automobile" in hits[0].chunk.text


@pytest.mark.slow
def test_embeddings_are_unit_length(index: dense.DenseIndex) -> None:
    norms = (index.vectors**2).sum(axis=1)
    assert index.vectors.shape == (len(index.chunks), 384)
    assert abs(norms - 1).max() < 1e-4


@pytest.mark.slow
def test_same_query_same_ranking_best_first(index: dense.DenseIndex) -> None:
    a = index.search("water damage in a building", k=5)
    b = index.search("water damage in a building", k=5)
    assert [h.chunk.id for h in a] == [h.chunk.id for h in b]
    assert [h.score for h in a] == sorted((h.score for h in a), reverse=True)
    assert "flooded" in a[0].chunk.text


def test_tied_scores_rank_in_chunk_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # identical chunks embed alike: which of them make the top k must not be up to
    # argpartition; the earlier chunks do, and k cuts a prefix of the full ranking
    texts = ["same boilerplate"] * 10 + ["a closer match"]
    chunks = [Chunk(f"d#{i}", "d", i, t, 0, len(t), 2) for i, t in enumerate(texts)]
    index = object.__new__(dense.DenseIndex)
    index.chunks = chunks
    index.vectors = np.array([[0.6, 0.8]] * 10 + [[1.0, 0.0]], dtype=np.float32)
    monkeypatch.setattr(dense, "embed", lambda texts: np.array([[1.0, 0.0]], dtype=np.float32))
    full = [h.chunk.index for h in index.search("q", k=11)]
    assert full == [10, *range(10)]
    for k in range(1, 11):
        assert [h.chunk.index for h in index.search("q", k=k)] == full[:k]
