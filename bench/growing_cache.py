"""HFEngine decoding into `GrowingCache` against transformers' `DynamicCache`.

    python bench/growing_cache.py [--model tiny] [--threads 1] [--repeats 3]

The same engine, model, prompts, n, token budget and threads on both sides; only the
KV cache class differs (`HFEngine(growing_cache=...)`; both copy a prompt's K/V to its
samples, `shared_prefix=False`, the path a `DynamicCache` takes). Eos never stops a row, so both
sides decode exactly `prompts × n × new` tokens. Three shapes: short prompts (the
GRPO benchmark's: 16 prompts × 8 samples × 80 tokens), long prompts (2 × 64 samples
of 300-token prompts, 200 tokens each) and one long row (a 400-token prompt, 400
tokens). Prints each side's best time and the ratio dynamic / growing (> 1: ours is
faster), then one JSON line.
"""

from __future__ import annotations

import argparse
import json

from engine_ab import ab_best_times, random_requests
from model_args import model_and_args

SHAPES = {  # name: (prompts, prompt tokens, n, new tokens)
    "short": (16, 20, 8, 80),
    "long_prompts": (2, 300, 64, 200),
    "one_long_row": (1, 400, 1, 400),
}


def main() -> None:
    args, policy = model_and_args(argparse.ArgumentParser(description=__doc__))
    report: dict[str, object] = {"model": args.model, "threads": args.threads}
    for shape, (count, length, n, new) in SHAPES.items():
        requests = random_requests(len(policy.tokenizer), count, length, n, new)
        sides = {  # per-row copies of the prompt on both sides: the path both caches take
            "dynamic": {"growing_cache": False, "shared_prefix": False},
            "growing": {"growing_cache": True, "shared_prefix": False},
        }
        best = ab_best_times(policy, sides, requests, args.repeats)
        ratio = best["dynamic"] / best["growing"]
        tokens = count * n * new
        print(f"{shape:<13} {count}x{n} rows, prompt {length}, {new} new ({tokens} tokens): "
              f"DynamicCache {best['dynamic']:.3f} s, GrowingCache {best['growing']:.3f} s, "
              f"speed-up {ratio:.2f}x")  # fmt: skip
        report[shape] = {"rows": count * n, "prompt_tokens": length, "new_tokens": new,
                         "dynamic_s": round(best["dynamic"], 4),
                         "growing_s": round(best["growing"], 4), "speedup": round(ratio, 3)}  # fmt: skip
    print(json.dumps(report))


if __name__ == "__main__":
    main()
