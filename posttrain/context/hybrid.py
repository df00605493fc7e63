"""Hybrid retrieval: reciprocal-rank fusion of BM25 and dense rankings.

    index = HybridIndex(chunks)                       # BM25 + MiniLM over every chunk
    index = HybridIndex(chunks, candidates=100)       # dense re-ranks BM25's top 100 only
    index = HybridIndex(chunks, dense_index=dense)    # reuse a DenseIndex of the same chunks
    hits = index.search("emergency power unit at the Marlow storage facility", k=5)

A chunk's fused score is `sum_r weight_r / (rrf_k + rank_r)` over the rankings it
appears in (rank 1 is best; `rrf_k = 60` as in Cormack et al., 2009). BM25 catches
exact identifiers and names; the dense ranking catches paraphrases that share no
words with the text. With `candidates=N` the dense model embeds only the chunks in
BM25's top N (cached across searches), the usual "retrieve then re-rank" setup
that keeps a million-token document cheap; a chunk BM25 misses entirely is then
out of reach.

Not guaranteed: fused scores only order results, they are not probabilities; the
dense side needs the optional extra (`pip install 'posttrain[dense]'`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from posttrain.context.bm25 import BM25Index, Hit, indexed_text
from posttrain.context.chunking import Chunk
from posttrain.context.dense import DenseIndex, embed, load_model

RRF_K = 60
DEPTH = 100  # how deep each ranking is read before fusing


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[Hit]], weights: Mapping[str, float], rrf_k: int = RRF_K
) -> list[Hit]:
    """Fuse best-first rankings by `weight / (rrf_k + rank)`; ties by first appearance."""
    fused: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    for name, hits in rankings.items():
        w = weights.get(name, 1.0)
        for rank, hit in enumerate(hits, start=1):
            fused[hit.chunk.id] = fused.get(hit.chunk.id, 0.0) + w / (rrf_k + rank)
            chunks.setdefault(hit.chunk.id, hit.chunk)
    order = sorted(fused, key=lambda cid: -fused[cid])  # stable: insertion order breaks ties
    return [Hit(chunks[cid], fused[cid]) for cid in order]


class HybridIndex:
    """BM25 and MiniLM rankings fused by reciprocal rank."""

    def __init__(
        self,
        chunks: Sequence[Chunk],
        bm25_weight: float = 1.0,
        dense_weight: float = 1.0,
        rrf_k: int = RRF_K,
        candidates: int | None = None,
        dense_index: DenseIndex | None = None,
    ) -> None:
        if not rrf_k >= 0:  # rank 1 would divide by zero at -1; NaN ranks nothing
            raise ValueError(f"HybridIndex: rrf_k must be >= 0, got {rrf_k!r}")
        if not (bm25_weight >= 0 and dense_weight >= 0):
            raise ValueError(
                f"HybridIndex: weights must be >= 0, got bm25 {bm25_weight!r}, "
                f"dense {dense_weight!r}"
            )
        self.chunks = list(chunks)
        self.weights = {"bm25": bm25_weight, "dense": dense_weight}
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.bm25 = BM25Index(self.chunks)
        self.dense: DenseIndex | None = None
        self._cache: dict[str, np.ndarray] = {}  # re-rank mode: chunk id -> embedding
        if dense_index is not None:  # reuse encodings already made over the same chunks
            self.dense, self.candidates = dense_index, None
        elif candidates is None:
            self.dense = DenseIndex(self.chunks)
        else:
            load_model()

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The `k` best chunks by fused rank, best first."""
        if not self.chunks or k < 1 or not query.strip():
            return []
        if self.dense is not None:
            depth = max(k, DEPTH)
            bm25_hits = self.bm25.search(query, k=depth)
            dense_hits = self.dense.search(query, k=depth)
        else:
            bm25_hits = self.bm25.search(query, k=self.candidates or k)
            dense_hits = self._rerank(query, bm25_hits)
        rankings = {"bm25": bm25_hits, "dense": dense_hits}
        return reciprocal_rank_fusion(rankings, self.weights, self.rrf_k)[:k]

    def _rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        missing = [h.chunk for h in hits if h.chunk.id not in self._cache]
        for chunk, vector in zip(missing, embed([indexed_text(c) for c in missing]), strict=True):
            self._cache[chunk.id] = vector
        if not hits:
            return []
        q = embed([query])[0]
        scored = [Hit(h.chunk, float(self._cache[h.chunk.id] @ q)) for h in hits]
        return sorted(scored, key=lambda h: -h.score)
