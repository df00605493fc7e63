"""GRPO's training forward + backward with shared prompts against one row per rollout.

    python bench/shared_prefix.py [--model tiny] [--threads 1] [--repeats 3]

Both sides take the same rollouts (groups of `group` completions sharing a prompt) on
the same model, threads and token-mean loss, forward and backward: ours runs each
prompt once (`train.shared_prefix.shared_logprobs`), the baseline packs prompt +
completion per row (`train.batches.pack` + `batch_logprobs_entropy`, the path with
`grpo.share_prompts=false`). Shapes: the tiny GRPO benchmark's (8-token prompts, 60
tokens of completion), a tool-task-like one (60 / 60) and a document task (400-token
prompts, 30-token answers). Prints each side's best time and the ratio
per-row / shared (> 1: sharing is faster), then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from model_args import model_and_args

from posttrain.train.batches import batch_logprobs_entropy, pack
from posttrain.train.shared_prefix import shared_logprobs
from posttrain.types import Message, Rollout, Verdict

SHAPES = {  # name: (prompts, group, prompt tokens, completion tokens)
    "short_prompts": (8, 8, 8, 60),
    "even": (8, 8, 60, 60),
    "documents": (4, 8, 400, 30),
}


def rollouts(vocab: int, prompts: int, group: int, prompt: int, completion: int) -> list[Rollout]:
    rng = random.Random(0)
    out = []
    for _ in range(prompts):
        ids = [rng.randrange(3, vocab) for _ in range(prompt)]
        for _ in range(group):
            n = rng.randint(completion // 2, completion)
            out.append(Rollout(
                id=str(len(out)), task_id="t", domain="bench", difficulty=1, prompt_ids=ids,
                completion_ids=[rng.randrange(3, vocab) for _ in range(n)], loss_mask=[1] * n,
                logprobs=[-1.0] * n, messages=[Message("user", "x")], turns=[],
                verdict=Verdict(1.0, True, "bench"),
            ))  # fmt: skip
    return out


def measure(model: Any, rows: list[Rollout], repeats: int) -> dict[str, float]:
    """Best seconds of one forward + backward of the token-mean loss, per side."""
    batch = pack(rows, 0)
    tokens = float(batch.loss_mask.sum())
    sides = {
        "per_row": lambda: batch_logprobs_entropy(model, batch)[0],
        "shared": lambda: shared_logprobs(model, rows, entropy=True)[0],
    }
    best: dict[str, float] = {}
    for name in ("per_row", "shared") * 2:  # ABAB
        for k in range(repeats + 1):  # the first is a warm-up
            model.zero_grad(set_to_none=True)
            start = time.perf_counter()
            (-(sides[name]() * batch.loss_mask).sum() / tokens).backward()
            if k:
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - start)
    return best


def main() -> None:
    args, policy = model_and_args(argparse.ArgumentParser(description=__doc__))
    report: dict[str, object] = {"model": args.model, "threads": args.threads}
    for shape, dims in SHAPES.items():
        rows = rollouts(len(policy.tokenizer), *dims)
        best = measure(policy.model.train(), rows, args.repeats)
        ratio = best["per_row"] / best["shared"]
        prompts, group, prompt, completion = dims
        print(f"{shape:<14} {prompts}x{group} rollouts, prompt {prompt}, completion <= "
              f"{completion}: per row {best['per_row']:.3f} s, shared {best['shared']:.3f} s, "
              f"speed-up {ratio:.2f}x")  # fmt: skip
        report[shape] = {"rollouts": prompts * group, "prompt_tokens": prompt,
                         "completion_max": completion, "per_row_s": round(best["per_row"], 4),
                         "shared_s": round(best["shared"], 4), "speedup": round(ratio, 3)}  # fmt: skip
    print(json.dumps(report))


if __name__ == "__main__":
    main()
