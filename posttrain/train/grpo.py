"""GRPO: group-relative policy optimization on verifier rewards, one loop top to bottom.

Each step samples `batch_size / group_size` tasks from the stage's task stream,
runs `group_size` episodes per task through the real episode loop (tool calls
included), turns verdict rewards into group-normalized advantages, drops groups
whose rewards are all equal (they carry no signal), and takes clipped-surrogate
steps on the rest, with an optional k3 KL penalty to the policy the stage started
from. The rollout's own sampling logprobs are the "old" logprobs of the ratio.

`cfg.loss` picks the variant (`loss_plan`): the advantage baseline, the loss
aggregation and the ratio level. With `cfg.tis_cap` the old logprobs are instead
recomputed by the training model before the step's first update, and each token's
loss is weighted by the truncated ratio of those to the rollout logprobs (TIS). With
`cfg.guidance` a group whose samples all failed gets its task's reference in place of
one sample (`train/guidance.py`), so that it has a gradient too.
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch
from transformers import PreTrainedModel

from posttrain.config import GRPOConfig, RolloutConfig
from posttrain.domains.base import Domain
from posttrain.engines.base import Engine, SamplingParams
from posttrain.ranks import all_reduce_sum, is_distributed, world_size
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.train.batches import micro_split, model_device, pack
from posttrain.train.distributed import PolicyReplica, gradient_sync, local_share, main_only, unwrap
from posttrain.train.group_rewards import (
    cut_off,
    has_spread,
    select_groups,
    trainable,
    trained_reward,
)
from posttrain.train.guidance import Guidance
from posttrain.train.losses import (
    batch_advantages,
    group_spread,
    grpo_advantages,
    grpo_loss,
    micro_batch_weight,
    rloo_advantages,
)
from posttrain.train.mixture import TaskSampler
from posttrain.train.preemption import StopSignals
from posttrain.train.resume import (
    GRPOState,
    capture_rank_rng,
    load_train_state,
    restore_rank_rng,
    train_state,
)
from posttrain.train.rollout_metrics import (
    by_family,
    error_rates,
    policy_probe,
    probe_means,
    tool_metrics,
)
from posttrain.train.rollout_source import make_source
from posttrain.train.shared_prefix import (
    can_share,
    group_split,
    rollout_logprobs,
    share_plan,
)
from posttrain.train.step_guard import StepGuard
from posttrain.types import Rollout

LogFn = Callable[[int, dict[str, float]], None]
RecordFn = Callable[[list[Rollout]], dict[str, float] | None]  # -> metrics logged with the step
StepHook = Callable[[int], None]


@dataclass(frozen=True)
class LossPlan:
    """How `cfg.loss` maps onto the loss math of `train/losses.py`."""

    baseline: str  # "group" (GRPO), "rloo" (leave-one-out) or "batch" (REINFORCE++)
    scale: bool  # divide group-baselined advantages by the group std
    aggregation: str  # "token", "sequence" or "constant" (Dr. GRPO)
    ratio_level: str  # "token", or "sequence" (GSPO)


def loss_plan(cfg: GRPOConfig) -> LossPlan:
    """The variant's advantages, aggregation and ratio level; "grpo" is the configured
    `scale_rewards` and `aggregation` as they are."""
    plans = {
        "grpo": LossPlan("group", cfg.scale_rewards, cfg.aggregation, "token"),
        "dr_grpo": LossPlan("group", False, "constant", "token"),
        "dapo": LossPlan("group", cfg.scale_rewards, "token", "token"),
        "rloo": LossPlan("rloo", False, cfg.aggregation, "token"),
        "gspo": LossPlan("group", cfg.scale_rewards, "sequence", "sequence"),
        "reinforce_pp": LossPlan("batch", True, cfg.aggregation, "token"),
    }
    return plans[cfg.loss]


def step_advantages(
    rewards: torch.Tensor, cfg: GRPOConfig, scored: list[bool] | None = None
) -> tuple[torch.Tensor, list[int]]:
    """Advantages [B*G] of the variant, and the rollouts worth training on: those of
    groups with reward spread (a group baseline gives the rest zero advantage), or
    with the batch baseline every rollout as long as the batch has spread. `scored`
    False marks a rollout with no reward to train on (`group_rewards.trainable`: a
    crash, a verifier that raised, a trained reward that is no finite number): its
    reward judges nothing, so it is left out of the baselines (each over the group's,
    or batch's, other rollouts) and of the loss, never taken for a wrong answer."""
    plan = loss_plan(cfg)
    if scored is not None and not all(scored):
        n, size = rewards.numel(), rewards.numel() if plan.baseline == "batch" else cfg.group_size
        advantages, keep = torch.zeros(n), []
        for start in range(0, n, size):
            idx = [i for i in range(start, start + size) if scored[i]]
            sub = rewards[idx]  # [k]
            if len(idx) < 2 or not bool(group_spread(sub, len(idx)).any()):
                continue
            if plan.baseline == "batch":
                advantages[idx] = batch_advantages(sub)
            elif plan.baseline == "rloo":
                advantages[idx] = rloo_advantages(sub, len(idx))
            else:
                advantages[idx] = grpo_advantages(sub, len(idx), scale=plan.scale)
            keep += idx
        return advantages, keep
    if plan.baseline == "batch":
        advantages = batch_advantages(rewards)
        has_signal = bool(group_spread(rewards, rewards.numel()).any())
        return advantages, list(range(rewards.numel())) if has_signal else []
    if plan.baseline == "rloo":
        advantages = rloo_advantages(rewards, cfg.group_size)
    else:
        advantages = grpo_advantages(rewards, cfg.group_size, scale=plan.scale)
    spread = group_spread(rewards, cfg.group_size)  # [B]
    return advantages, [i for i in range(rewards.numel()) if spread[i // cfg.group_size]]


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
    after_step: StepHook | None = None,
    resume: GRPOState | None = None,
    save_state: Callable[[GRPOState], None] | None = None,
    rollout: RolloutConfig | None = None,
    replica: PolicyReplica | None = None,
    stop: StopSignals | None = None,
) -> GRPOResult:
    """`after_step(step)` runs after each update (the recipe's monitor evaluation); its
    time does not count against `cfg.max_minutes`. With `save_state`, the full state
    (`train/resume.py`) goes to it every `cfg.save_every` steps, and at the end of the
    step in which `stop` was signalled (`train/preemption.py`; before `after_step`, which
    the resume then runs first, or after it), before this raises `Preempted`; `resume`
    continues from such a state exactly: the same tasks, samples and updates as without
    the stop.
    `rollout` (lockstep without one) picks how the episodes run (`train/rollout_source.py`):
    lockstep, or the scheduler, synchronous or asynchronous within a staleness bound.

    Under torchrun `model` is `replica.trained` (DDP or FSDP, `train/distributed.py`)
    and the engine samples from `replica.plain`: each rank runs the episodes of its
    share of the step's groups, every rank gets all of them, and each micro-batch is
    split over the ranks with its loss scaled so that the averaged gradient is the
    single-process one for the same rollouts. Only rank 0 logs, records and saves."""
    pad_id = tokenizer.pad_token_id
    plan = loss_plan(cfg)
    plain = cast(PreTrainedModel, replica.plain if replica is not None else unwrap(model))
    trained = cast(PreTrainedModel, unwrap(model))  # what the forwards run (checkpointing?)
    log, record, store = main_only(log), main_only(record), main_only(save_state)
    ranks = float(world_size())  # DDP and FSDP average the ranks' gradients
    ref_model = copy.deepcopy(plain).eval() if cfg.kl_coef > 0 else None
    device = model_device(model)  # the batches and advantages go where the weights are
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=cfg.lr, betas=(0.9, 0.99)
    )
    guard = StepGuard("grpo")
    params = SamplingParams(
        max_tokens=max_tokens, temperature=cfg.temperature, top_p=cfg.top_p, n=cfg.group_size
    )
    prompts_per_step = cfg.batch_size // cfg.group_size
    guidance = None
    if cfg.guidance:  # references in all-failed groups (`train/guidance.py`)
        reward_of = functools.partial(trained_reward, component=cfg.reward_component)
        guidance = Guidance(
            plain, tokenizer, get_domain, reward_of, pad_id, cfg.temperature, max_tokens,
            max_context, cfg.micro_batch_tokens,
        )  # fmt: skip
    shaping = cfg.reward_component
    start = time.perf_counter()
    rewards_seen: list[float] = []
    first = 1
    if resume is not None:
        load_train_state(model, optimizer, resume.model, resume.optimizer)
        if replica is not None:
            replica.sync()
        if ref_model is not None and resume.ref_model is not None:
            ref_model.load_state_dict(resume.ref_model)
        sampler.load_state_dict(resume.sampler)
        restore_rank_rng(resume.rng, engine, resume.step)
        start -= resume.elapsed_s
        rewards_seen = list(resume.rewards_seen)
        guard.load_state_dict(resume.guard)
        first = resume.step + 1
    step = first - 1
    paused = time.perf_counter()
    source = make_source(
        rollout, plain, engine, tokenizer, sampler, get_domain, params, max_context, over_long,
        prompts_per_step,
    )  # fmt: skip
    start += time.perf_counter() - paused  # starting Ray workers is not training time

    def save(done: int, after_step_pending: bool = False) -> None:
        """The full state after step `done` to `store`; its time is not training time."""
        nonlocal start
        paused = time.perf_counter()
        model_state, optimizer_state = train_state(model, optimizer)  # a collective
        assert store is not None
        store(
            GRPOState(
                step=done,
                elapsed_s=paused - start,
                rewards_seen=list(rewards_seen),
                model=model_state,
                optimizer=optimizer_state,
                sampler=sampler.state_dict(),
                rng=capture_rank_rng(engine),  # every rank's generators
                ref_model=ref_model.state_dict() if ref_model is not None else None,
                guard=guard.state_dict(),
                after_step_pending=after_step_pending,
            )
        )
        start += time.perf_counter() - paused

    def run_after_step(done: int) -> None:
        """`after_step(done)`; its time is not training time."""
        nonlocal start
        assert after_step is not None
        paused = time.perf_counter()
        after_step(done)
        start += time.perf_counter() - paused

    try:
        if resume is not None and resume.after_step_pending and after_step is not None:
            run_after_step(resume.step)  # the stop came before it: its monitor row is not lost
        for step in range(first, cfg.steps + 1):
            # One clock for all ranks (their mean): the stop and the ramp must agree.
            elapsed = all_reduce_sum([time.perf_counter() - start])[0] / ranks
            if elapsed > cfg.max_minutes * 60:
                step -= 1
                break
            # 1. Rollouts: group_size episodes per task, verified.
            t0 = time.perf_counter()
            ceiling = ramp_ceiling(cfg, step, elapsed)
            if ceiling is not None:
                sampler.window = (max(1, ceiling - 2), ceiling)
            guided: dict[str, float] = {}  # guidance's counts over the step's draws
            sampled = source.batch(prompts_per_step, version=step)
            candidates = guidance.apply(sampled, guided) if guidance else sampled
            for _ in range(cfg.refill_rounds):  # DAPO dynamic sampling
                spread_groups = [g for g in candidates if has_spread(g[1], shaping)]
                if len(spread_groups) >= prompts_per_step:
                    break
                more = source.batch(prompts_per_step - len(spread_groups), version=step)
                sampled = sampled + more
                candidates = candidates + (guidance.apply(more, guided) if guidance else more)
            batch_groups = select_groups(
                candidates, prompts_per_step, cfg.refill_rounds > 0, shaping
            )
            as_sampled = {id(task): group for task, group in sampled}
            drawn = [r for task, _ in batch_groups for r in as_sampled[id(task)]]  # logged
            tasks = [task for task, _ in batch_groups]
            rollouts = [r for _, g in batch_groups for r in g]  # [B*G], groups contiguous
            every = [r for _, g in sampled for r in g]
            for task, group in sampled:  # pass rates from verdicts only, not from crashes
                judged = [r for r in group if r.scored]
                sampler.observe(
                    task, [r.reward for r in judged], [len(r.completion_ids) for r in judged]
                )
            recorded = record(every) if record is not None else None  # e.g. traces/<kind>
            rollout_s = time.perf_counter() - t0

            # 2. Advantages; groups with no reward spread carry no gradient and are dropped.
            # False: a crash, a verifier that raised, a trained reward that is no number
            scored = [trainable(r, shaping) for r in rollouts]
            rewards = torch.tensor([trained_reward(r, shaping) if ok else 0.0
                                    for r, ok in zip(rollouts, scored, strict=True)])  # fmt: skip
            advantages, keep = step_advantages(rewards, cfg, scored)
            advantages = advantages.to(device)
            truncated = [cut_off(r) for r in rollouts]
            if cfg.overlong_filter:  # DAPO: a cut-off answer's reward says little about its tokens
                keep = [i for i in keep if not truncated[i]]
            spread = group_spread(rewards, cfg.group_size, torch.tensor(scored))  # [B]

            # 3. Policy update on the kept rollouts.
            t1 = time.perf_counter()
            lr = cfg.lr * min(1.0, step / cfg.warmup_steps) if cfg.warmup_steps else cfg.lr
            for param_group in optimizer.param_groups:  # a function of the step: resumes exactly
                param_group["lr"] = lr
            stats: dict[str, float] = {"clip_frac": 0.0, "kl": 0.0, "loss": 0.0}
            probe: dict[str, float] = {}
            updates = 0
            model.train()
            # TIS: "old" is the training model before this step's first update, so the
            # ratio to the rollout logprobs measures only the train/inference mismatch.
            train_old: dict[tuple[int, ...], torch.Tensor] = {}
            minibatches = [
                keep[i : i + cfg.minibatch_size] for i in range(0, len(keep), cfg.minibatch_size)
            ]
            split = group_split if can_share(cfg, trained) else micro_split  # sized as run
            plans = [split(rollouts, idx, cfg.micro_batch_tokens) for idx in minibatches]
            if cfg.tis_cap is not None:
                stats.update(tis_weight_mean=0.0, tis_clipped_frac=0.0)
                with torch.no_grad():
                    for micros in plans:
                        for micro in micros:
                            sharing = share_plan(cfg, trained, [rollouts[j] for j in micro])
                            rows = [rollouts[j] for j in local_share(micro)[0]]
                            batch = pack(rows, pad_id, device)
                            old, _ = rollout_logprobs(model, rows, batch, sharing)
                            train_old[tuple(micro)] = old
            for _ in range(cfg.epochs):
                for micros in plans:
                    # Totals are over the whole minibatch; each rank packs its share of a micro.
                    total_tokens = float(sum(sum(rollouts[j].loss_mask) for m in micros for j in m))
                    total_sequences = sum(len(m) for m in micros)
                    optimizer.zero_grad(set_to_none=True)
                    for k, micro in enumerate(micros):
                        mine, present = local_share(micro)  # present 0.0: a stand-in row
                        sharing = share_plan(cfg, trained, [rollouts[j] for j in micro])
                        rows = [rollouts[j] for j in mine]
                        batch = pack(rows, pad_id, device)
                        if not probe:
                            out: list[torch.Tensor] = []
                            probe = policy_probe(model, rows, batch, sharing, out, present)
                            logprobs = out[0]
                        else:
                            logprobs = rollout_logprobs(model, rows, batch, sharing)[0]  # [b, T-1]
                        ref_logprobs = None
                        if ref_model is not None:
                            with torch.no_grad():
                                ref_logprobs, _ = rollout_logprobs(ref_model, rows, batch, sharing)
                        tis: dict[str, Any] = {}
                        if cfg.tis_cap is not None:
                            tis = {"rollout_logprobs": batch.old_logprobs, "tis_cap": cfg.tis_cap}
                        loss, parts = grpo_loss(
                            logprobs,
                            train_old.get(tuple(micro), batch.old_logprobs),
                            advantages[mine],
                            batch.loss_mask,
                            clip_eps=cfg.clip_eps,
                            clip_eps_high=cfg.clip_eps_high,
                            ref_logprobs=ref_logprobs,
                            kl_coef=cfg.kl_coef,
                            aggregation=plan.aggregation,
                            ratio_level=plan.ratio_level,
                            max_tokens=max_tokens,
                            **tis,
                        )
                        # Σ weight × micro loss is the whole minibatch's loss; the stats
                        # (masked means) are weighted by the micro-batch's tokens.
                        weight = present * micro_batch_weight(
                            batch.loss_mask, total_tokens, total_sequences, plan.aggregation
                        )
                        with gradient_sync(model, enabled=k == len(micros) - 1):
                            (loss * weight * ranks).backward()
                        share = present * float(batch.loss_mask.sum()) / max(total_tokens, 1.0)
                        stats["loss"] += float(loss.detach()) * weight
                        for key in ("clip_frac", "kl", "tis_weight_mean", "tis_clipped_frac"):
                            if key in parts:
                                stats[key] += float(parts[key]) * share
                    guard.step(model, optimizer)
                    updates += 1
            if not probe:  # nothing was trained on: probe the batch anyway, it is the signal
                with torch.no_grad():
                    head = rollouts[: cfg.minibatch_size]
                    first_rows, present = local_share(head)
                    sharing = share_plan(cfg, trained, head)
                    batch = pack(first_rows, pad_id, device)
                    probe = policy_probe(model, first_rows, batch, sharing, weight=present)
            if is_distributed():  # every rank's contributions
                stats = dict(zip(stats, all_reduce_sum(list(stats.values())), strict=True))
                probe = dict(zip(probe, all_reduce_sum(list(probe.values())), strict=True))
            probe = probe_means(probe)
            if replica is not None:
                replica.sync()
            source.updated(plain, version=step + 1)
            mean_reward = sum(r.reward for r in every) / len(every)
            rewards_seen.append(mean_reward)
            if log is not None:
                lengths = [sum(r.loss_mask) for r in drawn]
                log(
                    step,
                    {
                        "reward": mean_reward,
                        "pass_rate": sum(r.verdict.passed for r in every) / len(every),
                        "truncated_frac": sum(map(cut_off, drawn)) / len(drawn),
                        "groups_sampled": float(len(sampled)),
                        "groups_with_signal": float(spread.float().mean()),
                        "completion_tokens": sum(lengths) / len(lengths),
                        "errors": float(sum(r.error is not None for r in drawn)),
                        **error_rates(drawn),
                        **tool_metrics(drawn),
                        "rollout_s": rollout_s,
                        "update_s": time.perf_counter() - t1,
                        "tokens_per_s": sum(lengths) / max(rollout_s, 1e-9),
                        "difficulty_mean": sum(t.difficulty for t in tasks) / len(tasks),
                        "lr": lr,
                        **{k: v / max(1, updates) for k, v in stats.items()},
                        **probe,
                        **guard.metrics(),
                        **by_family(drawn),
                        **source.metrics(),
                        **guided,
                        **(recorded or {}),
                    },
                )
            stopping = stop is not None and stop.poll()  # SIGTERM: save now, then stop
            if after_step is not None and not stopping:
                run_after_step(step)
                stopping = stop is not None and stop.poll()  # a signal in the monitor eval
                pending = False
            else:
                pending = after_step is not None  # the resume runs it first
            if store is not None and (stopping or cfg.save_every and step % cfg.save_every == 0):
                save(step, pending)
            if stopping:
                assert stop is not None
                raise stop.preempted("grpo", step, saved=store is not None)
        seconds = time.perf_counter() - start
    finally:
        source.close()  # stopping workers is not training time either
    window = max(1, len(rewards_seen) // 5)
    return GRPOResult(
        steps=step,
        seconds=seconds,
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
