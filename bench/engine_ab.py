"""Timing two HFEngine settings against each other on the same requests (ABAB order).

best = ab_best_times(policy, {"dynamic": {"growing_cache": False},
                              "growing": {"growing_cache": True}}, requests, repeats=3)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from posttrain.engines import GenerationRequest, HFEngine, SamplingParams
from posttrain.models.loading import Policy


def random_requests(
    vocab: int, count: int, length: int, n: int, new: int
) -> list[GenerationRequest]:
    """`count` prompts of `length` random token ids (3..vocab, the same on every call),
    each asking for `n` samples of `new` tokens at temperature 1."""
    g = torch.Generator().manual_seed(0)
    params = SamplingParams(max_tokens=new, temperature=1.0, n=n)
    return [
        GenerationRequest(torch.randint(3, vocab, (length,), generator=g).tolist(), params)
        for _ in range(count)
    ]


def ab_best_times(
    policy: Policy,
    sides: dict[str, dict[str, Any]],
    requests: list[GenerationRequest],
    repeats: int,
    warm_up: Callable[[str, HFEngine], None] | None = None,
) -> dict[str, float]:
    """Best wall seconds of `engine.generate(requests)` per side over `repeats` timed
    calls, the sides alternated twice (ABAB: drift hits both). A side's engine is
    `HFEngine(policy.model, policy.tokenizer, **sides[side])` with every request's rows in
    one batch, seed 0 and no prefix cache; eos never stops a row, so both sides decode
    the same tokens. Each engine is warmed up first: one untimed `generate`, or
    `warm_up(side, engine)` when given (which must generate once)."""
    rows = sum(r.params.n for r in requests)
    best: dict[str, float] = {}
    for side in (*sides, *sides):
        settings = {"max_batch_rows": rows, "seed": 0, "prefix_cache": False, **sides[side]}
        engine = HFEngine(policy.model, policy.tokenizer, **settings)
        engine.stop_ids = [-1]
        if warm_up is None:
            engine.generate(requests)
        else:
            warm_up(side, engine)
        for _ in range(repeats):
            start = time.perf_counter()
            engine.generate(requests)
            best[side] = min(best.get(side, float("inf")), time.perf_counter() - start)
    return best
