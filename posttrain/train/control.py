"""The control arm: more SFT from the SFT checkpoint, in a second process, for as many
training seconds as DPO + GRPO train in the first.

    clock = TreatmentClock()
    arm = ControlArm.start(sft_ckpt, out_ckpt, examples, val, cfg.sft, lr, seed, threads,
                           clock, cap_s=control_cap_s(cfg))
    clock.run(0.0)            # DPO trains: the figure grows with the wall-clock
    with clock.paused(): ...  # an evaluation or a save: the figure stands still
    clock.hold(dpo_seconds)   # DPO's own `seconds`, exactly, at its end
    outcome = arm.stop(dpo_seconds + grpo_seconds)

The parent keeps the treatment's training seconds on a `TreatmentClock` shared with
the child. The child loads the SFT checkpoint and keeps training on the same
demonstrations (no plateau stop, at the learning rate SFT ended with), counting its
own training seconds from its first step (its start-up, about 10 s of imports and
loading, is not counted): it trains while they are below the treatment's figure and
waits otherwise, which also keeps it still while the parent evaluates or saves.
`stop(final_seconds)` fixes the figure; the child trains until it reaches it, saves
`checkpoints/control/` and hands back its metrics, its training seconds and the figure
it was given (`budget_s`). Both arms run at the same time with one intra-op thread
each, so on a 2-core machine they get equal cores. A LoRA run's SFT checkpoint loads in
the child as base + adapter, so the control arm trains the same adapter with the same
settings.

Not guaranteed: the child checks the figure between steps, so it ends within one step
after reaching it (its seconds exceed the treatment's by less than one step). It never
trains past `cap_s` (the treatment's own caps plus a margin) even if the parent never
calls `stop()`. If the child dies, `stop()` raises with its exit code; if the parent
dies, the child exits without saving; `cancel()` ends it without a checkpoint.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import queue
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from posttrain.config import SFTConfig
from posttrain.types import Rollout

if TYPE_CHECKING:
    from posttrain.config import RunConfig

# The cap's margin over dpo.max_minutes + grpo.max_minutes, for what those caps do not
# bound: DPO's pair mining and the step each stage finishes after reaching its cap.
CAP_MARGIN = 1.25
CAP_MARGIN_S = 600.0
POLL_S = 0.05  # how often a waiting child looks at the figure


def control_cap_s(config: RunConfig) -> float:
    """The most training seconds the control arm may take: the enabled treatment
    stages' `max_minutes`, plus the margin."""
    minutes = sum(s.max_minutes for s in (config.dpo, config.grpo) if s.enabled)
    return minutes * 60 * CAP_MARGIN + CAP_MARGIN_S


class TreatmentClock:
    """The treatment's training seconds, shared between processes: a figure, and while
    the treatment trains, the moment it was set (readers add the time since). Created
    in the parent before the child is spawned."""

    def __init__(self) -> None:
        # [seconds, time.monotonic() when they were set or -1.0 while held]; monotonic
        # is one system-wide clock, so the child can extrapolate the parent's figure.
        self._state = mp.get_context("spawn").Array("d", [0.0, -1.0])

    def run(self, seconds: float) -> None:
        """The treatment has trained `seconds` and trains on from now."""
        with self._state.get_lock():
            self._state[0], self._state[1] = seconds, time.monotonic()

    def hold(self, seconds: float) -> None:
        """The treatment has trained `seconds` and does not train now."""
        with self._state.get_lock():
            self._state[0], self._state[1] = seconds, -1.0

    def read(self) -> float:
        with self._state.get_lock():
            seconds, since = self._state[0], self._state[1]
        return seconds + (time.monotonic() - since if since >= 0 else 0.0)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Hold the figure for the block's duration (a running clock runs on after it)."""
        with self._state.get_lock():
            running = self._state[1] >= 0
        seconds = self.read()
        self.hold(seconds)
        try:
            yield
        finally:
            if running:
                self.run(seconds)


class TrainingPacer:
    """`train_sft`'s `should_stop` in the child: counts the seconds spent between its
    calls (the steps) as training, and before each step waits while they have reached
    the treatment's figure, until the figure grows or is final (then it stops)."""

    def __init__(
        self,
        clock: TreatmentClock,
        final: Callable[[], bool],
        cap_s: float,
        parent_alive: Callable[[], bool] = lambda: True,
        progress: Any = None,
    ) -> None:
        self.clock, self.final, self.cap_s = clock, final, cap_s
        self.parent_alive, self.progress = parent_alive, progress
        self.trained = 0.0  # seconds of training steps so far
        self.capped = self.orphaned = False
        self._mark: float | None = None  # when the step under way began

    def __call__(self) -> bool:
        if self._mark is not None:
            self.trained += time.perf_counter() - self._mark
            if self.progress is not None:
                self.progress.value = self.trained
        while True:
            if not self.parent_alive():
                self.orphaned = True
                return True
            final = self.final()  # read before the figure: stop() sets the figure first
            if self.trained < self.clock.read():
                if self.trained >= self.cap_s:
                    self.capped = True
                    return True
                break
            if final:
                return True
            time.sleep(POLL_S)
        self._mark = time.perf_counter()
        return False


