"""Build a prompt context of at most `token_budget` tokens from long documents.

    ctx = assemble("when was the generator serviced?", {"manual": text}, token_budget=4000,
                   tokenizer=tok, retriever="hybrid", order="edges")
    ctx.text        # blocks "[chunk manual#12]\\n<chunk text>" separated by blank lines
    ctx.chunk_ids   # in the order they appear in ctx.text
    ctx.n_tokens    # the count of ctx.text with the same tokenizer, <= token_budget

Chunks are taken best-first from the retriever until the next one would not fit
(its `[chunk id]` header and separator counted too); the final text is counted
again as a whole and the last chunk dropped while the seams push it over. Then
they are ordered: `edges` puts the most relevant at both ends and the least in the
middle (rank 1 first, rank 2 last, rank 3 second, ...) against the "lost in the
middle" effect; `relevance` best first; `document` in document order (documents in
the order given, each in the order of its text).

Not guaranteed: the context holds only what the retriever ranked (a chunk that
shares nothing with the query under BM25 is never picked); a chunk that does not
fit is skipped, and a smaller one ranked below it may take its place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from posttrain.context.bm25 import BM25Index, Hit
from posttrain.context.chunking import Chunk, chunk_text
from posttrain.context.tokens import TokenCounter, count_batch, token_counter

Retriever = Literal["bm25", "dense", "hybrid"]
Order = Literal["edges", "relevance", "document"]

SEPARATOR = "\n\n"


@dataclass
class AssembledContext:
    """The assembled text and what went into it."""

    text: str
    chunk_ids: list[str]
    n_tokens: int
    token_budget: int


def block(chunk: Chunk) -> str:
    """How a chunk appears in a context: a `[chunk <id>]` header line, then its text."""
    return f"[chunk {chunk.id}]\n{chunk.text}"


def chunk_documents(
    documents: str | Mapping[str, str],
    tokenizer: Any | None = None,
    max_chunk_tokens: int = 200,
    overlap_tokens: int = 30,
) -> list[Chunk]:
    """Chunks of every document, documents in mapping order; a str is doc_id "doc".
    Raises ValueError for a document id that is not a non-empty str (chunk ids and
    citations are built from it) or an overlap that leaves no room in a chunk."""
    docs = {"doc": documents} if isinstance(documents, str) else dict(documents)
    for doc_id in docs:
        if not isinstance(doc_id, str) or not doc_id:
            raise ValueError(f"document ids must be non-empty strings, got {doc_id!r}")
    if max_chunk_tokens >= 1 and not 0 <= overlap_tokens < max_chunk_tokens:
        raise ValueError(
            f"overlap_tokens={overlap_tokens} must be in [0, max_chunk_tokens={max_chunk_tokens}):"
            " pass a smaller overlap_tokens (its default is 30)"
        )
    chunks: list[Chunk] = []
    for doc_id, text in docs.items():
        chunks.extend(chunk_text(text, doc_id, tokenizer, max_chunk_tokens, overlap_tokens))
    return chunks


def build_index(chunks: Sequence[Chunk], retriever: str) -> Any:
    """An index of kind `retriever` ("bm25", "dense" or "hybrid") over `chunks`."""
    if retriever == "bm25":
        return BM25Index(chunks)
    if retriever == "dense":
        from posttrain.context.dense import DenseIndex

        return DenseIndex(chunks)
    if retriever == "hybrid":
        from posttrain.context.hybrid import HybridIndex

        return HybridIndex(chunks)
    raise ValueError(f"retriever must be 'bm25', 'dense' or 'hybrid', got {retriever!r}")


def order_chunks(
    ranked: Sequence[Chunk], order: str, doc_ids: Sequence[str] | None = None
) -> list[Chunk]:
    """Reorder chunks given best first: `edges`, `relevance` or `document`. For
    `document`, `doc_ids` gives the documents' order (as given to `assemble`); it may
    be left out when all chunks come from one document."""
    if order == "relevance":
        return list(ranked)
    if order == "document":
        return sorted(ranked, key=_document_position(ranked, doc_ids))
    if order == "edges":
        front = list(ranked[0::2])  # ranks 1, 3, 5, ... from the start inwards
        back = list(ranked[1::2])  # ranks 2, 4, 6, ... from the end inwards
        return front + back[::-1]
    raise ValueError(f"order must be 'edges', 'relevance' or 'document', got {order!r}")


def _document_position(
    chunks: Sequence[Chunk], doc_ids: Sequence[str] | None
) -> Callable[[Chunk], tuple[int, int, int]]:
    """Sort key of `document` order: the document's place in `doc_ids`, then the
    chunk's start. Not the id itself: "d10" would sort before "d2"."""
    if doc_ids is None:
        doc_ids = sorted({c.doc_id for c in chunks})
        if len(doc_ids) > 1:
            raise ValueError(
                f"order='document' over several documents {doc_ids} needs doc_ids, "
                "the order they were given in"
            )
    place = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    unknown = sorted({c.doc_id for c in chunks} - place.keys())
    if unknown:
        raise ValueError(f"chunks of documents {unknown} are not in doc_ids={list(doc_ids)}")
    return lambda c: (place[c.doc_id], c.start, c.index)


