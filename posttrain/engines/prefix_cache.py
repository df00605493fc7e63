"""Multi-turn prefix KV-cache reuse for `HFEngine`: keep each episode's cache between turns.

In a multi-turn episode, turn k's prompt is turn k-1's prompt + its sampled tokens +
the environment's tokens: a strict extension. After a request's generation the
engine keeps that row's KV (prompt + sampled tokens, padding trimmed, per layer,
on CPU) in a `PrefixCache` under the request's `GenerationRequest.episode`; the
next request with the same `episode` prefills only what follows the longest start
it shares with the kept ids (all of them when it extends them). Requests without
`episode` never reuse.

    engine = HFEngine(model, tok, prefix_cache=True, prefix_cache_tokens=65_536)
    engine.generate([GenerationRequest(ids, params, episode="ep-1")])   # full prefill
    engine.generate([GenerationRequest(ids + sampled + env, params, episode="ep-1")])  # suffix only
    engine.release(["ep-1"])          # the episode ended: drop its entry
    engine.prefix_cache.stats         # hits, misses, reused / prefilled tokens, evictions

A request with `n > 1` samples keeps sample s under `sample_episode(episode, s, n)`
(`f"{episode}/{s}"`; with n == 1 the key is `episode` itself), so the episodes
that branch from one shared first turn continue under their own keys.

`build_prefill` lays a batch out as [pad | cached | pad | suffix] per row: each
row's cached K/V left-padded to the longest cached length, each suffix left-padded
to the longest suffix, mask 0 on both paddings, position ids the real positions.
Attention is causal by column and masked by the 2D mask, so holes are harmless.
Memory is bounded by an LRU over tokens held (`max_tokens`; a token costs
2 × layers × kv_heads × head_dim × 4 bytes in float32: 45 KiB for SmolLM2-135M).

Not guaranteed: bitwise-equal logits with a full re-encoding (the reused K/V were
computed in another batch layout; they agree to float rounding). Only caches whose
layers are all plain `DynamicLayer`s are kept. The weights are fingerprinted by
the parameters' identities and in-place version counters: a change made through
`.data` or a tensor shared outside `model.parameters()` goes unseen; call `clear()`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from posttrain.engines.growing_cache import GrowingCache, GrowingLayer
from posttrain.engines.shared_prefix_attention import SharedPrefixCache

KV = list[tuple[torch.Tensor, torch.Tensor]]  # per layer (keys, values), each [H, T, D]
# Layers whose `keys` / `values` are the plain K/V (not quantized, not a sliding window).
_PLAIN_LAYERS = (DynamicLayer, GrowingLayer)


def common_prefix(a: list[int], b: list[int]) -> int:
    """The length of the longest common start of `a` and `b`."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the usual case, at C speed
        return n
    return next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)


def sample_episode(episode: str, sample: int, n: int) -> str:
    """The cache key under which sample `sample` of a request with `n` samples is kept."""
    return episode if n == 1 else f"{episode}/{sample}"


@dataclass
class PrefixCacheStats:
    hits: int = 0  # requests with an episode whose kept ids share a start with the prompt
    partial_hits: int = 0  # hits whose prompt diverged from the kept ids before either ended
    misses: int = 0  # requests with an episode prefilled in full (none kept, mismatch, evicted)
    reused_tokens: int = 0  # prompt tokens taken from the cache instead of the model
    prefilled_tokens: int = 0  # prompt tokens run through the model (every request)
    evictions: int = 0  # entries dropped to stay under the token bound
    invalidations: int = 0  # times every entry was dropped because the weights changed
    held_tokens: int = 0  # tokens held now


@dataclass
class _Entry:
    ids: list[int]
    kv: KV