@dataclass
class ControlOutcome:
    steps: int
    seconds: float  # the child's training seconds, from its first step
    budget_s: float  # the treatment's training seconds it was given
    val_loss: float
    capped: bool = False  # stopped at `cap_s` short of the budget
    log: list[tuple[int, dict[str, float]]] = field(default_factory=list)


class ControlArm:
    def __init__(
        self, process: Any, clock: TreatmentClock, stop_event: Any, progress: Any, results: Any
    ) -> None:
        self._process, self._clock, self._stop = process, clock, stop_event
        self._progress, self._results = progress, results

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
        clock: TreatmentClock,
        cap_s: float,
    ) -> ControlArm:
        ctx = mp.get_context("spawn")  # a fresh interpreter: no forked torch thread pools
        stop_event, results, progress = ctx.Event(), ctx.Queue(), ctx.Value("d", 0.0)
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
                clock,
                cap_s,
                stop_event,
                progress,
                results,
            ),
            name="posttrain-control",
            daemon=True,
        )
        process.start()
        return cls(process, clock, stop_event, progress, results)

    def stop(
        self,
        final_seconds: float,
        timeout: float = 600.0,
        abort: Callable[[], bool] | None = None,
    ) -> ControlOutcome:
        """Fix the treatment's figure at `final_seconds` and wait until the child has
        trained as long, saved its checkpoint and sent its metrics. The child is
        killed (and this raises RuntimeError) if it dies, makes no progress for
        `timeout` s, or `abort()` turns true while waiting (checked every second)."""
        self._clock.hold(final_seconds)
        self._stop.set()
        seen, deadline = -1.0, time.monotonic() + timeout
        while True:
            try:
                outcome: ControlOutcome = self._results.get(timeout=1.0)
                break
            except queue.Empty:
                if self._progress.value > seen:  # still training toward the figure
                    seen, deadline = self._progress.value, time.monotonic() + timeout
                if abort is not None and abort():
                    self.cancel()
                    raise RuntimeError("control arm stopped: the run is stopping") from None
                if not self._process.is_alive() or time.monotonic() > deadline:
                    self._process.kill()
                    raise RuntimeError(
                        f"control arm gave no result (exit code {self._process.exitcode})"
                    ) from None
        self._process.join(timeout=60)
        return outcome

    def cancel(self) -> None:
        """End the child now, without a checkpoint (the treatment failed)."""
        self._process.kill()
        self._process.join(timeout=60)


def _worker(
    sft_checkpoint: Path,
    out_checkpoint: Path,
    examples: list[Rollout],
    val_examples: list[Rollout],
    cfg_data: dict[str, Any],
    lr: float,
    seed: int,
    threads: int,
    clock: TreatmentClock,
    cap_s: float,
    stop_event: Any,
    progress: Any,
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
    parent = mp.parent_process()
    pacer = TrainingPacer(
        clock,
        stop_event.is_set,
        cap_s,
        parent_alive=parent.is_alive if parent is not None else lambda: True,
        progress=progress,
    )
    log: list[tuple[int, dict[str, float]]] = []
    res = train_sft(
        policy.model,
        examples,
        val_examples,
        cfg,
        policy.tokenizer.pad_token_id,  # type: ignore[attr-defined]
        seed=seed + 1,
        max_seconds=float("inf"),  # the pacer stops it; its waits are no training time
        stop_on_plateau=False,
        log=lambda step, values: log.append((step, values)),
        should_stop=pacer,
        constant_lr=lr,
    )
    if pacer.orphaned:  # nobody will evaluate it, and a resume must not take it as done
        return
    budget = clock.read()
    stats = {"seconds": pacer.trained, "budget_s": budget, "steps": float(res.steps),
             "val_loss": res.best_val_loss}  # fmt: skip
    # The SFT checkpoint's base-model record lets a LoRA control checkpoint load as
    # base + adapter too (see posttrain.train.checkpoint).
    extra = {"base_model": state["base_model"]} if "base_model" in state else {}
    # Its metrics rows too: the run logs them once it hears back, and a kill before
    # that leaves a resume (which takes the finished arm) only these (`unlogged_rows`).
    record = {"stats": stats, "log": log, **extra}
    save_checkpoint(out_checkpoint, policy, "control", res.steps, record)
    results.put(
        ControlOutcome(res.steps, pacer.trained, budget, res.best_val_loss, pacer.capped, log)
    )
