"""BM25 retrieval over chunks: ranking, term normalisation, edge cases."""

from __future__ import annotations

from posttrain.context.bm25 import BM25Index, stem, terms
from posttrain.context.chunking import Chunk, chunk_text

DOC = """# Facilities

The Marlow warehouse's backup generator was last serviced on 14 March 2019.

The Dunmore depot keeps its spare tyres in the north shed.

# Staff

Anna Keller manages the night shift at the Dunmore depot.

The canteen opens at seven and serves soup on Fridays."""


def _index() -> BM25Index:
    return BM25Index(chunk_text(DOC, "d", None, max_tokens=30, overlap_tokens=0))


def test_finds_the_chunk_with_the_query_terms() -> None:
    hits = _index().search("Marlow generator serviced", k=3)
    assert "Marlow" in hits[0].chunk.text


def test_hits_are_best_first() -> None:
    hits = _index().search("Dunmore depot night shift", k=5)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and "night shift" in hits[0].chunk.text


def test_inflections_meet_at_one_stem() -> None:
    assert stem("services") == stem("serviced") == stem("servicing") == stem("service")
    assert terms("The generators were SERVICED") == [stem("generator"), stem("service")]


def test_stopwords_only_query_returns_nothing() -> None:
    assert _index().search("the of and was", k=3) == []


def test_unknown_words_return_nothing() -> None:
    assert _index().search("zeppelin", k=3) == []


def test_k_larger_than_the_corpus_is_capped() -> None:
    index = _index()
    assert len(index.search("Dunmore", k=1000)) <= len(index.chunks)


def test_heading_words_find_the_section() -> None:
    hits = _index().search("staff canteen", k=1)
    assert hits[0].chunk.heading == "# Staff"


def test_empty_index_returns_nothing() -> None:
    assert BM25Index([]).search("anything") == []


def test_same_chunks_give_the_same_ranking() -> None:
    a = [h.chunk.id for h in _index().search("depot shift tyres", k=5)]
    b = [h.chunk.id for h in _index().search("depot shift tyres", k=5)]
    assert a == b


def test_tied_scores_rank_in_chunk_order() -> None:
    # twelve chunks, eight of them scoring alike for "stone": ties go to the earlier chunk,
    # whichever top-k backend bm25s picks (numpy, numba or jax), and k cuts a prefix
    texts = ["river stone" if i % 3 else "river market" for i in range(12)]
    chunks = [Chunk(f"d#{i}", "d", i, t, 0, len(t), 2) for i, t in enumerate(texts)]
    index = BM25Index(chunks)
    assert [h.chunk.index for h in index.search("river", k=12)] == list(range(12))
    stone = [h.chunk.index for h in index.search("river stone", k=12)]
    assert stone == [1, 2, 4, 5, 7, 8, 10, 11, 0, 3, 6, 9]
    assert [h.chunk.index for h in index.search("river stone", k=3)] == stone[:3]
