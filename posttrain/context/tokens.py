"""Token counting for long-context work: the model's own tokenizer, or a quick estimate.

    counter = token_counter(tokenizer)   # any HF tokenizer; None for the estimate
    counter.count("some text")           # tokens, no special tokens
    counter.count_batch(["a", "b"])      # the same, one batched call
    spans = token_spans(tokenizer, texts)  # per text: the character start of each token

Chunking and context assembly count with the same counter, so a budget stated in
the model's tokens is met in the model's tokens.

Not guaranteed: with `tokenizer=None` the count is an estimate (characters / 4,
rounded up), not any model's count; a tokenizer that is neither a HF fast
tokenizer nor has `encode` is counted by `len(tokenizer(text))` semantics it must
provide. Counting a text in pieces can differ by a token or two from counting
the whole, because BPE merges across the seams; callers that need a hard bound
re-count the final text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

CHARS_PER_TOKEN = 4  # the estimate's ratio; English prose runs 3.5-4.5 chars per BPE token


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts the tokens of a text."""

    def count(self, text: str) -> int: ...


class EstimateCounter:
    """`ceil(len(text) / 4)`: no tokenizer needed, approximate."""

    def count(self, text: str) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


class TokenizerCounter:
    """Counts a HF tokenizer's tokens, special tokens excluded. Uses the Rust
    backend of a fast tokenizer directly (batched, no Python per token)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._backend = getattr(tokenizer, "backend_tokenizer", None)

    def count(self, text: str) -> int:
        if self._backend is not None:
            return len(self._backend.encode(text, add_special_tokens=False).ids)
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if self._backend is not None:
            return [
                len(e.ids)
                for e in self._backend.encode_batch(list(texts), add_special_tokens=False)
            ]
        return [self.count(t) for t in texts]


def token_counter(tokenizer: Any | None) -> TokenCounter:
    """A counter for `tokenizer` (a HF tokenizer), or the chars/4 estimate for None.
    An object that already has `count` is returned as it is."""
    if tokenizer is None:
        return EstimateCounter()
    if isinstance(tokenizer, TokenCounter) and not hasattr(tokenizer, "encode"):
        return tokenizer
    return TokenizerCounter(tokenizer)


def count_batch(counter: TokenCounter, texts: Sequence[str]) -> list[int]:
    """`counter.count` over `texts`, batched when the counter can batch."""
    batch = getattr(counter, "count_batch", None)
    if batch is not None:
        return list(batch(texts))
    return [counter.count(t) for t in texts]


def token_spans(tokenizer: Any | None, texts: Sequence[str]) -> list[np.ndarray]:
    """For each text, the character offset where each of its tokens starts (int64,
    non-decreasing). One batched call for a fast tokenizer; with no offsets to be
    had (None, or a slow tokenizer) every 4th character starts a pseudo-token."""
    backend = getattr(tokenizer, "backend_tokenizer", None) if tokenizer is not None else None
    if backend is None:
        return [np.arange(0, len(t), CHARS_PER_TOKEN, dtype=np.int64) for t in texts]
    out: list[np.ndarray] = []
    for enc in backend.encode_batch(list(texts), add_special_tokens=False):
        starts = np.fromiter((s for s, _ in enc.offsets), dtype=np.int64, count=len(enc.offsets))
        # byte-level BPE may report several tokens of one character at the same offset
        out.append(np.maximum.accumulate(starts) if len(starts) else starts)
    return out
