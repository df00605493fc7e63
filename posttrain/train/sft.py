"""Supervised fine-tuning on demonstrations: loss on assistant tokens only.

The examples are rollouts (normally domain references replayed through the episode
loop), so SFT sees exactly the token layout that sampling produces. Each batch is a
random mix of domains, run as length-sorted micro-batches (little padding).

The loop is AdamW with linear warm-up and a linear decay to 10% over `max_steps`;
the wall-clock cap only stops the stage early (the schedule never reads the clock,
so a seed gives the same run on a slow or a fast machine). Stop rule: validation
loss is checked every `eval_every` steps; after `patience` checks without
improvement the stage stops and the best weights are restored.
`stop_on_plateau=False` turns the rule off: the control arm trains until
`should_stop()` says so instead, at the `constant_lr` that SFT ended with.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel

from posttrain.config import SFTConfig
from posttrain.train.batches import batch_logprobs, pack
from posttrain.types import Rollout

LogFn = Callable[[int, dict[str, float]], None]


@dataclass
class SFTResult:
    steps: int
    seconds: float
    train_loss: float
    best_val_loss: float
    stop_reason: str  # "plateau", "max_steps" or "time"
    final_lr: float


def validation_loss(
    model: PreTrainedModel, examples: Sequence[Rollout], pad_id: int, chunk: int = 128
) -> float:
    total, count = 0.0, 0.0
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for i in range(0, len(examples), chunk):
            batch = pack(examples[i : i + chunk], pad_id)
            lp = batch_logprobs(model, batch)
            total += float(-(lp * batch.loss_mask).sum())
            count += float(batch.loss_mask.sum())
    model.train(was_training)
    return total / max(count, 1.0)


def train_sft(
    model: PreTrainedModel,
    examples: Sequence[Rollout],
    val_examples: Sequence[Rollout],
    cfg: SFTConfig,
    pad_id: int,
    seed: int = 0,
    max_seconds: float | None = None,
    stop_on_plateau: bool = True,
    log: LogFn | None = None,
    should_stop: Callable[[], bool] | None = None,
    constant_lr: float | None = None,
) -> SFTResult:
    if not examples:
        raise ValueError("SFT needs at least one example")
    budget = max_seconds if max_seconds is not None else cfg.max_minutes * 60
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=cfg.lr,
        betas=(0.9, 0.95),
        weight_decay=cfg.weight_decay,
    )
    rng = random.Random(seed)
    order: list[int] = []
    best_val, best_state, bad_checks = float("inf"), None, 0
    start = time.perf_counter()
    step, loss_ema, stop_reason, lr = 0, float("nan"), "max_steps", cfg.lr
    model.train()
    while step < cfg.max_steps:
        elapsed = time.perf_counter() - start
        if elapsed >= budget or (should_stop is not None and should_stop()):
            stop_reason = "time"
            break
        progress = step / cfg.max_steps  # by steps only, so a run does not depend on timing
        warm = min(1.0, (step + 1) / max(1, cfg.warmup_steps))
        lr = cfg.lr * warm * (1.0 - 0.9 * progress) if constant_lr is None else constant_lr
        for group in optimizer.param_groups:
            group["lr"] = lr
        if len(order) < cfg.batch_size:
            fresh = list(range(len(examples)))
            rng.shuffle(fresh)
            order += fresh
        picked, order = order[: cfg.batch_size], order[cfg.batch_size :]
        optimizer.zero_grad(set_to_none=True)
        loss = _accumulate(model, [examples[i] for i in picked], pad_id, cfg.micro_batches)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        step += 1
        value = float(loss)
        loss_ema = value if loss_ema != loss_ema else 0.9 * loss_ema + 0.1 * value
        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            stats = {"loss": loss_ema, "lr": lr}
            if val_examples:
                val = validation_loss(model, val_examples, pad_id)
                stats["val_loss"] = val
                if val < best_val - 1e-4:
                    best_val, bad_checks = val, 0
                    if stop_on_plateau:
                        best_state = _trainable_state(model)
                else:
                    bad_checks += 1
            if log is not None:
                log(step, stats)
            if stop_on_plateau and bad_checks >= cfg.patience:
                stop_reason = "plateau"
                break
    if stop_on_plateau and val_examples and stop_reason != "plateau":
        # Stopped by a budget: the last steps may be the best ones; check before restoring.
        val = validation_loss(model, val_examples, pad_id)
        if val < best_val:
            best_val, best_state = val, None
    if best_state is not None:
        model.load_state_dict(best_state, strict=False)
    return SFTResult(step, time.perf_counter() - start, loss_ema, best_val, stop_reason, lr)


def _trainable_state(model: PreTrainedModel) -> dict[str, torch.Tensor]:
    """Copies of the weights training changes (all of them, or a LoRA run's adapters):
    a frozen base is never copied."""
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    return {k: v.detach().clone() for k, v in model.state_dict().items() if k in names}


def _accumulate(
    model: PreTrainedModel, batch: Sequence[Rollout], pad_id: int, micro: int = 4
) -> torch.Tensor:
    """Backward of the batch's token-mean NLL, in `micro` length-sorted micro-batches.

    The batch keeps its random mix of domains (one optimizer step sees them all),
    while each micro-batch holds similar lengths and so pads little. Returns the
    batch loss (detached), equal to the loss of one full-batch forward.
    """
    ordered = sorted(batch, key=lambda r: len(r.prompt_ids) + len(r.completion_ids))
    tokens = float(sum(sum(r.loss_mask) for r in batch)) or 1.0
    size = -(-len(ordered) // micro)
    total = torch.zeros(())
    for i in range(0, len(ordered), size):
        part = pack(ordered[i : i + size], pad_id)
        nll = -(batch_logprobs(model, part) * part.loss_mask).sum() / tokens
        nll.backward()
        total += nll.detach()
    return total
