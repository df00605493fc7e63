"""GrowingCache: the same attention inputs as a DynamicCache, appended in place."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import DynamicCache

from posttrain.engines import GenerationRequest, HFEngine, SamplingParams
from posttrain.engines.growing_cache import GrowingCache, GrowingLayer
from posttrain.engines.kv_cache import cache_bytes
from tests.engines.scramble import scramble


def kv(batch: int, tokens: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 2, tokens, 4, generator=g), torch.randn(
        batch, 2, tokens, 4, generator=g
    )


def test_appends_match_concatenation_through_selects_crops_and_repeats() -> None:
    ours, theirs = GrowingCache(), DynamicCache()
    for step in range(150):
        if step == 40:
            for cache in (ours, theirs):
                cache.batch_select_indices(torch.tensor([0, 2]))
        if step == 80:
            for cache in (ours, theirs):
                cache.crop(-5)
        if step == 100:
            for cache in (ours, theirs):
                cache.batch_repeat_interleave(2)
        batch = 3 if step < 40 else 2 if step < 100 else 4
        keys, values = kv(batch, 7 if step == 0 else 1, seed=step)
        got = ours.update(keys, values, 0)
        want = theirs.update(keys, values, 0)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), step
    assert ours.get_seq_length() == theirs.get_seq_length() == 150 + 6 - 5


def test_decode_steps_write_into_one_buffer_reallocated_a_few_times() -> None:
    layer = GrowingLayer()
    keys, values = kv(2, 10, seed=0)
    layer.update(keys, values)
    buffers = {layer.keys.data_ptr()}
    for step in range(1000):
        layer.update(*kv(2, 1, seed=step + 1))
        buffers.add(layer.keys.data_ptr())
        assert layer.keys.data_ptr() == layer._key_buffer.data_ptr()  # a view, not a copy
    assert layer.get_seq_length() == 1010
    assert len(buffers) <= 8  # 10 → 74 → 138 → 207 → 311 → 467 → 701 → 1052 tokens of room
    spare = layer._key_buffer.shape[-2] - 1010
    assert 0 <= spare <= GrowingLayer.max_room


def test_cache_bytes_counts_the_spare_room() -> None:
    cache = GrowingCache()
    keys, values = kv(1, 10, seed=0)
    cache.update(keys, values, 0)
    room = cache.layers[0]._key_buffer.shape[-2]
    assert room > 10
    assert cache_bytes(cache) == 2 * 1 * 2 * room * 4 * 4


def test_ddp_cache_data_fills_the_layers() -> None:
    data = [kv(2, 5, seed=i) for i in range(3)]
    cache = GrowingCache(ddp_cache_data=data)
    assert len(cache.layers) == 3 and cache.get_seq_length() == 5
    for layer, (keys, values) in zip(cache.layers, data, strict=True):
        assert torch.equal(layer.keys, keys) and torch.equal(layer.values, values)


@pytest.mark.parametrize("n", [1, 4])
def test_the_engine_samples_the_same_tokens_with_either_cache(
    tiny_model: Any, tokenizer: Any, n: int
) -> None:
    scramble(tiny_model)
    prompts = [
        list(tokenizer.encode(t, add_special_tokens=False)) for t in ("12+345", "a", "xyz" * 30)
    ]
    params = SamplingParams(max_tokens=120, temperature=1.0, n=n)
    outs = []
    for growing in (True, False):
        engine = HFEngine(tiny_model, tokenizer, seed=3, growing_cache=growing, shared_prefix=False)
        outs.append(engine.generate([GenerationRequest(p, params) for p in prompts]))
    for mine, theirs in zip(*outs, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            assert a.token_ids == b.token_ids
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