class PrefixCache:
    """Per-episode KV entries, least recently used evicted first past `max_tokens`."""

    def __init__(self, max_tokens: int) -> None:
        if max_tokens < 1:
            raise ValueError(f"prefix cache max_tokens must be >= 1, got {max_tokens}")
        self.max_tokens = max_tokens
        self.stats = PrefixCacheStats()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._weights: tuple[tuple[int, int], ...] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, episode: object) -> bool:
        return episode in self._entries

    def check_weights(self, model: torch.nn.Module) -> None:
        """Drop every entry when `model`'s parameters changed since the last call
        (an optimizer step or `load_state_dict` bumps their version counters)."""
        fingerprint = tuple((id(p), p._version) for p in model.parameters())
        if self._weights is not None and fingerprint != self._weights and self._entries:
            self.stats.invalidations += 1
            self.clear()
        self._weights = fingerprint

    def take(self, episode: str | None, prompt: list[int]) -> KV | None:
        """The K/V kept under `episode` for the first tokens of `prompt`, or None (a miss).

        The K/V of the kept ids' longest common prefix with `prompt` are reused (a
        causal model's K/V at a position depend on the tokens up to it only): all of
        them when the prompt extends the kept ids, the agreeing start when it diverges
        (a partial hit: e.g. the last turn's text re-tokenized differently from the
        sampled ids). The entry is removed: the request's own generation replaces it.
        At least one prompt token is always left to prefill, since its logits start
        the sampling."""
        if episode is None:
            return None
        entry = self._entries.pop(episode, None)
        if entry is not None:
            self.stats.held_tokens -= len(entry.ids)
        usable = min(common_prefix(entry.ids, prompt), len(prompt) - 1) if entry is not None else 0
        if entry is None or usable < 1:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        if usable < min(len(entry.ids), len(prompt) - 1):
            self.stats.partial_hits += 1
        return [(k[:, :usable], v[:, :usable]) for k, v in entry.kv]

    def put(self, episode: str, ids: list[int], kv: KV) -> None:
        """Keep `kv` (covering `ids`) under `episode`, evicting the oldest entries to fit."""
        self.release([episode])
        if len(ids) > self.max_tokens:
            self.stats.evictions += 1
            return
        while self._entries and self.stats.held_tokens + len(ids) > self.max_tokens:
            _, old = self._entries.popitem(last=False)
            self.stats.held_tokens -= len(old.ids)
            self.stats.evictions += 1
        self._entries[episode] = _Entry(list(ids), kv)
        self.stats.held_tokens += len(ids)

    def release(self, episodes: Iterable[str]) -> None:
        """Drop the entries of `episodes` (unknown keys are ignored)."""
        for episode in [episodes] if isinstance(episodes, str) else episodes:
            entry = self._entries.pop(episode, None)
            if entry is not None:
                self.stats.held_tokens -= len(entry.ids)

    def clear(self) -> None:
        self._entries.clear()
        self.stats.held_tokens = 0

    def keep_rows(
        self,
        cache: DynamicCache,
        mask: torch.Tensor,
        slots: list[int],
        keys: list[str | None],
        ids: list[list[int]],
    ) -> None:
        """Copy batch slot `slots[j]`'s first `len(ids[j])` real tokens of `cache` to
        CPU under `keys[j]` (None: not kept). `mask` [A, T] marks the real columns."""
        wanted = [j for j, key in enumerate(keys) if key is not None]
        row_kv = _row_kv(cache) if wanted else None
        if row_kv is None:
            return
        if mask.shape[-1] != cache.get_seq_length():
            raise ValueError(
                f"mask covers {mask.shape[-1]} columns but the cache holds {cache.get_seq_length()}"
            )
        for j in wanted:
            key, slot, count = keys[j], slots[j], len(ids[j])
            assert key is not None
            columns = mask[slot].nonzero().squeeze(-1)[:count]  # [count]
            if len(columns) != count:
                raise ValueError(f"slot {slot} holds {len(columns)} real tokens, not {count}")
            tensors = row_kv(slot)
            columns = columns.to(tensors[0][0].device)
            kv = [
                (k[:, columns].cpu(), v[:, columns].cpu()) for k, v in tensors
            ]  # indexing copies: an entry never keeps the whole batch's tensors alive
            self.put(key, ids[j], kv)


