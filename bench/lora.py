"""SFT step time and peak memory of SmolLM2-135M on CPU: full fine-tuning against LoRA.

    .venv/bin/python bench/lora.py                       # r=16, 8 × 128 tokens, 1 and 2 threads
    .venv/bin/python bench/lora.py --threads 2 --steps 5 --rank 8

Each (side, threads) cell runs in its own fresh process, so its peak RSS (the
kernel's high-water mark, `ru_maxrss`) is that side's alone. A step is what
`train_sft` does per optimizer step: zero grads, forward, token-mean NLL, backward,
clip, AdamW over `model.parameters()` (the frozen base has no gradients, so LoRA's
optimizer touches the adapters only); here the batch runs as one forward, not
micro-batches. The first `--warmup` steps are not timed; the median of the rest is
reported. Progress goes to stderr; the last stdout line is one JSON object with both
sides' settings and `lora_over_full` (LoRA step time / full step time, per thread
count). The model is converted from its PyPI package on first use (about a minute).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from typing import Any


def measure(side: str, threads: int, rank: int, batch: int, seq: int, steps: int,
            warmup: int) -> dict[str, Any]:  # fmt: skip
    """One cell, in this process: load, optionally wrap, time SFT steps."""
    import torch
    from transformers.utils import logging as hf_logging

    from posttrain.models.loading import load_policy
    from posttrain.models.lora import apply_lora, trainable_parameter_count

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    hf_logging.disable_progress_bar()
    policy = load_policy("smollm2-135m")
    model = policy.model
    settings: dict[str, Any] = {"side": side, "threads": threads, "batch": batch, "seq": seq}
    if side == "lora":
        from posttrain.config import LoraSettings

        lora = LoraSettings(r=rank)
        model = apply_lora(model, lora, seed=0)
        settings |= {"r": rank, "alpha": 2 * rank, "target_modules": lora.target_modules}
    vocab = int(model.config.vocab_size)
    ids = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)  # [B, T]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.95))
    model.train()
    times = []
    for step in range(warmup + steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]  # [B, T-1, V]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        seconds = time.perf_counter() - start
        print(f"{side} threads={threads} step {step}: {seconds:.2f} s", file=sys.stderr)
        if step >= warmup:
            times.append(seconds)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        **settings,
        "trainable_params": trainable_parameter_count(model),
        "step_s": statistics.median(times),
        "step_s_all": [round(t, 3) for t in times],
        "peak_rss_gib": round(peak_kib / 2**20, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rank", type=int, default=16, help="LoRA rank")
    parser.add_argument("--batch", type=int, default=8, help="sequences per step")
    parser.add_argument("--seq", type=int, default=128, help="tokens per sequence")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per cell")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts")
    parser.add_argument("--cell", nargs=2, metavar=("SIDE", "THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    shape = (args.rank, args.batch, args.seq, args.steps, args.warmup)
    if args.cell:  # the child: one measurement, printed as JSON
        print(json.dumps(measure(args.cell[0], int(args.cell[1]), *shape)))
        return 0
    from posttrain.models.loading import smollm2_dir

    smollm2_dir()  # convert once, before any cell is timed
    cells: dict[str, dict[str, Any]] = {}
    for threads in args.threads:
        for side in ("full", "lora"):
            cmd = [sys.executable, __file__, "--cell", side, str(threads), "--rank",
                   str(args.rank), "--batch", str(args.batch), "--seq", str(args.seq),
                   "--steps", str(args.steps), "--warmup", str(args.warmup)]  # fmt: skip
            out = subprocess.run(cmd, check=True, capture_output=False, stdout=subprocess.PIPE,
                                 text=True).stdout  # fmt: skip
            cells[f"{side}/{threads}"] = json.loads(out.strip().splitlines()[-1])
    ratio = {
        str(t): round(cells[f"lora/{t}"]["step_s"] / cells[f"full/{t}"]["step_s"], 3)
        for t in args.threads
    }
    print(json.dumps({"model": "smollm2-135m", "cells": cells, "lora_over_full": ratio}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
