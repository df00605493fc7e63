"""Does pinning glibc's mmap threshold pay? RSS and step speed of a short SFT run.

    python bench/heap_growth.py [--steps 60] [--threshold 1048576]

Runs the recipe's opening in two fresh processes: a held-out evaluation (400 tasks,
greedy), then SFT on the four starter domains' demonstrations with validation on 256
(the default tiny model, one thread, batch 32): the baseline with
glibc's dynamic mmap threshold, the other with `MALLOC_MMAP_THRESHOLD_` pinned
(`--threshold`). Prints each side's RSS after
the data is built and after SFT, the SFT steps per second, and the ratios.

Measured (docs/benchmarks.md): pinning cuts the SFT heap growth to about a quarter but
costs about 20% of the step speed, and the recipe's peak (reached later, with the
control arm running) did not fall, so `posttrain run` leaves glibc's default alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from posttrain.config import load_config
from posttrain.domains import get_domain
from posttrain.engines.hf import HFEngine
from posttrain.eval.evaluate import evaluate
from posttrain.models.loading import load_policy
from posttrain.rollout.episode import replay_references
from posttrain.train.mixture import TaskSampler, heldout_tasks
from posttrain.train.recipe_inputs import resolve_domains
from posttrain.train.sft import train_sft

def rss_mb():
    status = open("/proc/self/status").read()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024

steps = int(sys.argv[1])
cfg = load_config(None, [f"sft.max_steps={steps}", f"sft.eval_every={max(1, steps // 3)}"])
domains = resolve_domains(cfg)
policy = load_policy("tiny", seed=0)
tok = policy.tokenizer
heldout = heldout_tasks(domains, 100, 10**9)  # the recipe evaluates before SFT
evaluate("untrained", heldout, HFEngine(policy.model, tok, seed=0), tok, get_domain, 80, 512)
sampler = TaskSampler(domains, "sft", range(1, 11), seed=0)
examples = replay_references(sampler.sample(cfg.sft.num_examples), tok, get_domain)
before = rss_mb()
start = time.perf_counter()
train_sft(policy.model, examples, examples[:256], cfg.sft, tok.pad_token_id)
seconds = time.perf_counter() - start
print(json.dumps({"rss_before": before, "rss_after": rss_mb(), "steps_per_s": steps / seconds}))
"""


def measure(steps: int, threshold: int | None) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    env["OMP_NUM_THREADS"] = "1"
    if threshold is not None:
        env["MALLOC_MMAP_THRESHOLD_"] = str(threshold)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps)], env=env, capture_output=True, text=True
    )
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--threshold", type=int, default=1 << 20)
    args = parser.parse_args()
    base = measure(args.steps, None)
    ours = measure(args.steps, args.threshold)
    print(f"settings: {args.steps} SFT steps, batch 32, tiny model, 1 thread, fresh processes")
    for name, r in (("glibc default", base), (f"pinned {args.threshold} B", ours)):
        print(
            f"{name:>20}: RSS {r['rss_before']:.0f} -> {r['rss_after']:.0f} MB, "
            f"{r['steps_per_s']:.2f} steps/s"
        )
    grown = (ours["rss_after"] - ours["rss_before"]) / max(
        1.0, base["rss_after"] - base["rss_before"]
    )
    print(f"SFT growth ratio (ours / default): {grown:.2f}")
    print(f"speed ratio (ours / default): {ours['steps_per_s'] / base['steps_per_s']:.2f}")


if __name__ == "__main__":
    main()
