"""Our GRPO and SFT steps against TRL's `GRPOTrainer` and `SFTTrainer`: same settings, one process.

    python bench/train.py            # tiny model and SmolLM2-135M, about 10-12 min
    python bench/train.py --quick    # tiny model only, about 3 min
    flags: --threads 1 --steps-tiny 5 --steps-smollm2 2 --sft-steps-tiny 20
           --sft-steps-smollm2 2 --rounds-tiny 2 --rounds-smollm2 1
           --reward graded|binary --models tiny,smollm2 --profile

For each model both sides start from deep copies of one loaded model (fp32, CPU,
`--threads` torch threads, printed) and run one warm-up step, then the timed steps;
with several rounds the sides alternate in ABBA order and their timed steps are
pooled. Before anything is timed, each side runs one untimed tiny GRPO job (the
first job in a process runs slower, whichever side it is).

- GRPO: `train_grpo` (rollouts through `run_episodes` on `HFEngine`, advantages,
  one clipped update) against `GRPOTrainer`, with the same tasks in the same order,
  group size, batch (prompts x group), completion budget, sampling (temperature 1,
  top-p 1), clip range (0.2, 0.28), beta 0, one optimizer step per generation, AdamW
  (lr, betas, weight decay, grad-norm clip 1), token-mean loss, no activation
  checkpointing. The reward on both sides is one domain's `verify`:
  `arith/addition-v1` tasks with a graded reward (similarity of the final text to
  the sum, 1 when correct) so that groups have reward spread even for an untrained
  model; `--reward binary` uses the domain's own pass/fail verdict instead (then
  our trainer skips the groups without spread, TRL does not).
- SFT: `train_sft` against `SFTTrainer` on the same demonstrations (the recipe's
  domain mix replayed through the episode loop, pre-tokenized for TRL with our loss
  mask as its `completion_mask`), same batch and micro-batches, no packing on
  either side (both pad each micro-batch), AdamW as ours.

Figures: a step's time is the clock between consecutive step ends (median over the
timed steps), in wall seconds and in this process's CPU seconds; tokens are non-pad
tokens (GRPO: prompt + generated completion of every rollout of the step; SFT: the
batch's sequences) and tokens/s is all timed tokens over all timed seconds. The
last line of output is one JSON object:

- `grpo_step_time_ratio_{tiny,smollm2}`, `sft_step_time_ratio_*`: ours / TRL median
  step seconds (lower is better); `*_cpu_time_ratio_*` the same in CPU seconds;
  `*_tokens_per_s_ratio_*`: ours / TRL tokens/s (higher is better);
- the issue's keys: `grpo_ratio_tiny`, `grpo_ratio_smollm2` are the GRPO STEP-TIME
  ratios (targets <= 0.5 and <= 1.0); `sft_ratio_tiny`, `sft_ratio_smollm2` are the
  SFT TOKENS/S ratios (target >= 1.0);
- `runs`: each comparison's settings and both sides' raw figures (per-step seconds
  and tokens, GRPO's rollout/update split); `differences`: what the two sides do
  differently that the settings cannot align.

Not guaranteed: stable timings (the machine is shared and steps are few, especially
for SmolLM2: compare the CPU-time ratio too), or equal work per step: sampling is
random on both sides, so completion lengths (and tokens) per step differ a little.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import io
import json
import os
import pstats
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch
from train_trl import (
    GradedAddition,
    GRPOBench,
    Mark,
    SFTBench,
    SideResult,
    clock,
    merge,
    prompts_identical,
    side_result,
    trl_grpo,
    trl_sft,
)
from transformers import PreTrainedModel

from posttrain.config import GRPOConfig, RolloutConfig, SFTConfig, load_config
from posttrain.domains import get_domain
from posttrain.domains.base import Domain
from posttrain.engines.hf import HFEngine
from posttrain.models.loading import load_policy
from posttrain.rollout.episode import replay_references
from posttrain.train.grpo import train_grpo
from posttrain.train.mixture import TaskSampler
from posttrain.train.recipe_inputs import resolve_domains
from posttrain.train.sft import train_sft
from posttrain.types import Rollout, Task

GRPO_SEEDS = 4 * 10**8  # the GRPO stream's seed base (train/mixture.py)

DIFFERENCES = [
    "GRPO: ours drops the rollouts of groups whose rewards are all equal before the "
    "update (no gradient from them); TRL forwards and backwards them with advantage 0. "
    "`kept_fraction` in each run says how much ours trained on.",
    "GRPO: ours samples with HFEngine (one prefill per prompt shared by its group, "
    "finished rows dropped as they stop); TRL calls model.generate on each prompt "
    "repeated `group` times (prefill per row, finished rows padded until all stop).",
    "GRPO: the 'old' logprobs of the ratio are the sampler's on our side and the "
    "detached training forward on TRL's (num_iterations=1): neither runs an extra forward.",
    "GRPO: ours computes each sampled token's logprob while decoding (a log_softmax per "
    "step); TRL's generate does not (it needs none with num_iterations=1).",
    "GRPO: the training forward: ours runs each group's prompt once and the group's "
    "completions on its K/V (grpo.share_prompts), scoring completion positions with the "
    "entropy over the full vocabulary; TRL forwards prompt + completion per row and its "
    "fused lm-head scores only the completion positions (logits_to_keep) in chunks, with "
    "its own backward.",
    "TRL defaults to gradient_checkpointing=True (recomputes activations in backward); "
    "set False here, as ours never recomputes.",
    "SFT: ours sorts each batch by length before cutting it into micro-batches (less "
    "padding); TRL cuts micro-batches in sampler order. Both pad to the longest in a "
    "micro-batch; TRL also computes entropy and token accuracy per micro-batch.",
    "SFT: ours warms the LR up linearly then decays it to 10% over max_steps; TRL's "
    "'linear' schedule decays to 0 after the same warm-up (no effect on speed).",
    "Reward text: ours verifies the engine's decoded turn, TRL the completion decoded "
    "with skip_special_tokens; both call the same domain.verify.",
]


class FixedTasks:
    """The sampler `train_grpo` draws from: the given tasks, in order."""

    def __init__(self, tasks: Sequence[Task]) -> None:
        self.tasks, self.next, self.window = list(tasks), 0, None

    def sample(self, count: int) -> list[Task]:
        if self.next + count > len(self.tasks):
            raise RuntimeError(
                f"FixedTasks: {count} more tasks asked for, {len(self.tasks) - self.next} left"
            )
        out = self.tasks[self.next : self.next + count]
        self.next += count
        return out

    def observe(
        self, task: Task, rewards: Sequence[float], tokens: Sequence[int] | None = None
    ) -> None:
        pass


def ours_grpo(
    model: PreTrainedModel,
    tokenizer: Any,
    tasks: Sequence[Task],
    domain: Domain,
    s: GRPOBench,
    rollout: RolloutConfig | None = None,
) -> SideResult:
    """`s.steps + 1` steps of `train_grpo`; `rollout` picks where the episodes run
    (lockstep in this process without one; `bench/train_overlap.py` passes others)."""
    cfg = GRPOConfig(
        steps=s.steps + 1,
        batch_size=s.batch,
        group_size=s.group,
        lr=s.lr,
        temperature=1.0,
        top_p=1.0,
        clip_eps=s.clip_eps,
        clip_eps_high=s.clip_eps_high,
        kl_coef=s.beta,
        loss="grpo",
        aggregation="token",
        epochs=s.epochs,
        refill_rounds=0,  # TRL's GRPOTrainer has no dynamic sampling
        minibatch_size=s.batch,  # one optimizer step per generation, as TRL's
        max_minutes=10**6,
    )
    engine = HFEngine(model, tokenizer, max_batch_rows=max(128, s.batch), seed=0)
    marks: list[Mark] = []
    tokens: list[int] = []
    kept: list[float] = []
    rollout_s: list[float] = []
    staleness: list[float] = []  # policy versions behind, per step (0 when lockstep)

    def record(rollouts: list[Rollout]) -> None:
        tokens.append(sum(len(r.prompt_ids) + len(r.completion_ids) for r in rollouts))
        rewards = [r.reward for r in rollouts]
        groups = [rewards[i : i + s.group] for i in range(0, len(rewards), s.group)]
        kept.append(sum(max(g) > min(g) for g in groups) / len(groups))

    start = clock()
    train_grpo(
        model,
        tokenizer,
        engine,
        cast(TaskSampler, FixedTasks(tasks)),
        lambda _: domain,
        cfg,
        max_tokens=s.max_tokens,
        log=lambda step, metrics: (  # metrics as in a run
            rollout_s.append(metrics["rollout_s"]),
            staleness.append(metrics.get("staleness_mean", 0.0)),
        ),
        record=record,
        after_step=lambda step: marks.append(clock()),
        rollout=rollout,
    )
    result = side_result(start, marks, tokens, rollout_s)
    result.extra["kept_fraction"] = round(sum(kept[1:]) / len(kept[1:]), 3)
    result.extra["staleness_mean"] = round(sum(staleness[1:]) / len(staleness[1:]), 3)
    result.extra["threads_seen"] = [torch.get_num_threads()]
    return result


class CountingExamples(Sequence[Rollout]):
    """The demonstrations, counting the non-pad tokens of every example handed out;
    `lengths` holds the lengths handed out since the caller last cleared it."""

    def __init__(self, examples: Sequence[Rollout]) -> None:
        self.examples, self.tokens, self.lengths = list(examples), 0, list[int]()

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: Any) -> Any:
        r = self.examples[i]
        self.lengths.append(len(r.prompt_ids) + len(r.completion_ids))
        self.tokens += self.lengths[-1]
        return r


def padded_positions(lengths: list[int], micro_batches: int) -> int:
    """Positions `train_sft` computes for one batch: length-sorted micro-batches, each
    padded to its longest sequence (as `sft._accumulate` cuts them)."""
    ordered, size = sorted(lengths), -(-len(lengths) // micro_batches)
    chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    return sum(len(chunk) * max(chunk) for chunk in chunks)


def ours_sft(
    model: PreTrainedModel, pad_id: int, examples: Sequence[Rollout], s: SFTBench
) -> SideResult:
    cfg = SFTConfig(
        batch_size=s.batch,
        micro_batches=s.micro_batches,
        lr=s.lr,
        weight_decay=s.weight_decay,
        warmup_steps=s.warmup_steps,
        max_steps=s.steps + 1,
        max_minutes=10**6,
        eval_every=1,  # the log hook marks each step's end; no validation set is given
    )
    counted = CountingExamples(examples)
    marks: list[Mark] = []
    totals: list[int] = []
    padded: list[int] = []

    def log(step: int, stats: dict[str, float]) -> None:
        marks.append(clock())
        totals.append(counted.tokens)
        padded.append(padded_positions(counted.lengths, s.micro_batches))
        counted.lengths.clear()

    start = clock()
    train_sft(model, counted, [], cfg, pad_id, seed=0, stop_on_plateau=False, log=log)
    per_step = [b - a for a, b in zip([0, *totals[:-1]], totals, strict=True)]
    result = side_result(start, marks, per_step)
    result.extra["padded_positions_per_step"] = round(sum(padded[1:]) / len(padded[1:]), 1)
    result.extra["threads_seen"] = [torch.get_num_threads()]
    return result


Side = Callable[[PreTrainedModel], SideResult]


def run_pair(
    label: str, ours: Side, trl: Side, model: PreTrainedModel, rounds: int, profile: bool
) -> tuple[SideResult, SideResult]:
    """Both sides, each on a fresh deep copy of `model`, seeded alike, in ABBA order over
    `rounds` rounds (drift in the machine's load falls on both); timed steps pooled."""
    results: dict[str, list[SideResult]] = {"ours": [], "TRL": []}
    for r in range(rounds):
        order = [("ours", ours), ("TRL", trl)]
        for name, fn in order if r % 2 == 0 else order[::-1]:
            copy_ = copy.deepcopy(model)
            torch.manual_seed(0)
            profiler = cProfile.Profile() if profile and r == 0 else None
            if profiler is not None:
                profiler.enable()
            results[name].append(fn(copy_))
            if profiler is not None:
                profiler.disable()
                text = io.StringIO()
                pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
                print(
                    f"--- {name} {label}: cProfile, all steps, by own time ---\n{text.getvalue()}"
                )
            del copy_
            gc.collect()
    return merge(results["ours"]), merge(results["TRL"])


def compare(kind: str, key: str, settings: Any, ours: SideResult, trl: SideResult) -> dict:
    """The ratios (ours / TRL) and the run's record; prints one line."""
    step, cpu = ours.step_s / trl.step_s, ours.cpu_step_s / trl.cpu_step_s
    tps = ours.tokens_per_s / trl.tokens_per_s
    print(
        f"{kind} {key:8} ours {ours.step_s:7.3f} s/step {ours.tokens_per_s:7.0f} tok/s "
        f"({ours.tokens_per_step:.0f} tok/step) | TRL {trl.step_s:7.3f} s/step "
        f"{trl.tokens_per_s:7.0f} tok/s ({trl.tokens_per_step:.0f} tok/step) | ratios: "
        f"step time {step:.3f}, CPU time {cpu:.3f}, tokens/s {tps:.3f}",
        flush=True,
    )
    return {
        f"{kind}_step_time_ratio_{key}": round(step, 4),
        f"{kind}_cpu_time_ratio_{key}": round(cpu, 4),
        f"{kind}_tokens_per_s_ratio_{key}": round(tps, 4),
        "run": {"settings": dict(vars(settings)), "ours": ours.summary(), "trl": trl.summary()},
    }


def sft_examples(tokenizer: Any, count: int) -> list[Rollout]:
    """The recipe's SFT demonstrations: its domain mix, replayed through the episode loop."""
    domains = resolve_domains(load_config(None, []))
    sampler = TaskSampler(domains, "sft", range(1, 11), seed=0)
    return replay_references(sampler.sample(count), tokenizer, get_domain)


def warm_process(domain: Domain, tmp: str) -> None:
    """One untimed tiny-model GRPO run of each side (2 steps, the tiny shape). Whichever
    side runs first in a process is slower in its memory-bound ops (aten::cat about 3x,
    aten::mul 1.6x in torch.profiler, for either side), so without this the first side
    measured would pay for the process's warm-up."""
    policy = load_policy("tiny", seed=0)
    prompts, group, max_tokens = SHAPES["tiny"]
    g = GRPOBench("tiny", prompts, group, max_tokens, 3e-5, 1, torch.get_num_threads())
    tasks = [domain.generate(GRPO_SEEDS + 10**6 + i, 1 + i % 10) for i in range(2 * prompts)]
    tok = policy.tokenizer
    ours_grpo(copy.deepcopy(policy.model), tok, tasks, domain, g)
    trl_grpo(copy.deepcopy(policy.model), tok, tasks, domain, g, tmp)
    gc.collect()


def bench_model(key: str, args: argparse.Namespace, domain: Domain, tmp: str) -> dict[str, Any]:
    """GRPO and SFT comparisons on one model; its figures and runs."""
    name = {"tiny": "tiny", "smollm2": "smollm2-135m"}[key]
    steps, sft_steps = getattr(args, f"steps_{key}"), getattr(args, f"sft_steps_{key}")
    rounds = getattr(args, f"rounds_{key}")
    prompts, group, max_tokens = SHAPES[key]
    policy = load_policy(name, seed=0)
    model, tok = policy.model, cast(Any, policy.tokenizer)  # typed `object` in Policy
    out: dict[str, Any] = {}
    g = GRPOBench(name, prompts, group, max_tokens, 3e-5, steps, args.threads)
    count = (steps + 1) * prompts
    tasks = [domain.generate(GRPO_SEEDS + i, 1 + i % 10) for i in range(count)]
    ours, trl = run_pair(
        f"grpo {key}",
        lambda m: ours_grpo(m, tok, tasks, domain, g),
        lambda m: trl_grpo(m, tok, tasks, domain, g, tmp),
        model,
        rounds,
        args.profile,
    )
    res = compare("grpo", key, g, ours, trl)
    out[f"grpo_{key}"] = res.pop("run")
    out[f"grpo_{key}"]["settings"]["prompt_ids_identical"] = prompts_identical(tok, tasks)
    out.update(res)

    s = SFTBench(name, 32, 4, 1e-3, 30, sft_steps, args.threads, 256)
    examples, pad = sft_examples(tok, s.examples), int(tok.pad_token_id)
    ours, trl = run_pair(
        f"sft {key}",
        lambda m: ours_sft(m, pad, examples, s),
        lambda m: trl_sft(m, tok, examples, s, tmp),
        model,
        rounds,
        args.profile,
    )
    res = compare("sft", key, s, ours, trl)
    out[f"sft_{key}"] = res.pop("run")
    out.update(res)
    return out


SHAPES = {"tiny": (16, 8, 80), "smollm2": (2, 8, 32)}  # GRPO: prompts, group, max_tokens


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="the tiny model only")
    p.add_argument("--models", default="tiny,smollm2", help="comma-separated: tiny, smollm2")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (both sides)")
    p.add_argument("--steps-tiny", type=int, default=5, help="timed GRPO steps, tiny")
    p.add_argument("--steps-smollm2", type=int, default=2, help="timed GRPO steps, SmolLM2")
    p.add_argument("--sft-steps-tiny", type=int, default=20, help="timed SFT steps, tiny")
    p.add_argument("--sft-steps-smollm2", type=int, default=2, help="timed SFT steps, SmolLM2")
    p.add_argument("--rounds-tiny", type=int, default=2, help="runs per side, ABBA order")
    p.add_argument("--rounds-smollm2", type=int, default=1, help="runs per side, ABBA order")
    p.add_argument("--reward", choices=("graded", "binary"), default="graded")
    p.add_argument("--profile", action="store_true", help="cProfile each side's first round")
    args = p.parse_args()
    if args.quick:
        args.models = "tiny"
    if unknown := set(args.models.split(",")) - set(SHAPES):
        p.error(f"unknown model(s) {sorted(unknown)}: choose from {sorted(SHAPES)}")
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' renames, per step
    torch.set_num_threads(args.threads)
    graded = args.reward == "graded"
    domain = cast(Domain, GradedAddition() if graded else get_domain("arith/addition-v1"))
    out: dict[str, Any] = {"threads": args.threads, "reward": args.reward, "models": args.models}
    out["rounds"] = {key: getattr(args, f"rounds_{key}") for key in args.models.split(",")}
    out["load_avg_start"] = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, Any] = {}
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        warm_process(domain, tmp)
        out["process_warmup_s"] = round(time.perf_counter() - began, 1)
        for key in args.models.split(","):
            figures = bench_model(key, args, domain, tmp)
            runs.update({k: figures.pop(k) for k in [f"grpo_{key}", f"sft_{key}"]})
            out.update(figures)
            out[f"grpo_ratio_{key}"] = out[f"grpo_step_time_ratio_{key}"]
            out[f"sft_ratio_{key}"] = out[f"sft_tokens_per_s_ratio_{key}"]
    out["ratio_definitions"] = {
        "grpo_ratio_*": "ours / TRL median step seconds (lower is better)",
        "sft_ratio_*": "ours / TRL non-pad tokens per second (higher is better)",
        "*_cpu_time_ratio_*": "ours / TRL median CPU seconds of this process per step",
    }
    out["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    out["wall_s"] = round(time.perf_counter() - began, 1)
    out["runs"] = runs
    out["differences"] = DIFFERENCES
    print(json.dumps(out))


if __name__ == "__main__":
    main()
