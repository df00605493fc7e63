"""Who this process is in a torchrun gang, and sharing work and results among ranks.

Every helper is a plain call in a single process (no process group): rank 0 of 1.
Under torchrun (`posttrain.train.distributed.init_distributed` joins the group) they
are collectives, which every rank must call in the same order.

    rows = shard_map(tasks, run_my_share)       # each rank its share, all get everything
    path = broadcast_object(path if is_main() else None)
    if any_rank(out_of_time): ...               # one decision for every rank
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
import torch.distributed as dist

T = TypeVar("T")
R = TypeVar("R")


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if is_distributed() else 0


def world_size() -> int:
    return dist.get_world_size() if is_distributed() else 1


def is_main() -> bool:
    return rank() == 0


def barrier() -> None:
    if is_distributed():
        dist.barrier()


def all_reduce_sum(values: Sequence[float]) -> list[float]:
    """The sum over ranks of each value (the values themselves when not distributed)."""
    if not is_distributed():
        return [float(v) for v in values]
    t = torch.tensor([float(v) for v in values], dtype=torch.float64)
    dist.all_reduce(t)
    return [float(v) for v in t]


def broadcast_object(value: T) -> T:
    """Rank 0's `value` on every rank (the value itself without a process group)."""
    if not is_distributed():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def any_rank(flag: bool) -> bool:
    """True on every rank when `flag` is true on any: one decision for clock-based stops."""
    return all_reduce_sum([float(flag)])[0] > 0


def shard_map(items: Sequence[T], fn: Callable[[list[T]], list[R]]) -> list[R]:
    """`fn` over this rank's share of `items` (every world-th, from its rank), the
    results of every rank gathered back into the items' order, on every rank: how
    episodes (rollouts, pair mining, evaluation) spread over trainer ranks. `fn` must
    return one result per item it was given. Without a process group: `fn(items)`."""
    if not is_distributed():
        return fn(list(items))
    w, r = world_size(), rank()
    mine = list(items[r::w])
    results = fn(mine)
    if len(results) != len(mine):
        raise ValueError(f"shard_map: fn returned {len(results)} results for {len(mine)} items")
    parts: list[list[R] | None] = [None] * w
    dist.all_gather_object(parts, results)
    out: list[R | None] = [None] * len(items)
    for k, part in enumerate(parts):
        out[k::w] = part or []
    return out  # type: ignore[return-value]  # every slot was filled by its rank
