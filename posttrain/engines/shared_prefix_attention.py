"""Decode attention that reads a shared prompt's K/V once per prompt, not once per sample.

`HFEngine` samples `n` completions of a prompt from one prefill. Copying the prompt's
K/V to each of the `n` rows (`DynamicCache.batch_select_indices`) makes every decode
step of every row read the whole prompt again: with a 400-token document and 8
samples of 50 tokens, 89% of the K/V a step reads is the same prompt, 8 times. On a
CPU decode attention is bound by those reads (`docs/benchmarks.md`).

`SharedPrefixCache` keeps the prefill's K/V per prompt (`prefix`, [P, H_kv, Lp, D])
and only the sampled tokens per row (a `GrowingCache`, [R, H_kv, T, D]);
`shared_prefix_attention` computes one softmax over both parts: scores of a row's
query against its prompt's keys (one matmul per prompt, its rows stacked), then
against the row's own keys. This is the idea of Hydragen (Juravsky et al. 2024) and
FlashInfer's cascade attention, here as plain PyTorch for a transformers model:

    cache = SharedPrefixCache(prefill_cache, owner, prompt_mask)   # owner: row -> prompt
    with shared_prefix_decoding(model, cache):
        logits = model(input_ids=next_tokens, position_ids=pos, cache=cache).logits

Inside the block the model's attention layers call `shared_prefix_attention` (the
config's attention implementation is switched for the block and restored after);
it handles one query token per row (decoding), grouped-query attention and left-padded
prompts. `supports_shared_prefix(model)` says which models it is exact for: those whose
attention is plain scaled dot-product over all positions (Llama, Qwen2, Mistral and
their kin without sliding windows or soft-capping).

Not guaranteed: bit-identical results to SDPA (the sums are ordered differently; the
difference is float rounding, 1e-6 to 1e-5 in fp32 logits), any speed-up for short
prompts (the per-prompt matmuls cost a few small ops per layer; `HFEngine` uses this
path only from `SHARED_PREFIX_MIN_TOKENS` prompt tokens), or other threads running the
same model object during a `shared_prefix_decoding` block: the block switches the
model's (shared) config, so they would be routed here too. `HFEngine` callers that run
one model from several threads (the scheduler's engine thread, the server) serialize
generation; concurrent samplers use their own model copies.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch
from transformers import PreTrainedModel
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from posttrain.engines.growing_cache import GrowingCache

IMPLEMENTATION = "posttrain_shared_prefix"
SHARED_PREFIX_MIN_TOKENS = 32  # below this prompt width the plain path is as fast (bench)
_SUPPORTED_TYPES = {"llama", "qwen2", "mistral", "qwen3", "olmo2", "granite"}

_ACTIVE: ContextVar[SharedPrefixCache | None] = ContextVar("shared_prefix_cache", default=None)


class SharedPrefixCache(GrowingCache):
    """The prompts' K/V once each, and each row's sampled tokens (see the module
    docstring). `owner[r]` is the prompt of row `r`; `prompt_mask` [P, Lp] marks the
    prompts' real (non-pad) positions."""

    def __init__(self, prefill: Any, owner: torch.Tensor, prompt_mask: torch.Tensor) -> None:
        super().__init__()
        # [P, H_kv, Lp, D] each; contiguous: a GrowingCache's views would keep its spare room
        self.prefix_keys = [layer.keys.contiguous() for layer in prefill.layers]
        self.prefix_values = [layer.values.contiguous() for layer in prefill.layers]
        self.prefix_len = int(prompt_mask.shape[-1])
        if any(k.shape[-2] != self.prefix_len for k in self.prefix_keys):
            raise ValueError("the prefill cache's length differs from the prompt mask's")
        bias = torch.zeros(
            prompt_mask.shape, dtype=self.prefix_keys[0].dtype, device=prompt_mask.device
        )
        self.prefix_bias = bias.masked_fill(prompt_mask == 0, float("-inf"))  # [P, Lp]
        self._layout(owner)

    def _layout(self, owner: torch.Tensor) -> None:
        """Row r's place in the padded per-prompt layout: (owner[r], slot[r])."""
        prompts = self.prefix_bias.shape[0]
        self.owner = owner
        counts = torch.bincount(owner, minlength=prompts)
        starts = torch.cumsum(counts, 0) - counts
        order = torch.argsort(owner, stable=True)
        slot = torch.empty_like(owner)
        slot[order] = torch.arange(len(owner), device=owner.device) - starts[owner[order]]
        self.slot = slot
        self.width = int(counts.max()) if len(owner) else 0
        self.row_bias = self.prefix_bias[owner][:, None, :]  # [R, 1, Lp]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.prefix_len + super().get_seq_length(layer_idx)

    def row_kv(self, row: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Batch row `row`'s keys and values per layer over its whole sequence, prompt
        columns then its own: [H_kv, Lp + T, D] each (what a per-row cache would hold)."""
        prompt = int(self.owner[row])
        out = []
        for i, (pk, pv) in enumerate(zip(self.prefix_keys, self.prefix_values, strict=True)):
            layer = self.layers[i] if i < len(self.layers) else None
            keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
            if keys is not None and values is not None:
                own_k, own_v = keys[row], values[row]
                out.append((torch.cat([pk[prompt], own_k], -2), torch.cat([pv[prompt], own_v], -2)))
            else:  # nothing decoded yet
                out.append((pk[prompt], pv[prompt]))
        return out

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep the rows `indices`; prompts left without rows are dropped."""
        super().batch_select_indices(indices)
        owner = self.owner[indices]
        alive = torch.unique(owner)  # sorted
        if len(alive) < self.prefix_bias.shape[0]:
            self.prefix_keys = [k[alive] for k in self.prefix_keys]
            self.prefix_values = [v[alive] for v in self.prefix_values]
            self.prefix_bias = self.prefix_bias[alive]
            owner = torch.searchsorted(alive, owner)
        self._layout(owner)


def supports_shared_prefix(model: PreTrainedModel) -> bool:
    """Whether `shared_prefix_attention` computes exactly what `model`'s own attention
    does: full (not sliding-window) dot-product attention without soft-capping."""
    config = model.config
    if getattr(config, "model_type", None) not in _SUPPORTED_TYPES:
        return False
    sliding = getattr(config, "sliding_window", None)
    uses_sliding = getattr(config, "use_sliding_window", sliding is not None)
    layer_types = set(getattr(config, "layer_types", None) or ["full_attention"])
    return not (sliding and uses_sliding) and layer_types == {"full_attention"}


@contextmanager
def shared_prefix_decoding(model: PreTrainedModel, cache: SharedPrefixCache) -> Iterator[None]:
    """Route `model`'s attention through `shared_prefix_attention` over `cache`."""
    config = model.config
    before = config._attn_implementation
    token = _ACTIVE.set(cache)
    config._attn_implementation = IMPLEMENTATION
    try:
        yield
    finally:
        config._attn_implementation = before
        _ACTIVE.reset(token)


def shared_prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention of one query per row over its prompt's K/V and its own (`key`, `value`:
    the rows' sampled tokens, from `SharedPrefixCache.update`). Returns [R, 1, H, D]."""
    cache = _ACTIVE.get()
    if cache is None:
        raise RuntimeError("shared_prefix_attention runs only inside shared_prefix_decoding()")
    rows, heads, q_len, dim = query.shape  # [R, H, 1, D]
    if q_len != 1:
        raise ValueError(f"shared_prefix_attention decodes one token per row, got {q_len}")
    layer = int(module.layer_idx)  # type: ignore[arg-type]
    pk, pv = cache.prefix_keys[layer], cache.prefix_values[layer]  # [P, H_kv, Lp, D]
    prompts, kv_heads, width = pk.shape[0], pk.shape[1], cache.width
    group = heads // kv_heads
    scale = dim**-0.5 if scaling is None else scaling
    owner, slot = cache.owner, cache.slot
    q = query[:, :, 0, :]  # [R, H, D]

    def stack(per_row: torch.Tensor) -> torch.Tensor:
        """[R, H, X] -> [P, H_kv, width * group, X]: each prompt's rows, heads grouped."""
        out = per_row.new_zeros(prompts, width, heads, per_row.shape[-1])
        out[owner, slot] = per_row
        return (
            out.view(prompts, width, kv_heads, group, -1)
            .permute(0, 2, 1, 3, 4)
            .reshape(prompts, kv_heads, width * group, -1)
        )

    def unstack(per_prompt: torch.Tensor) -> torch.Tensor:
        """The inverse of `stack`: [P, H_kv, width * group, X] -> [R, H, X]."""
        x = per_prompt.view(prompts, kv_heads, width, group, -1).permute(0, 2, 1, 3, 4)
        return x.reshape(prompts, width, heads, -1)[owner, slot]

    prefix_scores = unstack(torch.matmul(stack(q), pk.transpose(-1, -2)))  # [R, H, Lp]
    own_scores = torch.matmul(q.view(rows, kv_heads, group, dim), key.transpose(-1, -2))
    scores = torch.cat(
        [prefix_scores * scale + cache.row_bias, own_scores.view(rows, heads, -1) * scale], dim=-1
    )
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)  # [R, H, Lp + T]
    lp = cache.prefix_len
    out = unstack(torch.matmul(stack(probs[..., :lp]), pv))  # [R, H, D]
    own = torch.matmul(probs[..., lp:].reshape(rows, kv_heads, group, -1), value)
    return (out + own.view(rows, heads, dim))[:, None], None


ALL_ATTENTION_FUNCTIONS.register(IMPLEMENTATION, shared_prefix_attention)
