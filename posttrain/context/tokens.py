"""Token counting for long-context work: the model's own tokenizer, or a quick estimate.

    counter = token_counter(tokenizer)   # any HF tokenizer; None for the estimate
    counter.count("some text")           # tokens, no special tokens
    counter.count_batch(["a", "b"])      # the same, one batched call
    spans = token_spans(tokenizer, texts)  # per text: the character start of each token

Chunking and context assembly count with the same counter, so a budget stated in
the model's tokens is met in the model's tokens.

A tokenizer is a HF fast tokenizer (its Rust backend counts, without the truncation
or padding it may have switched on), or any object with `encode(text,
add_special_tokens=False)` returning the ids; an object with `count(text)` is a counter
already. Anything else is refused with a TypeError naming it.

Not guaranteed: with `tokenizer=None` the count is an estimate (characters / 4,
rounded up), not any model's count. Counting a text in pieces can differ by a token or two from counting
the whole, because BPE merges across the seams; callers that need a hard bound
re-count the final text.
"""

from __future__ import annotations

import copy
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
    backend of a fast tokenizer directly (batched, no Python per token), never with
    the truncation or padding it may have on (see `plain_backend`)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._backend = getattr(tokenizer, "backend_tokenizer", None)
        self._plain: Any = None  # the backend's copy without truncation and padding

    def _encoder(self) -> Any:
        backend = self._backend
        if backend is None or _plain(backend):  # checked per call: a later call may set them
            return backend
        if self._plain is None:
            self._plain = plain_backend(self.tokenizer)
        return self._plain

    def count(self, text: str) -> int:
        backend = self._encoder()
        if backend is not None:
            return len(backend.encode(text, add_special_tokens=False).ids)
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        backend = self._encoder()
        if backend is not None:
            return [len(e.ids) for e in backend.encode_batch(list(texts), add_special_tokens=False)]
        return [self.count(t) for t in texts]


def plain_backend(tokenizer: Any) -> Any | None:
    """The Rust backend of a fast tokenizer (None for any other), without truncation or
    padding. A backend keeps both from its `tokenizer.json` (some ship a 128-token
    truncation) or from the last `tokenizer(..., truncation=True, padding=...)` call,
    which would cap or pad every count; such a backend is copied (~0.1 s for a 49k
    vocabulary) and the copy's are switched off, the tokenizer's own are left alone."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or _plain(backend):
        return backend
    plain = copy.deepcopy(backend)
    plain.no_truncation()
    plain.no_padding()
    return plain


def _plain(backend: Any) -> bool:
    return backend.truncation is None and backend.padding is None


def token_counter(tokenizer: Any | None) -> TokenCounter:
    """A counter for `tokenizer` (a HF tokenizer), or the chars/4 estimate for None.
    An object that already has `count` is returned as it is."""
    if tokenizer is None:
        return EstimateCounter()
    if isinstance(tokenizer, TokenCounter) and not hasattr(tokenizer, "encode"):
        return tokenizer
    if not callable(getattr(tokenizer, "encode", None)):
        raise TypeError(
            f"cannot count tokens with a {type(tokenizer).__name__}: pass a Hugging Face "
            "tokenizer, an object with encode(text, add_special_tokens=False), one with "
            "count(text), or None for the characters / 4 estimate"
        )
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
    backend = plain_backend(tokenizer) if tokenizer is not None else None
    if backend is None:
        return [np.arange(0, len(t), CHARS_PER_TOKEN, dtype=np.int64) for t in texts]
    out: list[np.ndarray] = []
    for enc in backend.encode_batch(list(texts), add_special_tokens=False):
        starts = np.fromiter((s for s, _ in enc.offsets), dtype=np.int64, count=len(enc.offsets))
        # byte-level BPE may report several tokens of one character at the same offset
        out.append(np.maximum.accumulate(starts) if len(starts) else starts)
    return out