def fit_to_budget(
    hits: Sequence[Hit],
    token_budget: int,
    counter: TokenCounter,
    order: str = "edges",
    doc_ids: Sequence[str] | None = None,
    costs: Mapping[str, int] | None = None,
) -> AssembledContext:
    """Take `hits` (best first) while they fit in `token_budget`, order (`doc_ids` as
    for `order_chunks`), and join them. `costs`, each chunk's block counted by id
    (every chunk's), saves counting here and ends the scan once nothing can fit."""
    sep = counter.count(SEPARATOR)
    least = min(costs.values()) if costs else 0
    chosen: list[Chunk] = []
    used = 0
    for hit in hits:
        if used + sep + least > token_budget and chosen:
            break  # not even the smallest block fits any more
        size = costs[hit.chunk.id] if costs else counter.count(block(hit.chunk))
        cost = size + (sep if chosen else 0)
        if used + cost <= token_budget:
            chosen.append(hit.chunk)
            used += cost
    while True:
        ordered = order_chunks(chosen, order, doc_ids)
        text = SEPARATOR.join(block(c) for c in ordered)
        n = counter.count(text) if ordered else 0
        if n <= token_budget:
            return AssembledContext(text, [c.id for c in ordered], n, token_budget)
        chosen.pop()  # BPE merges across the seams made it longer than the sum


def assemble(
    query: str,
    documents: str | Mapping[str, str],
    token_budget: int,
    tokenizer: Any | None = None,
    retriever: Retriever = "bm25",
    order: Order = "edges",
    max_chunk_tokens: int = 200,
    overlap_tokens: int = 30,
) -> AssembledContext:
    """The chunks of `documents` most relevant to `query` that fit in `token_budget`
    tokens (of `tokenizer`; None: the chars/4 estimate), each under a `[chunk id]`
    header. Raises ValueError for an empty query or a budget below the smallest chunk."""
    if not query.strip():
        raise ValueError("assemble: the query is empty")
    if order not in ("edges", "relevance", "document"):
        raise ValueError(f"order must be 'edges', 'relevance' or 'document', got {order!r}")
    doc_ids = ["doc"] if isinstance(documents, str) else list(documents)
    chunks = chunk_documents(documents, tokenizer, max_chunk_tokens, overlap_tokens)
    if not chunks:
        return AssembledContext("", [], 0, token_budget)
    counter = token_counter(tokenizer)
    # every block counted once (one batched call): headers differ with the doc ids
    costs = dict(
        zip([c.id for c in chunks], count_batch(counter, [block(c) for c in chunks]), strict=True)
    )
    smallest = min(costs.values())
    if token_budget < smallest:
        raise ValueError(
            f"token_budget={token_budget} is too small: the smallest chunk takes "
            f"{smallest} tokens with its header"
        )
    index = build_index(chunks, retriever)
    hits = index.search(query, k=len(chunks))  # every match: a large budget can take them all
    return fit_to_budget(hits, token_budget, counter, order, doc_ids, costs)
