"""Long context: structure-aware chunking, retrieval (BM25, dense, hybrid) and
budgeted context assembly with citable `[chunk id]` blocks.

Import from here: `chunk_text`, `Chunk`, `token_counter`, `TokenCounter`,
`BM25Index`, `Hit`, `assemble`, `AssembledContext`, and (needing the optional
extra `pip install 'posttrain[dense]'`) `DenseIndex` and `HybridIndex`, which are
imported on first use so that BM25-only users never load torch models; `bm25s`
(and scipy) load when the first BM25 index is built.
"""

from typing import Any

from posttrain.context.assemble import AssembledContext, assemble
from posttrain.context.bm25 import BM25Index, Hit
from posttrain.context.chunking import Chunk, chunk_text
from posttrain.context.tokens import TokenCounter, token_counter

__all__ = [
    "AssembledContext",
    "BM25Index",
    "Chunk",
    "DenseIndex",
    "Hit",
    "HybridIndex",
    "TokenCounter",
    "assemble",
    "chunk_text",
    "token_counter",
]


def __getattr__(name: str) -> Any:
    if name == "DenseIndex":
        from posttrain.context.dense import DenseIndex

        return DenseIndex
    if name == "HybridIndex":
        from posttrain.context.hybrid import HybridIndex

        return HybridIndex
    raise AttributeError(f"module 'posttrain.context' has no attribute {name!r}")
