"""HFEngine decoding with shared-prefix attention against per-row copies of the prompt.

    python bench/shared_prefix_attention.py [--model tiny] [--threads 1] [--repeats 3]

The same engine, model, prompts, n, token budget, cache class (`GrowingCache`) and
threads on both sides; only `HFEngine(shared_prefix=...)` differs: off, each prompt's
prefilled K/V is copied to its `n` rows and every decode step reads it once per row;
on, the rows read it where the prefill left it (`engines/shared_prefix_attention.py`).
Eos never stops a row, so both sides decode exactly `prompts × n × new` tokens. Shapes:
the GRPO benchmark's batch with 40-token prompts (just over the path's 32-token
threshold), long-context GRPO (`recipes/longctx-tiny.yaml`: 16 documents of 600
tokens × 8 samples, 8 new tokens), many samples of long prompts (2 × 64 of 300
tokens, 200 new) and DPO mining (32 prompts of 200 tokens × 4 samples, 40 new).
Prints each side's best time, the ratio copies / shared (> 1: shared is faster) and
the K/V bytes each side's cache holds at the end, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import Any

from engine_ab import ab_best_times, random_requests
from model_args import model_and_args

from posttrain.engines import GenerationRequest, HFEngine
from posttrain.engines.kv_cache import cache_bytes

SHAPES = {  # name: (prompts, prompt tokens, n, new tokens)
    "grpo_bench_40": (16, 40, 8, 80),
    "long_context_grpo": (16, 600, 8, 8),
    "many_samples": (2, 300, 64, 200),
    "dpo_mining": (32, 200, 4, 40),
}


def main() -> None:
    args, policy = model_and_args(argparse.ArgumentParser(description=__doc__))
    report: dict[str, object] = {"model": args.model, "threads": args.threads}
    for shape, (count, length, n, new) in SHAPES.items():
        requests = random_requests(len(policy.tokenizer), count, length, n, new)
        kv_bytes: dict[str, int] = {}
        sides = {"copies": {"shared_prefix": False}, "shared": {"shared_prefix": True}}
        best = ab_best_times(
            policy, sides, requests, args.repeats, partial(record_kv_bytes, kv_bytes, requests)
        )
        ratio = best["copies"] / best["shared"]
        tokens = count * n * new
        print(f"{shape:<17} {count}x{n} rows, prompt {length}, {new} new ({tokens} tokens): "
              f"copies {best['copies']:.3f} s, shared {best['shared']:.3f} s, "
              f"speed-up {ratio:.2f}x; K/V at the end {kv_bytes['copies'] / 2**20:.1f} MiB "
              f"vs {kv_bytes['shared'] / 2**20:.1f} MiB")  # fmt: skip
        report[shape] = {"rows": count * n, "prompt_tokens": length, "new_tokens": new,
                         "copies_s": round(best["copies"], 4), "shared_s": round(best["shared"], 4),
                         "speedup": round(ratio, 3), "kv_bytes_copies": kv_bytes["copies"],
                         "kv_bytes_shared": kv_bytes["shared"]}  # fmt: skip
    print(json.dumps(report))


def record_kv_bytes(
    out: dict[str, int], requests: list[GenerationRequest], side: str, engine: HFEngine
) -> None:
    out[side] = peak_cache_bytes(engine, requests)


def peak_cache_bytes(engine: HFEngine, requests: list[GenerationRequest]) -> int:
    """Generate once, recording the K/V bytes of the cache at the last decode step
    (prompt copies included, or the shared prompts plus the rows' own tokens)."""
    seen = [0]
    model = engine.model
    forward = model.forward

    def measuring(*a: Any, **kw: Any) -> Any:
        cache = kw.get("cache")
        if cache is not None:
            own = cache_bytes(cache)
            shared = getattr(cache, "prefix_keys", [])
            seen[0] = own + sum(2 * k.numel() * k.element_size() for k in shared)
        return forward(*a, **kw)

    model.forward = measuring  # type: ignore[method-assign]
    try:
        engine.generate(requests)
    finally:
        del model.forward
    return seen[0]


if __name__ == "__main__":
    main()
