"""GRPO: group-relative policy optimization on verifier rewards, one loop top to bottom.

Each step samples `batch_size / group_size` tasks from the stage's task stream,
runs `group_size` episodes per task through the real episode loop (tool calls
included), turns verdict rewards into group-normalized advantages, drops groups
whose rewards are all equal (they carry no signal), and takes clipped-surrogate
steps on the rest, with an optional k3 KL penalty to the policy the stage started
from. The rollout's own sampling logprobs are the "old" logprobs of the ratio.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel

from posttrain.config import GRPOConfig
from posttrain.domains.base import Domain
from posttrain.engines.base import Engine, SamplingParams
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.rollout.episode import run_episodes
from posttrain.train.batches import batch_logprobs, pack
from posttrain.train.losses import grpo_advantages, grpo_loss
from posttrain.train.mixture import TaskSampler
from posttrain.types import Rollout

LogFn = Callable[[int, dict[str, float]], None]
RecordFn = Callable[[list[Rollout]], None]


@dataclass
class GRPOResult:
    steps: int
    seconds: float
    mean_reward_first: float
    mean_reward_last: float


def train_grpo(
    model: PreTrainedModel,
    tokenizer: Any,
    engine: Engine,
    sampler: TaskSampler,
    get_domain: Callable[[str], Domain],
    cfg: GRPOConfig,
    max_tokens: int,
    max_context: int | None = None,
    over_long: OverLongPolicy | None = None,
    log: LogFn | None = None,
    record: RecordFn | None = None,
) -> GRPOResult:
    pad_id = tokenizer.pad_token_id
    ref_model = copy.deepcopy(model).eval() if cfg.kl_coef > 0 else None
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.99))
    params = SamplingParams(
        max_tokens=max_tokens, temperature=cfg.temperature, top_p=cfg.top_p, n=cfg.group_size
    )
    prompts_per_step = cfg.batch_size // cfg.group_size
    start = time.perf_counter()
    rewards_seen: list[float] = []
    step = 0
    for step in range(1, cfg.steps + 1):
        if time.perf_counter() - start > cfg.max_minutes * 60:
            step -= 1
            break
        # 1. Rollouts: group_size episodes per task, verified.
        t0 = time.perf_counter()
        ceiling = ramp_ceiling(cfg, step, time.perf_counter() - start)
        if ceiling is not None:
            sampler.window = (max(1, ceiling - 2), ceiling)
        tasks = sampler.sample(prompts_per_step)
        groups = run_episodes(
            tasks,
            engine,
            tokenizer,
            params,
            get_domain,
            policy_version=step,
            max_context=max_context,
            over_long=over_long,
        )
        rollouts = [r for g in groups for r in g]  # [B*G], groups contiguous
        for task, group in zip(tasks, groups, strict=True):
            sampler.observe(task, [r.reward for r in group])
        if record is not None:
            record(rollouts)
        rollout_s = time.perf_counter() - t0

        # 2. Advantages; groups with no reward spread carry no gradient and are dropped.
        rewards = torch.tensor([r.reward for r in rollouts])  # [B*G]
        advantages = grpo_advantages(rewards, cfg.group_size, scale=cfg.scale_rewards)
        spread = rewards.view(-1, cfg.group_size).std(dim=1) > 0  # [B]
        keep = [i for i in range(len(rollouts)) if spread[i // cfg.group_size]]

        # 3. Policy update on the kept rollouts.
        t1 = time.perf_counter()
        stats: dict[str, float] = {"clip_frac": 0.0, "kl": 0.0, "loss": 0.0}
        updates = 0
        model.train()
        for _ in range(cfg.epochs):
            for i in range(0, len(keep), cfg.minibatch_size):
                idx = keep[i : i + cfg.minibatch_size]
                batch = pack([rollouts[j] for j in idx], pad_id)
                logprobs = batch_logprobs(model, batch, cfg.temperature)  # [b, T-1]
                ref_logprobs = None
                if ref_model is not None:
                    with torch.no_grad():
                        ref_logprobs = batch_logprobs(ref_model, batch, cfg.temperature)
                loss, parts = grpo_loss(
                    logprobs,
                    batch.old_logprobs,
                    advantages[idx],
                    batch.loss_mask,
                    clip_eps=cfg.clip_eps,
                    clip_eps_high=cfg.clip_eps_high,
                    ref_logprobs=ref_logprobs,
                    kl_coef=cfg.kl_coef,
                    aggregation=cfg.aggregation,
                )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                updates += 1
                stats["loss"] += float(loss.detach())
                stats["clip_frac"] += float(parts["clip_frac"])
                stats["kl"] += float(parts.get("kl", torch.tensor(0.0)))
        mean_reward = float(rewards.mean())
        rewards_seen.append(mean_reward)
        if log is not None:
            lengths = [sum(r.loss_mask) for r in rollouts]
            log(
                step,
                {
                    "reward": mean_reward,
                    "pass_rate": sum(r.verdict.passed for r in rollouts) / len(rollouts),
                    "groups_with_signal": float(spread.float().mean()),
                    "completion_tokens": sum(lengths) / len(lengths),
                    "errors": float(sum(r.error is not None for r in rollouts)),
                    "rollout_s": rollout_s,
                    "update_s": time.perf_counter() - t1,
                    "difficulty_mean": sum(t.difficulty for t in tasks) / len(tasks),
                    **{k: v / max(1, updates) for k, v in stats.items()},
                },
            )
    window = max(1, len(rewards_seen) // 5)
    return GRPOResult(
        steps=step,
        seconds=time.perf_counter() - start,
        mean_reward_first=sum(rewards_seen[:window]) / max(1, len(rewards_seen[:window])),
        mean_reward_last=sum(rewards_seen[-window:]) / max(1, len(rewards_seen[-window:])),
    )


def ramp_ceiling(cfg: GRPOConfig, step: int, elapsed_s: float) -> int | None:
    """The top difficulty of the length curriculum at `step` (None without one): it
    rises linearly from `cfg.ramp_from` to 10 over the first 80% of the stage, measured
    in steps or in minutes, whichever is further along; the rest trains at the top."""
    if cfg.ramp_from is None:
        return None
    done = max((step - 1) / cfg.steps, elapsed_s / (cfg.max_minutes * 60))
    return cfg.ramp_from + round((10 - cfg.ramp_from) * min(1.0, done / 0.8))