def _row_kv(cache: DynamicCache) -> Callable[[int], list[tuple[torch.Tensor, torch.Tensor]]] | None:
    """A function from batch slot to that row's per-layer (keys, values) [H, T, D], or
    None when `cache` cannot give them (a layer type of its own, a layer never written)."""
    if isinstance(cache, SharedPrefixCache):
        return cache.row_kv
    if not all(type(layer) in _PLAIN_LAYERS for layer in cache.layers):
        return None
    layers = [(getattr(la, "keys", None), getattr(la, "values", None)) for la in cache.layers]
    tensors = [(k, v) for k, v in layers if isinstance(k, torch.Tensor) and v is not None]
    if len(tensors) != len(layers):  # a layer never written (KV sharing): nothing to keep
        return None
    return lambda slot: [(k[slot], v[slot]) for k, v in tensors]


@dataclass
class Prefill:
    """One batch's prefill inputs: run `ids` on top of `cache`."""

    ids: torch.Tensor  # [P, S] suffix ids, left-padded
    mask: torch.Tensor  # [P, C + S] 1 on real tokens, cached and suffix
    positions: torch.Tensor  # [P, S] real positions of the suffix tokens
    cache: DynamicCache  # [P, H, C, D] per layer, cached K/V left-padded; empty when C == 0
    prefilled_tokens: int
    reused_tokens: int


def build_prefill(
    prompts: list[list[int]],
    reused: list[KV | None],
    pad_id: int,
    device: torch.device,
    cache_class: type[DynamicCache] = GrowingCache,
) -> Prefill:
    """Batch `prompts` whose first tokens' K/V are `reused[i]` (None: prefill it all),
    in a fresh `cache_class` (`GrowingCache` appends decode steps in place)."""
    if len(prompts) != len(reused):
        raise ValueError(f"{len(prompts)} prompts but {len(reused)} reused entries")
    cached = [kv[0][0].shape[1] if kv else 0 for kv in reused]
    suffixes = [p[c:] for p, c in zip(prompts, cached, strict=True)]
    if any(not s for s in suffixes):
        raise ValueError("every prompt needs at least one token beyond its reused prefix")
    width, rows = max(cached), len(prompts)
    suffix_width = max(len(s) for s in suffixes)
    ids = torch.full((rows, suffix_width), pad_id, dtype=torch.long)  # [P, S]
    mask = torch.zeros((rows, width + suffix_width), dtype=torch.long)  # [P, C + S]
    for i, (s, c) in enumerate(zip(suffixes, cached, strict=True)):
        ids[i, suffix_width - len(s) :] = torch.tensor(s)
        mask[i, width - c : width] = 1
        mask[i, width + suffix_width - len(s) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, width:]  # [P, S]
    cache = cache_class()
    if width > 0:
        cache = cache_class(ddp_cache_data=_left_padded(reused, width, device))
    return Prefill(
        ids.to(device), mask.to(device), positions.to(device), cache,
        sum(map(len, suffixes)), sum(cached),
    )  # fmt: skip


def _left_padded(
    reused: list[KV | None], width: int, device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, every row's reused K/V right-aligned in a zeroed [P, H, width, D]."""
    some = next(kv for kv in reused if kv)
    out = []
    for layer, (k0, v0) in enumerate(some):
        keys = k0.new_zeros((len(reused), k0.shape[0], width, k0.shape[2]), device=device)
        values = v0.new_zeros((len(reused), v0.shape[0], width, v0.shape[2]), device=device)
        for i, kv in enumerate(reused):
            if kv:
                k, v = kv[layer]
                keys[i, :, width - k.shape[1] :] = k.to(device)
                values[i, :, width - v.shape[1] :] = v.to(device)
        out.append((keys, values))
    return out
