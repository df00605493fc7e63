"""Shared-prefix decode attention: the same samples as per-row caches, prompts read once."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    GraniteConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    Olmo2Config,
    Qwen2Config,
    Qwen3Config,
)

from posttrain.engines import GenerationRequest, HFEngine, SamplingParams
from posttrain.engines import shared_prefix_attention as spa
from posttrain.engines.growing_cache import GrowingCache
from posttrain.engines.shared_prefix_attention import (
    SHARED_PREFIX_MIN_TOKENS,
    SharedPrefixCache,
    shared_prefix_attention,
    shared_prefix_decoding,
    supports_shared_prefix,
)
from tests.engines.scramble import scramble


def model_with(tokenizer: Any, kv_heads: int, make_config: Any = LlamaConfig) -> Any:
    """A small causal LM (a Llama unless `make_config` builds another architecture's
    config) with large random weights: outputs depend on the whole context."""
    config = make_config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        max_position_embeddings=512,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    scramble(model)
    return model


def prompts(tokenizer: Any) -> list[list[int]]:
    texts = ("12+345=" * 6, "the quick brown fox " * 3, "xyz" * 30)  # 42, 60, 90 tokens
    out = [list(tokenizer.encode(t, add_special_tokens=False)) for t in texts]
    assert min(len(p) for p in out) >= SHARED_PREFIX_MIN_TOKENS
    return out


def generate(model: Any, tokenizer: Any, shared: bool, n: int) -> list[Any]:
    """`n` samples of each prompt, with budgets of 20, 40 and 60 tokens: the batch is
    pruned when the first two prompts' rows are done."""
    engine = HFEngine(model, tokenizer, seed=3, shared_prefix=shared)
    budgets = [SamplingParams(max_tokens=m, temperature=1.0, n=n) for m in (20, 40, 60)]
    return engine.generate(
        [GenerationRequest(p, b) for p, b in zip(prompts(tokenizer), budgets, strict=True)]
    )


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_samples_equal_those_of_per_row_caches(
    tokenizer: Any, kv_heads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = model_with(tokenizer, kv_heads)
    calls = []
    original = spa.shared_prefix_attention

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setitem(spa.ALL_ATTENTION_FUNCTIONS._global_mapping, spa.IMPLEMENTATION, counting)
    shared = generate(model, tokenizer, True, 5)
    monkeypatch.undo()
    assert calls, "the shared-prefix path was not taken"
    plain = generate(model, tokenizer, False, 5)
    for mine, theirs in zip(shared, plain, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            assert a.token_ids == b.token_ids
            # float rounding only: large random weights make logits of size ~10
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    assert model.config._attn_implementation == "sdpa"  # restored after decoding


ARCHITECTURES = [
    (LlamaConfig, {}),
    (Qwen2Config, {}),
    (Qwen3Config, {}),
    (MistralConfig, {"sliding_window": None}),
    (Olmo2Config, {}),
    (GraniteConfig, {"attention_multiplier": 0.3}),  # a scaling other than 1/sqrt(d)
]


@pytest.mark.parametrize(
    ("config_class", "extra"), ARCHITECTURES, ids=lambda x: getattr(x, "model_type", "")
)
def test_decode_steps_match_sdpa_over_per_row_caches_through_pruning(
    tokenizer: Any, config_class: type, extra: dict[str, Any]
) -> None:
    """Three decode steps through the cascade against SDPA on per-row copies: all rows,
    then rows of both prompts with gaps (slots renumbered), then one prompt's rows only
    (the other prompt dropped)."""
    model = model_with(tokenizer, 2, lambda **kw: config_class(**kw, **extra))
    assert supports_shared_prefix(model)
    ids = torch.randint(0, 200, (2, 40), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(2, 40, dtype=torch.long)
    mask[1, :7] = 0  # a left-padded shorter prompt
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    owner = torch.tensor([0, 0, 0, 1, 1])
    feed = torch.randint(0, 200, (3, 5, 1), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        caches = []
        for _ in range(2):
            cache = GrowingCache()
            model(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache)
            caches.append(cache)
        shared, plain = SharedPrefixCache(caches[0], owner, mask), caches[1]
        plain.batch_select_indices(owner)
        rows = torch.arange(5)
        for step, keep in enumerate([None, torch.tensor([0, 2, 3]), torch.tensor([2])]):
            if keep is not None:
                shared.batch_select_indices(keep)
                plain.batch_select_indices(keep)
                rows = rows[keep]
            pos = (mask.sum(-1)[owner[rows]] + step)[:, None]
            columns = torch.ones(len(rows), step + 1, dtype=torch.long)
            rows_mask = torch.cat([mask[owner[rows]], columns], -1)
            tokens = feed[step, rows]
            with shared_prefix_decoding(model, shared):
                got = model(
                    input_ids=tokens, attention_mask=rows_mask, position_ids=pos, cache=shared
                )
            want = model(input_ids=tokens, attention_mask=rows_mask, position_ids=pos, cache=plain)
            assert torch.allclose(got.logits, want.logits, rtol=1e-5, atol=1e-4), step
            assert shared.get_seq_length() == plain.get_seq_length() == 41 + step
    assert shared.prefix_bias.shape[0] == 1  # prompt 0 has no rows left: dropped
    for row in range(len(rows)):  # a row's whole K/V, as a per-row cache holds it
        for (k, v), layer in zip(shared.row_kv(row), plain.layers, strict=True):
            assert torch.allclose(k, layer.keys[row], rtol=1e-5, atol=1e-5)
            assert torch.allclose(v, layer.values[row], rtol=1e-5, atol=1e-5)


def test_pruned_rows_keep_their_prompt(tokenizer: Any) -> None:
    cache = SharedPrefixCache(
        GrowingCache(ddp_cache_data=[(torch.zeros(3, 1, 4, 2), torch.zeros(3, 1, 4, 2))]),
        torch.tensor([0, 0, 1, 2, 2, 2]),
        torch.ones(3, 4, dtype=torch.long),
    )
    assert cache.width == 3 and cache.slot.tolist() == [0, 1, 0, 0, 1, 2]
    cache.batch_select_indices(torch.tensor([1, 3, 5]))  # prompt 1 loses its only row
    assert cache.owner.tolist() == [0, 1, 1] and cache.slot.tolist() == [0, 0, 1]
    assert cache.width == 2 and cache.prefix_keys[0].shape[0] == 2


def test_the_prefill_cache_is_freed_once_the_rows_read_in_place(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt's K/V lives once while decoding: the prefill's buffers (with their
    spare room) are gone once `SharedPrefixCache` holds its compact copy."""
    model = model_with(tokenizer, 4)
    prefills: list[weakref.ref[Any]] = []
    alive_at_decode: list[bool] = []
    init = SharedPrefixCache.__init__

    def recording(self: SharedPrefixCache, prefill: Any, *args: Any) -> None:
        prefills.append(weakref.ref(prefill.layers[0]._key_buffer))
        init(self, prefill, *args)

    original = spa.shared_prefix_attention

    def checking(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive_at_decode.append(prefills[-1]() is not None)
        return original(*args, **kwargs)

    monkeypatch.setattr(SharedPrefixCache, "__init__", recording)
    monkeypatch.setitem(spa.ALL_ATTENTION_FUNCTIONS._global_mapping, spa.IMPLEMENTATION, checking)
    engine = HFEngine(model, tokenizer, seed=0, prefix_cache=False)
    engine.generate([GenerationRequest(prompts(tokenizer)[0], SamplingParams(max_tokens=3, n=2))])
    assert alive_at_decode and not any(alive_at_decode)


def test_short_prompts_and_single_samples_take_the_plain_path(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = model_with(tokenizer, 4)
    engine = HFEngine(model, tokenizer, seed=0)
    seen: list[type] = []
    short = [list(tokenizer.encode("12+3", add_special_tokens=False))]
    long = prompts(tokenizer)[:1]
    init = SharedPrefixCache.__init__

    def recording(self: SharedPrefixCache, *args: Any) -> None:
        seen.append(type(self))
        init(self, *args)

    monkeypatch.setattr(SharedPrefixCache, "__init__", recording)
    engine.generate([GenerationRequest(short[0], SamplingParams(max_tokens=4, n=4))])
    engine.generate([GenerationRequest(long[0], SamplingParams(max_tokens=4, n=1))])
    assert seen == []
    engine.generate([GenerationRequest(long[0], SamplingParams(max_tokens=4, n=2))])
    assert seen == [SharedPrefixCache]
    seen.clear()
    plain_cache = HFEngine(model, tokenizer, seed=0, growing_cache=False)
    plain_cache.generate([GenerationRequest(long[0], SamplingParams(max_tokens=4, n=2))])
    assert seen == []  # the shared path appends in place: GrowingCache only


def test_kept_caches_of_an_episode_match_the_plain_path(tokenizer: Any) -> None:
    """The prefix cache keeps each sample's K/V for its episode's next turn: the same
    tensors whether the rows read their prompt in place or from a copy."""
    model = model_with(tokenizer, 2)
    params = SamplingParams(max_tokens=30, temperature=1.0, n=3)
    kept = []
    for shared in (True, False):
        engine = HFEngine(model, tokenizer, seed=5, shared_prefix=shared)
        request = GenerationRequest(prompts(tokenizer)[0], params, episode="ep")
        engine.generate([request])
        assert engine.prefix_cache is not None
        kept.append(dict(engine.prefix_cache._entries))
    assert sorted(kept[0]) == sorted(kept[1]) == ["ep/0", "ep/1", "ep/2"]
    for key in kept[0]:
        a, b = kept[0][key], kept[1][key]
        assert a.ids == b.ids
        for (ka, va), (kb, vb) in zip(a.kv, b.kv, strict=True):
            assert torch.allclose(ka, kb, rtol=1e-5, atol=1e-5)
            assert torch.allclose(va, vb, rtol=1e-5, atol=1e-5)


def test_generation_abandoned_mid_way_restores_the_attention_implementation(
    tokenizer: Any,
) -> None:
    model = model_with(tokenizer, 4)
    engine = HFEngine(model, tokenizer, seed=0)

    def stop(request: int, sample: int, token: int, logprob: float) -> None:
        if sample == 1:
            raise KeyboardInterrupt

    request = GenerationRequest(prompts(tokenizer)[0], SamplingParams(max_tokens=10, n=2))
    with pytest.raises(KeyboardInterrupt):
        engine.generate([request], on_token=stop)
    assert model.config._attn_implementation == "sdpa"


def test_supported_models() -> None:
    small = {"hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1}
    assert supports_shared_prefix(LlamaForCausalLM(LlamaConfig(**small, vocab_size=16)))
    qwen = Qwen2Config(**small, vocab_size=16)
    assert supports_shared_prefix(_Stub(qwen))  # Qwen2 without its sliding window
    assert not supports_shared_prefix(_Stub(Qwen2Config(**small, use_sliding_window=True)))
    assert not supports_shared_prefix(_Stub(MistralConfig(**small, sliding_window=4)))
    assert supports_shared_prefix(_Stub(MistralConfig(**small, sliding_window=None)))
    gpt2 = LlamaConfig(**small)
    gpt2.model_type = "gpt2"
    assert not supports_shared_prefix(_Stub(gpt2))


class _Stub:
    def __init__(self, config: Any) -> None:
        self.config = config


def test_the_attention_refuses_to_run_outside_decoding(tokenizer: Any) -> None:
    attention = model_with(tokenizer, 4).model.layers[0].self_attn
    q = torch.zeros(2, 4, 1, 8)
    with pytest.raises(RuntimeError, match="shared_prefix_decoding"):
        shared_prefix_attention(attention, q, q, q, None)


def test_the_attention_refuses_more_than_one_query_token(tokenizer: Any) -> None:
    model = model_with(tokenizer, 4)
    attention = model.model.layers[0].self_attn
    q = torch.zeros(2, 4, 1, 8)
    cache = SharedPrefixCache(
        GrowingCache(ddp_cache_data=[(torch.zeros(1, 4, 3, 8), torch.zeros(1, 4, 3, 8))] * 2),
        torch.tensor([0, 0]),
        torch.ones(1, 3, dtype=torch.long),
    )
    with shared_prefix_decoding(model, cache), pytest.raises(ValueError, match="one token"):
        shared_prefix_attention(attention, torch.zeros(2, 4, 2, 8), q, q, None)


def test_a_prefill_and_mask_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="prompt mask"):
        SharedPrefixCache(
            GrowingCache(ddp_cache_data=[(torch.zeros(1, 4, 3, 8), torch.zeros(1, 4, 3, 8))]),
            torch.tensor([0]),
            torch.ones(1, 5, dtype=torch.long),
        )
