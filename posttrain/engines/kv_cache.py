"""KV-cache memory accounting for transformers caches (`DynamicCache`, `QuantizedCache`).

`cache_bytes(cache)` counts the bytes a cache's layers actually hold, from their
tensors: for a `DynamicCache` the key and value tensors of every layer; for a
`QuantizedCache` the quantized storage (fp8 data and scales, optimum-quanto's packed
int data with scales and shifts, HQQ's data and metadata tensors) plus the
full-precision residual that has not been quantized yet. `analytic_kv_bytes` is the
textbook figure, 2 × layers × kv_heads × head_dim × tokens × bytes per element, which
an unquantized `DynamicCache` matches exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch


def cache_bytes(cache: Any) -> int:
    """Bytes held by the tensors of every layer of `cache` (a transformers `Cache`).

    Walks each layer's attributes, and tuples, lists and dicts inside them (fp8 keeps
    `(data, scale)`, HQQ `(data, meta)`); tensor subclasses such as optimum-quanto's
    `QTensor`s are opened with `__tensor_flatten__` down to their plain inner tensors.
    Each storage is counted once, at its full size, so a view into a larger buffer
    counts the whole buffer it keeps alive. Empty placeholders count zero.
    """
    seen: set[tuple[int, int]] = set()
    total = 0
    for layer in cache.layers:
        for tensor in _plain_tensors(vars(layer)):
            storage = tensor.untyped_storage()
            key = (storage.data_ptr(), storage.nbytes())
            if storage.nbytes() == 0 or key in seen:
                continue
            seen.add(key)
            total += storage.nbytes()
    return total


def _plain_tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        flatten = getattr(value, "__tensor_flatten__", None)
        if flatten is None:
            yield value
            return
        names, _ = flatten()
        for name in names:
            yield from _plain_tensors(getattr(value, name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _plain_tensors(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _plain_tensors(item)


def analytic_kv_bytes(config: Any, tokens: int, batch: int = 1, element_bytes: int = 4) -> int:
    """2 × layers × kv_heads × head_dim × tokens × batch × `element_bytes` (4: float32)."""
    config = config.get_text_config(decoder=True)
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return 2 * config.num_hidden_layers * kv_heads * head_dim * tokens * batch * element_bytes
