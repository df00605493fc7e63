"""cache_bytes: a DynamicCache holds exactly the analytic figure; an fp8 cache holds less."""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache, QuantizedCache

from posttrain.engines.kv_cache import analytic_kv_bytes, cache_bytes
from posttrain.models.tiny import TinyModelSpec, build_tiny_model

PROMPT = 40
NEW = 6


def run(model: Any, cache: Any) -> Any:
    ids = torch.arange(PROMPT)[None, :] % 200 + 10
    with torch.inference_mode():
        model.generate(
            ids,
            cache=cache,
            max_new_tokens=NEW,
            min_new_tokens=NEW,
            do_sample=False,
            pad_token_id=0,
        )
    return cache


def test_dynamic_cache_bytes_equal_analytic_and_fp8_is_smaller(tokenizer: Any) -> None:
    spec = TinyModelSpec(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128)
    model = build_tiny_model(tokenizer, seed=0, spec=spec).eval()
    tokens = PROMPT + NEW - 1  # the last generated token is never fed back

    full = run(model, DynamicCache())
    assert full.get_seq_length() == tokens
    expected = analytic_kv_bytes(model.config, tokens)
    assert expected == 2 * 2 * 2 * 32 * tokens * 4
    assert cache_bytes(full) == expected

    fp8 = run(model, QuantizedCache(backend="fp8", config=model.config))
    assert fp8.get_seq_length() == tokens
    # one byte per element, plus one float32 scale per key and value tensor of each layer
    assert cache_bytes(fp8) == expected // 4 + 2 * 2 * 4
    assert cache_bytes(fp8) < cache_bytes(full)


def test_cache_bytes_counts_shared_storage_once() -> None:
    cache = DynamicCache()
    states = torch.zeros(1, 2, 5, 8)
    cache.update(states, states, 0)  # keys and values are separate copies (torch.cat)
    assert cache_bytes(cache) == 2 * states.numel() * 4
    layer: Any = cache.layers[0]
    layer.values = layer.keys[..., :3, :]  # a view into the keys' storage adds nothing
    assert cache_bytes(cache) == states.numel() * 4
