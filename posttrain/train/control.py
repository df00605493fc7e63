"""The control arm: more SFT from the SFT checkpoint, in a second process, for exactly
as long as DPO + GRPO run in the first.

`ControlArm.start` spawns a process that loads the SFT checkpoint and keeps training
on the same demonstrations (no plateau stop, at the learning rate SFT ended
with) until `stop()` is called when GRPO
ends; it then saves its checkpoint and hands back its metrics. Both arms run at the
same time with one intra-op thread each, so on a 2-core machine they get equal
wall-clock and equal cores. If the child dies, `stop()` raises with its exit code.
A LoRA run's SFT checkpoint loads in the child as base + adapter, so the control arm
trains the same adapter with the same settings.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from posttrain.config import SFTConfig
from posttrain.types import Rollout

# The child never trains longer than this, even if the parent forgets to stop it.
HARD_LIMIT_S = 3600.0


@dataclass
class ControlOutcome:
    steps: int
    seconds: float
    val_loss: float
    log: list[tuple[int, dict[str, float]]] = field(default_factory=list)


class ControlArm:
    def __init__(self, process: Any, stop_event: Any, results: Any) -> None:
        self._process, self._stop, self._results = process, stop_event, results

    @classmethod
    def start(
        cls,
        sft_checkpoint: Path,
        out_checkpoint: Path,
        examples: list[Rollout],
        val_examples: list[Rollout],
        cfg: SFTConfig,
        lr: float,
        seed: int,
        threads: int,
    ) -> ControlArm:
        ctx = mp.get_context("spawn")  # a fresh interpreter: no forked torch thread pools
        stop_event, results = ctx.Event(), ctx.Queue()
        process = ctx.Process(
            target=_worker,
            args=(
                sft_checkpoint,
                out_checkpoint,
                examples,
                val_examples,
                cfg.model_dump(),
                lr,
                seed,
                threads,
                stop_event,
                results,
            ),
            name="posttrain-control",
            daemon=True,
        )
        process.start()
        return cls(process, stop_event, results)

    def stop(self, timeout: float = 600.0) -> ControlOutcome:
        """Tell the child to finish; wait for its checkpoint and metrics."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        while True:
            try:
                outcome: ControlOutcome = self._results.get(timeout=1.0)
                break
            except queue.Empty:
                if not self._process.is_alive() or time.monotonic() > deadline:
                    self._process.kill()
                    raise RuntimeError(
                        f"control arm gave no result (exit code {self._process.exitcode})"
                    ) from None
        self._process.join(timeout=60)
        return outcome


def _worker(
    sft_checkpoint: Path,
    out_checkpoint: Path,
    examples: list[Rollout],
    val_examples: list[Rollout],
    cfg_data: dict[str, Any],
    lr: float,
    seed: int,
    threads: int,
    stop_event: Any,
    results: Any,
) -> None:
    import torch
    from transformers.utils import logging as hf_logging

    from posttrain.train.checkpoint import load_checkpoint, save_checkpoint
    from posttrain.train.sft import train_sft

    torch.set_num_threads(threads)
    hf_logging.disable_progress_bar()
    policy, state = load_checkpoint(sft_checkpoint)
    cfg = SFTConfig(**cfg_data).model_copy(update={"max_steps": 10**9, "warmup_steps": 0})
    log: list[tuple[int, dict[str, float]]] = []
    res = train_sft(
        policy.model,
        examples,
        val_examples,
        cfg,
        policy.tokenizer.pad_token_id,  # type: ignore[attr-defined]
        seed=seed + 1,
        max_seconds=HARD_LIMIT_S,
        stop_on_plateau=False,
        log=lambda step, values: log.append((step, values)),
        should_stop=stop_event.is_set,
        constant_lr=lr,
    )
    # The SFT checkpoint's base-model record lets a LoRA control checkpoint load as
    # base + adapter too (see posttrain.train.checkpoint).
    extra = {"base_model": state["base_model"]} if "base_model" in state else {}
    save_checkpoint(out_checkpoint, policy, "control", res.steps, {"seconds": res.seconds, **extra})
    results.put(ControlOutcome(res.steps, res.seconds, res.best_val_loss, log))
