"""Lexical retrieval over chunks: BM25 (Lucene variant) through `bm25s`.

    index = BM25Index(chunks)
    hits = index.search("when was the generator serviced", k=5)   # best first
    hits[0].chunk.id, hits[0].score

Text is lowercased, split into word characters, stripped of ~120 English stopwords
and of a few inflection suffixes by a tiny stemmer of our own ("services",
"serviced", "servicing" → "servic"), so no stemming package is needed. A chunk is
indexed with its section heading in front, so a query naming a chapter finds it.

Not guaranteed: the stemmer is crude (English only, no irregular forms, some
over-stemming); only chunks sharing at least one term with the query are returned,
so a query of stopwords alone returns nothing. Ties rank in chunk order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from posttrain.context.chunking import Chunk

_WORD = re.compile(r"\w+")

_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_SUFFIXES = ("ings", "ing", "edly", "ed", "ies", "es", "ly", "s")


def stem(word: str) -> str:
    """Strip one common inflection suffix, keeping a stem of at least 3 letters."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            base = word[: -len(suffix)]
            return base + "y" if suffix == "ies" else base
    if word.endswith("e") and len(word) > 4:
        return word[:-1]  # "service" and "servic(ed)" meet
    return word


def terms(text: str, cache: dict[str, str] | None = None) -> list[str]:
    """The BM25 terms of `text`: lowercased words, stopwords dropped, stemmed."""
    memo = cache if cache is not None else {}
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        if w in STOPWORDS:
            continue
        s = memo.get(w)
        if s is None:
            s = memo[w] = stem(w)
        out.append(s)
    return out


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk and its score (higher is better; scales differ by index)."""

    chunk: Chunk
    score: float


def indexed_text(chunk: Chunk) -> str:
    """What retrieval sees of a chunk: its heading (when not already in it), then the text."""
    if chunk.heading and not chunk.text.startswith(chunk.heading):
        return f"{chunk.heading}\n{chunk.text}"
    return chunk.text


class BM25Index:
    """BM25 over a fixed list of chunks."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        self._stems: dict[str, str] = {}
        self._vocab: dict[str, int] = {}  # insertion order: the same ids in every process
        corpus_ids: list[list[int]] = []
        for chunk in self.chunks:
            ids = []
            for t in terms(indexed_text(chunk), self._stems):
                i = self._vocab.get(t)
                if i is None:
                    i = self._vocab[t] = len(self._vocab)
                ids.append(i)
            corpus_ids.append(ids)
        import bm25s  # scipy comes with it (about half a second): on first index only

        self._retriever: bm25s.BM25 | None = None
        if self.chunks and self._vocab:
            self._retriever = bm25s.BM25()
            vocab = dict(self._vocab)
            self._retriever.index((corpus_ids, vocab), show_progress=False)

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The `k` best chunks sharing a term with `query`, best first (ties: the
        earlier chunk first)."""
        if self._retriever is None or k < 1:
            return []
        ids = [self._vocab[t] for t in terms(query, self._stems) if t in self._vocab]
        if not ids:
            return []
        scores = np.asarray(self._retriever.get_scores_from_ids(ids))  # [N]
        # Every chunk scored, then a stable sort: ties go to the earlier chunk. bm25s's own
        # top-k (numpy, numba or jax, whichever is installed) orders ties arbitrarily.
        best = np.argsort(-scores, kind="stable")[: min(k, len(self.chunks))]
        return [Hit(self.chunks[int(d)], float(scores[d])) for d in best if scores[d] > 0]
