"""GRPO step time with both cores in use: our overlapped rollouts against TRL on two threads.

    python bench/train_overlap.py                  # tiny model, about 4 min
    flags: --steps 5 --rounds 2 --cores 2 --variants sync,thread,ray

`bench/train.py` compares one thread per side. This script gives each side the
machine's `--cores` (2 here) and lets it use them its own way, on `bench/train.py`'s
tiny GRPO comparison (same tasks in the same order, 16 prompts x 8, 80-token budget,
graded addition reward, one optimizer step per generation, same AdamW):

- `TRL`: `GRPOTrainer` with `torch.set_num_threads(cores)` (intra-op parallelism:
  generation, forward and backward each spread over the cores);
- `sync`: our lockstep GRPO with `cores` intra-op threads (the same use of the cores);
- `thread`: our scheduler with `rollout.max_staleness=1` and one intra-op thread:
  the engine generates the next step's groups on its own model copy, in a thread of
  this process, while the trainer updates (the two share the GIL);
- `ray`: the same overlap with one Ray rollout worker process (`rollout.backend=ray`,
  `ray_workers=1`): no shared GIL; the weights go to the worker after each update.

Overlapped variants train on rollouts one policy version old (the sampler's
logprobs are the importance ratio's "old" ones, truncated as in every run), so they
are not the same algorithm as TRL's on-policy step: `staleness_mean` is printed.
Figures: median seconds between step ends after one warm-up step (wall clock; the
Ray worker's CPU time is not this process's, so no CPU ratio), pooled over
`--rounds` rounds in rotating order. Last line: one JSON object with
`step_time_ratio_<variant>` (ours / TRL, lower is better) and the raw figures.

Not guaranteed: stable timings (two cores, both busy: any other job moves them).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from train import GRPO_SEEDS, SHAPES, ours_grpo, warm_process
from train_trl import GradedAddition, GRPOBench, SideResult, merge, trl_grpo

from posttrain.config import RolloutConfig
from posttrain.models.loading import load_policy

VARIANTS = ("sync", "thread", "ray")


def rollout_of(variant: str) -> RolloutConfig | None:
    if variant == "thread":
        return RolloutConfig(mode="scheduled", max_staleness=1)
    if variant == "ray":
        return RolloutConfig(backend="ray", ray_workers=1, max_staleness=1)
    return None  # sync: lockstep


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=5, help="timed GRPO steps per run")
    p.add_argument("--rounds", type=int, default=2, help="runs per side, rotating order")
    p.add_argument("--cores", type=int, default=2, help="cores each side may use")
    p.add_argument("--variants", default=",".join(VARIANTS), help="ours: sync, thread, ray")
    args = p.parse_args()
    variants = args.variants.split(",")
    if unknown := set(variants) - set(VARIANTS):
        p.error(f"unknown variant(s) {sorted(unknown)}: choose from {list(VARIANTS)}")
    warnings.filterwarnings("ignore", category=FutureWarning)
    if "ray" in variants:  # the worker unpickles the bench's reward domain
        here = os.path.dirname(os.path.abspath(__file__))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            x for x in (here, os.environ.get("PYTHONPATH")) if x
        )
    domain = GradedAddition()
    policy = load_policy("tiny", seed=0)
    tok = policy.tokenizer
    prompts, group, max_tokens = SHAPES["tiny"]
    # One step more than the runs take: the overlapped sides draw the next step's tasks
    # while the last update runs.
    tasks = [domain.generate(GRPO_SEEDS + i, 1 + i % 10) for i in range(prompts * (args.steps + 2))]
    threads = {"TRL": args.cores, "sync": args.cores, "thread": 1, "ray": 1}

    def side(name: str) -> Callable[[Any], SideResult]:
        g = GRPOBench("tiny", prompts, group, max_tokens, 3e-5, args.steps, threads[name])
        if name == "TRL":
            return lambda m: trl_grpo(m, tok, tasks, domain, g, tmp)
        return lambda m: ours_grpo(m, tok, tasks, domain, g, rollout_of(name))

    out: dict[str, Any] = {"cores": args.cores, "threads": threads, "steps": args.steps}
    out["load_avg_start"] = [round(x, 2) for x in os.getloadavg()]
    began = time.perf_counter()
    names = ["TRL", *variants]
    results: dict[str, list[SideResult]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        torch.set_num_threads(1)
        warm_process(domain, tmp)
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                torch.set_num_threads(threads[name])
                model = copy.deepcopy(policy.model)
                torch.manual_seed(0)
                results[name].append(side(name)(model))
                del model
                gc.collect()
    merged = {n: merge(rs) for n, rs in results.items()}
    trl = merged["TRL"].step_s
    for name, res in merged.items():
        line = f"{name:6} {res.step_s:6.3f} s/step  {res.tokens_per_s:7.0f} tok/s"
        if name != "TRL":
            out[f"step_time_ratio_{name}"] = round(res.step_s / trl, 4)
            line += f"  ratio to TRL {res.step_s / trl:.3f}"
        print(line, flush=True)
    out["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    out["wall_s"] = round(time.perf_counter() - began, 1)
    out["runs"] = {n: r.summary() for n, r in merged.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
