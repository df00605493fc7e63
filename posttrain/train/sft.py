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

Data parallel (`posttrain.train.distributed`, under torchrun): every rank draws the
same global batch order from `seed`, takes its share of each batch and scales its
loss so that the averaged gradient is the single-process one; losses and stop
decisions are reduced across ranks and only rank 0 calls `log`. `on_step` gets an
`SFTLoop` and the optimizer after every step (to checkpoint); `resume=` with a
restored `optimizer=` continues such a run where it stopped. Once `stop` was signalled
(`train/preemption.py`) the next step boundary raises `Preempted` with the `SFTLoop`
there as its `state`, for the caller to save with the optimizer.

Not guaranteed: a resumed run does not bring back the plateau rule's best weights
(it keeps its best validation loss); with several ranks `batch_size` must be a
multiple of the world size.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from transformers import PreTrainedModel

from posttrain.config import SFTConfig
from posttrain.ranks import all_reduce_sum, any_rank, world_size
from posttrain.train.batches import (
    TokenBatch,
    batch_logprobs,
    model_device,
    pack,
    plan_rows,
    rows_batch,
    sequence_length,
)
from posttrain.train.distributed import DistributedError, gradient_sync, local_share, main_only
from posttrain.train.preemption import StopSignals
from posttrain.train.step_guard import StepGuard
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


@dataclass
class SFTLoop:
    """Where an SFT run stands between steps: all a resume needs besides the weights
    and the optimizer. JSON-friendly through `to_dict` / `from_dict`."""

    step: int = 0
    order: list[int] = field(default_factory=list)  # the epoch's examples not yet drawn
    rng_state: Any = None  # random.Random.getstate() of the data order
    loss_ema: float = float("nan")
    best_val: float = float("inf")
    bad_checks: int = 0
    guard: dict[str, Any] = field(default_factory=dict)  # StepGuard.state_dict()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SFTLoop:
        loop = cls(**data)
        if loop.rng_state is not None:  # JSON turned getstate()'s tuples into lists
            version, internal, gauss = loop.rng_state
            loop.rng_state = (version, tuple(internal), gauss)
        return loop


def sft_optimizer(model: torch.nn.Module, cfg: SFTConfig) -> torch.optim.Optimizer:
    """The optimizer `train_sft` makes; build it yourself to restore its state first."""
    return torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=cfg.lr,
        betas=(0.9, 0.95),
        weight_decay=cfg.weight_decay,
    )


