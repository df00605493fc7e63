"""DPO on preference pairs mined from verifier outcomes, one loop top to bottom.

Mining: sample `samples_per_task` answers per task; chosen is a verified-correct
sample, rejected a verified-wrong one; when no sample passed, the domain's reference
(replayed through the episode loop) is the chosen answer. Tasks whose samples all
passed give no pair. Training: the standard DPO loss against the frozen starting
policy, optionally plus an NLL term on the chosen answer (`sft_weight`, as in RPO).
Preference accuracy — the share of held-out pairs whose chosen answer the policy
finds more likely than the rejected one — is measured before and after.
Each batch trains in forward/backward passes of at most `micro_batch_tokens` padded
tokens (`pair_micro_batches`), gradients accumulated to the whole batch's.

Data parallel (`posttrain.train.distributed`, under torchrun): every rank shuffles
the same pair order, takes its share of each batch and scales its loss so that the
averaged gradient is the single-process one; logged metrics are reduced across
ranks and only rank 0 calls `log`.

Not guaranteed: under data parallelism every rank still computes the reference
logprobs and the preference accuracy over all pairs (the same work on each rank).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel

from posttrain.config import DPOConfig
from posttrain.domains.base import Domain
from posttrain.engines.base import Engine, SamplingParams
from posttrain.engines.replay import ReplayEngine
from posttrain.ranks import all_reduce_sum, any_rank, shard_map, world_size
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.rollout.episode import run_episodes
from posttrain.train.batches import (
    batch_logprobs,
    model_device,
    pack,
    sequence_length,
    sequence_logprob_sums,
    token_budget_split,
)
from posttrain.train.distributed import gradient_sync, local_share, main_only
from posttrain.train.losses import dpo_loss
from posttrain.train.preemption import StopSignals
from posttrain.train.step_guard import StepGuard
from posttrain.types import Rollout, Task

LogFn = Callable[[int, dict[str, float]], None]


@dataclass
class PreferencePair:
    chosen: Rollout
    rejected: Rollout


@dataclass
class DPOResult:
    pairs: int
    steps: int
    seconds: float
    preference_accuracy_before: float
    preference_accuracy_after: float


def mine_pairs(
    tasks: Sequence[Task],
    engine: Engine,
    tokenizer: Any,
    get_domain: Callable[[str], Domain],
    samples: int,
    temperature: float,
    max_tokens: int,
    max_context: int | None = None,
    over_long: OverLongPolicy | None = None,
) -> list[PreferencePair]:
    params = SamplingParams(max_tokens=max_tokens, temperature=temperature, n=samples)
    groups = shard_map(  # under torchrun each rank samples its share of the tasks
        tasks,
        lambda mine: run_episodes(
            mine, engine, tokenizer, params, get_domain, max_context=max_context,
            over_long=over_long,
        ),
    )  # fmt: skip
    need_reference = [
        t for t, g in zip(tasks, groups, strict=True) if not any(r.verdict.passed for r in g)
    ]
    # Replayed under the samples' window and over-long policy, so that both sides of a
    # pair share the (fitted) prompt and fit the model's context.
    replay = ReplayEngine(tokenizer)
    for task in need_reference:
        replay.add(task.id, get_domain(task.domain).reference(task))
    replayed = run_episodes(
        need_reference, replay, tokenizer, SamplingParams(max_tokens=max_tokens, temperature=0.0),
        get_domain, max_context=max_context, over_long=over_long,
    )  # fmt: skip
    references = {g[0].task_id: g[0] for g in replayed}
    pairs = []
    for task, group in zip(tasks, groups, strict=True):
        # A crash or a verifier that raised gave no verdict: not a wrong answer.
        wrong = (r for r in group if not r.verdict.passed and r.scored)
        failed = sorted(wrong, key=lambda r: r.reward)
        if not failed:
            continue
        passed = [r for r in group if r.verdict.passed]
        chosen = passed[0] if passed else references[task.id]
        if chosen.verdict.passed:
            pairs.append(PreferencePair(chosen, failed[0]))
    return pairs


def preference_accuracy(
    model: PreTrainedModel,
    pairs: Sequence[PreferencePair],
    pad_id: int,
    max_tokens: int | None = 4096,
) -> float:
    """Share of pairs whose chosen answer has the higher summed logprob."""
    if not pairs:
        return float("nan")
    chosen = sequence_logprob_sums(model, [p.chosen for p in pairs], pad_id, max_tokens)
    rejected = sequence_logprob_sums(model, [p.rejected for p in pairs], pad_id, max_tokens)
    return float((chosen > rejected).float().mean())


def pair_micro_batches(
    pairs: Sequence[PreferencePair], idx: Sequence[int], budget: int | None
) -> list[list[int]]:
    """The pair indices `idx` of one batch as micro-batches whose chosen and rejected
    rows, padded to the longest, hold at most `budget` tokens (a longer pair alone)."""
    lengths = [
        max(sequence_length(pairs[j].chosen), sequence_length(pairs[j].rejected)) for j in idx
    ]
    half = None if budget is None else budget // 2  # each pair is two rows
    return [[idx[k] for k in group] for group in token_budget_split(lengths, half)]


def train_dpo(
    model: PreTrainedModel,
    pairs: Sequence[PreferencePair],
    val_pairs: Sequence[PreferencePair],
    cfg: DPOConfig,
    pad_id: int,
    seed: int = 0,
    log: LogFn | None = None,
    stop: StopSignals | None = None,
) -> DPOResult:
    start = time.perf_counter()
    log = main_only(log)
    model.eval()
    tokens_cap = cfg.micro_batch_tokens
    device = model_device(model)
    before = preference_accuracy(model, val_pairs, pad_id, tokens_cap)
    if not pairs:
        return DPOResult(0, 0, time.perf_counter() - start, before, before)
    # The frozen reference is the starting policy: its logprobs are computed once.
    ref_chosen: torch.Tensor | None = None
    ref_rejected: torch.Tensor | None = None
    if not cfg.reference_free:
        ref_chosen = sequence_logprob_sums(model, [p.chosen for p in pairs], pad_id, tokens_cap)
        ref_rejected = sequence_logprob_sums(model, [p.rejected for p in pairs], pad_id, tokens_cap)
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=cfg.lr, betas=(0.9, 0.95)
    )
    guard = StepGuard("dpo")
    rng = random.Random(seed)
    model.train()
    step = 0
    for _epoch in range(cfg.epochs):
        order = list(range(len(pairs)))
        rng.shuffle(order)
        for i in range(0, len(order), cfg.batch_size):
            if stop is not None and stop.poll():  # SIGTERM: DPO is redone on resume
                raise stop.preempted("dpo", step)
            if any_rank(time.perf_counter() - start > cfg.max_minutes * 60):
                break
            chunk = order[i : i + cfg.batch_size]
            # Totals over the whole batch; each rank takes its share of every micro-batch.
            chosen_total = float(sum(sum(pairs[j].chosen.loss_mask) for j in chunk))
            micros = pair_micro_batches(pairs, chunk, cfg.micro_batch_tokens)
            optimizer.zero_grad(set_to_none=True)
            total = margins = right = count = 0.0
            for k, micro in enumerate(micros):
                # `weight` 0 marks a stand-in pair when a rank has none of this micro-batch.
                idx, weight = local_share(micro)
                b = len(idx)
                batch = pack(
                    [pairs[j].chosen for j in idx] + [pairs[j].rejected for j in idx],
                    pad_id,
                    device,
                )
                logprobs = batch_logprobs(model, batch)  # [2b, T-1]
                sums = (logprobs * batch.loss_mask).sum(-1)  # [2b]
                tokens = batch.loss_mask.sum(-1)  # [2b]
                pair_loss, margin = dpo_loss(
                    sums[:b],
                    sums[b:],
                    None if ref_chosen is None else ref_chosen[idx],
                    None if ref_rejected is None else ref_rejected[idx],
                    cfg.beta,
                    loss_type=cfg.loss,
                    label_smoothing=cfg.label_smoothing,
                    chosen_tokens=tokens[:b],
                    rejected_tokens=tokens[b:],
                    positive_lambda=cfg.positive_lambda,
                )
                loss = pair_loss * weight * b / len(chunk)  # this part of the batch mean
                if cfg.sft_weight > 0:
                    nll = -(logprobs[:b] * batch.loss_mask[:b]).sum() / max(chosen_total, 1.0)
                    loss = loss + cfg.sft_weight * weight * nll
                with gradient_sync(model, enabled=k == len(micros) - 1):
                    (loss * world_size()).backward()  # DDP and FSDP average the ranks' gradients
                total += float(loss.detach())
                margins += weight * float(margin.sum())
                right += weight * float((margin > 0).sum())
                count += weight * b
            guard.step(model, optimizer)
            step += 1
            total, margins, right, count = all_reduce_sum([total, margins, right, count])
            if log is not None:
                log(
                    step,
                    {
                        "loss": total,
                        "margin": margins / count,
                        "reward_accuracy": right / count,
                        **guard.metrics(),
                    },
                )
    model.eval()
    after = preference_accuracy(model, val_pairs, pad_id, tokens_cap)
    return DPOResult(len(pairs), step, time.perf_counter() - start, before, after)
