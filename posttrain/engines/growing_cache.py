"""`GrowingCache`: a `DynamicCache` whose layers append into spare room instead of copying.

transformers' `DynamicLayer.update` appends a decode step's K/V with `torch.cat`, which
copies the whole cache of every layer at every step: decoding T tokens copies O(T²)
bytes. On a CPU with a small model that copy is most of the decode time (the tiny
model, 128 rows × 80 tokens: `aten::cat` took about 70% of a profiled `generate`).

`GrowingLayer` keeps each layer's keys and values in a buffer with room to spare and
writes a step's K/V into it in place; `keys` / `values` stay views of the filled part,
so everything that reads a `DynamicCache` (attention, `batch_select_indices`, the
prefix cache's `keep_rows`) works unchanged. When the room runs out the buffer is
reallocated with half its filled length to spare (at least `min_room`, at most
`max_room` tokens): a handful of copies up to ~2k tokens, then one per `max_room`
tokens, against one per token with `torch.cat`.

Memory: a layer holds up to `max_room` (or half its length, if less) spare tokens;
`kv_cache.cache_bytes` counts the whole buffer, spare room included.

    cache = GrowingCache()
    out = model(input_ids=ids, cache=cache)      # as with a DynamicCache
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class GrowingLayer(DynamicLayer):
    """A `DynamicLayer` that appends into a preallocated buffer (see the module docstring)."""

    min_room = 64
    max_room = 1024

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        filled = self.get_seq_length()
        total = filled + key_states.shape[-2]
        if not self._owns_views(key_states) or total > self._capacity():
            self._reallocate(key_states, value_states, filled, total)
        assert self._key_buffer is not None and self._value_buffer is not None
        self._key_buffer[..., filled:total, :] = key_states
        self._value_buffer[..., filled:total, :] = value_states
        self.keys = self._key_buffer[..., :total, :]
        self.values = self._value_buffer[..., :total, :]
        return self.keys, self.values

    def reset(self) -> None:
        self._key_buffer = self._value_buffer = None
        super().reset()

    def _capacity(self) -> int:
        return 0 if self._key_buffer is None else self._key_buffer.shape[-2]

    def _owns_views(self, key_states: torch.Tensor) -> bool:
        """Whether `keys` / `values` are still the filled start of this layer's buffers.

        Anything that replaced them (`batch_select_indices`, `batch_repeat_interleave`,
        a caller assigning new tensors) makes the next `update` copy them into fresh
        buffers; `crop` keeps a prefix view and so keeps the buffers."""
        buffer, keys = self._key_buffer, self.keys
        if buffer is None or keys is None or keys.numel() == 0:
            return False
        values_buffer = self._value_buffer
        return (
            keys.data_ptr() == buffer.data_ptr()
            and keys.shape[:-2] == buffer.shape[:-2] == key_states.shape[:-2]
            and values_buffer is not None
            and self.values is not None
            and self.values.data_ptr() == values_buffer.data_ptr()
        )

    def _reallocate(
        self, key_states: torch.Tensor, value_states: torch.Tensor, filled: int, total: int
    ) -> None:
        room = min(max(total // 2, self.min_room), self.max_room)
        capacity = total + room
        batch_heads = key_states.shape[:-2]  # [B, H]
        keys = key_states.new_empty((*batch_heads, capacity, key_states.shape[-1]))
        values = value_states.new_empty((*batch_heads, capacity, value_states.shape[-1]))
        if filled:
            assert self.keys is not None and self.values is not None
            if self.keys.shape[:-2] != batch_heads or self.keys.dtype != key_states.dtype:
                raise ValueError(
                    f"cannot append K/V of shape {tuple(key_states.shape)} and {key_states.dtype} "
                    f"to a cache of {tuple(self.keys.shape)} and {self.keys.dtype}"
                )
            keys[..., :filled, :] = self.keys
            values[..., :filled, :] = self.values
        self._key_buffer, self._value_buffer = keys, values


class GrowingCache(DynamicCache):
    """A `DynamicCache` of `GrowingLayer`s; `ddp_cache_data` fills it as it fills a
    `DynamicCache` (one (keys, values) pair per layer)."""

    def __init__(self, ddp_cache_data: list[tuple[torch.Tensor, torch.Tensor]] | None = None):
        super().__init__()
        self.layer_class_to_replicate = GrowingLayer
        for keys, values in ddp_cache_data or []:
            layer = GrowingLayer()
            layer.update(keys, values)
            self.layers.append(layer)