def validation_loss(
    model: PreTrainedModel, examples: Sequence[Rollout], pad_id: int, chunk: int = 128
) -> float:
    """Token-mean NLL over `examples` (each rank scores its share of every chunk)."""
    total, count = 0.0, 0.0
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for i in range(0, len(examples), chunk):
            part, weight = local_share(examples[i : i + chunk])
            batch = pack(part, pad_id, model_device(model))
            lp = batch_logprobs(model, batch)
            total += weight * float(-(lp * batch.loss_mask).sum())
            count += weight * float(batch.loss_mask.sum())
    model.train(was_training)
    total, count = all_reduce_sum([total, count])
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
    optimizer: torch.optim.Optimizer | None = None,
    resume: SFTLoop | None = None,
    on_step: Callable[[SFTLoop, torch.optim.Optimizer], None] | None = None,
    stop: StopSignals | None = None,
) -> SFTResult:
    if not examples:
        raise ValueError("SFT needs at least one example")
    if cfg.batch_size % world_size():
        raise DistributedError(
            f"sft.batch_size={cfg.batch_size} is not a multiple of the {world_size()} ranks"
        )
    log = main_only(log)
    budget = max_seconds if max_seconds is not None else cfg.max_minutes * 60
    optimizer = optimizer if optimizer is not None else sft_optimizer(model, cfg)
    guard = StepGuard("sft")
    rng = random.Random(seed)
    loop = resume if resume is not None else SFTLoop()
    guard.load_state_dict(loop.guard)
    if loop.rng_state is not None:
        rng.setstate(loop.rng_state)
    order, step, loss_ema = list(loop.order), loop.step, loop.loss_ema
    best_val, best_state, bad_checks = loop.best_val, None, loop.bad_checks
    start = time.perf_counter()
    stop_reason, lr = "max_steps", cfg.lr
    model.train()
    while step < cfg.max_steps:
        if stop is not None and stop.poll():  # SIGTERM: the caller saves this state
            done = SFTLoop(step, list(order), rng.getstate(), loss_ema, best_val, bad_checks,
                           guard.state_dict())  # fmt: skip
            raise stop.preempted("sft", step, state=done)
        elapsed = time.perf_counter() - start
        if any_rank(elapsed >= budget or (should_stop is not None and should_stop())):
            stop_reason = "time"
            break
        progress = step / cfg.max_steps  # by steps only, so a run does not depend on timing
        warm = min(1.0, (step + 1) / max(1, cfg.warmup_steps))
        lr = cfg.lr * warm * (1.0 - 0.9 * progress) if constant_lr is None else constant_lr
        for group in optimizer.param_groups:
            group["lr"] = lr
        while len(order) < cfg.batch_size:  # fewer examples than a batch: repeat them
            fresh = list(range(len(examples)))
            rng.shuffle(fresh)
            order += fresh
        picked, order = order[: cfg.batch_size], order[cfg.batch_size :]
        optimizer.zero_grad(set_to_none=True)
        loss = _accumulate(model, [examples[i] for i in picked], pad_id, cfg.micro_batches,
                           cfg.pack_tokens)  # fmt: skip
        guard.step(model, optimizer)
        step += 1
        value = all_reduce_sum([float(loss)])[0]
        loss_ema = value if loss_ema != loss_ema else 0.9 * loss_ema + 0.1 * value
        if step % cfg.eval_every == 0 or step == cfg.max_steps:
            stats = {"loss": loss_ema, "lr": lr, **guard.metrics()}
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
        if on_step is not None:
            state = SFTLoop(step, list(order), rng.getstate(), loss_ema, best_val, bad_checks,
                            guard.state_dict())  # fmt: skip
            on_step(state, optimizer)
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
    model: PreTrainedModel,
    batch: Sequence[Rollout],
    pad_id: int,
    micro: int = 4,
    pack_tokens: int | None = None,
) -> torch.Tensor:
    """Backward of the batch's token-mean NLL, in `micro` length-sorted micro-batches.

    The batch keeps its random mix of domains (one optimizer step sees them all),
    while each micro-batch holds similar lengths and so pads little. Returns the
    batch loss (detached), equal to the loss of one full-batch forward.

    Under data parallelism `batch` is the global batch: this rank takes every
    world-th sequence by length, scales its loss by the world size (DDP and FSDP
    average gradients) and returns its part of the loss; only the last micro-batch's
    backward all-reduces. With `pack_tokens` each micro-batch's sequences are packed
    into rows of at most that many tokens (`_micro_batches`): the same loss, fewer pads.
    """
    ordered = sorted(batch, key=sequence_length)
    tokens = float(sum(sum(r.loss_mask) for r in batch)) or 1.0
    # Never empty when the batch is a multiple of the world; else a stand-in of weight 0.
    ordered, present = local_share(ordered)
    scale = float(world_size())
    parts = _micro_batches(ordered, pad_id, micro, pack_tokens, model_device(model))
    total = torch.zeros(())
    for k, (part, weight) in enumerate(parts):
        nll = -(batch_logprobs(model, part) * part.loss_mask).sum() / tokens * weight * present
        with gradient_sync(model, enabled=k == len(parts) - 1):
            (nll * scale).backward()
        total += nll.detach().float().cpu()
    return total


def _micro_batches(
    ordered: Sequence[Rollout],
    pad_id: int,
    micro: int,
    pack_tokens: int | None,
    device: torch.device | None = None,
) -> list[tuple[TokenBatch, float]]:
    """(batch, weight) per micro-batch of length-sorted `ordered`: `micro` consecutive
    runs, one padded row per sequence; or with `pack_tokens`, the whole share packed
    into rows of that width (`plan_rows`) and the rows cut into exactly `micro` runs,
    an empty run standing in as the first row with weight 0 (so every rank runs the
    same number of passes, as FSDP needs)."""
    if pack_tokens is None:
        size = -(-len(ordered) // micro)
        return [(pack(ordered[i : i + size], pad_id, device), 1.0)
                for i in range(0, len(ordered), size)]  # fmt: skip
    lengths = [sequence_length(r) for r in ordered]
    rows = [[ordered[i] for i in row] for row in plan_rows(lengths, pack_tokens)]
    runs = [rows[k::micro] for k in range(micro)]  # similar fill in every run
    return [(rows_batch(run, pad_id, device), 1.0) if run
            else (rows_batch(rows[:1], pad_id, device), 0.0)
            for run in runs]  # fmt: skip
