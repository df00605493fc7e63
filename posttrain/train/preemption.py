"""Stopping a run cleanly on SIGTERM or SIGUSR1: the stage in progress saves its full
state at its next step boundary and the run exits; `posttrain run resume=RUN_DIR`
continues it exactly, as after a `kill -9` but without losing the steps since the last
`save_every` save.

    stops = StopSignals()
    with stops.installed():                    # main thread: the handlers, restored after
        ...
        if stops.poll():                       # each rank, at the same step: a collective
            save(...)
            raise stops.preempted("grpo", step, saved=True)

Schedulers send SIGTERM before they kill a job (Kubernetes, SLURM's `scancel`, `kill`),
and SLURM sends SIGUSR1 ahead of a time limit with `--signal=USR1@120`. Later signals
change nothing (torchrun's agent forwards the one SLURM also sent each worker): SIGKILL
ends a run at once, and a resume then starts from the last `save_every` state.

Where a signal is acted on: GRPO at the end of the step it came in (before its monitor
evaluation, which the resume then runs first, or after it if it came then), SFT
before its next step, DPO before its next step or once pair mining ends; SFT and GRPO save their full training state there (`train/resume.py`), DPO (not
resumable within its stage) is redone on resume. Outside the loops a signal stops the
run before its next held-out evaluation, or, while rank 0 waits for the control arm,
at once: the control arm's process is stopped with the run and a resume starts it
afresh, as after a `kill -9`. The run exits with status 128 + the signal's number
(143 for SIGTERM), the status of a process the signal killed.

Not guaranteed: a step, a held-out evaluation or DPO's pair mining is not cut short, so
one longer than the scheduler's grace period (SLURM's `KillWait`, Kubernetes'
`terminationGracePeriodSeconds`, 30 s by default) is killed before the run saves; give
such runs a longer grace period. Under torchrun, a signal that reaches only some ranks
is acted on when all of them next poll (a collective). A scheduler that signals every
process of the job (SLURM's `scancel`, `--signal=USR1` without `B:`) also reaches Ray's
processes (`rollout.backend=ray`), which may die before the run saves; there, have the
scheduler signal the batch script alone (`--signal=B:USR1@120`) and forward the signal
to `posttrain` (read from Ray's code, not tried on SLURM).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from posttrain.ranks import any_rank

SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


class Preempted(Exception):
    """The run stopped on a signal: in `stage` after `step` (None: between stages).
    `state` carries what a trainer leaves its caller to save; `saved` says it was."""

    def __init__(
        self, stage: str, step: int | None, signum: int, saved: bool = False, state: Any = None
    ) -> None:
        super().__init__(stage, step, signum)
        self.stage, self.step, self.signum, self.saved, self.state = (
            stage, step, signum, saved, state
        )  # fmt: skip
        self.run_dir = "RUN_DIR"  # the run directory, once `run_recipe` knows it

    def __str__(self) -> str:
        name = signal.Signals(self.signum).name
        if self.step is None:
            where, kept = f"before {self.stage}", "the finished stages are kept"
        else:
            where = f"in {self.stage} after step {self.step}"
            kept = "its full state is saved" if self.saved else "the stage restarts on resume"
        return f"stopped by {name} {where} ({kept}); continue with `posttrain run resume={self.run_dir}`"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class StopSignals:
    """Latches the first SIGTERM or SIGUSR1 for the training loops to poll."""

    def __init__(self) -> None:
        self.signum: int | None = None  # this rank's first signal
        self.stopping = False  # latched by poll(): some rank was signalled

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:  # the first one counts
            self.signum = signum

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopSignals]:
        """The handlers while the block runs, the previous ones after. Off the main
        thread (where Python allows no handler) nothing is installed."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def poll(self) -> bool:
        """Whether any rank was signalled (latched once true). A collective under
        torchrun: every rank calls it at the same points."""
        if not self.stopping:
            self.stopping = any_rank(self.signum is not None)
        return self.stopping

    def preempted(
        self, stage: str, step: int | None, saved: bool = False, state: Any = None
    ) -> Preempted:
        """The exception to raise once `poll()` said stop (on a rank that was not
        signalled itself, as if by SIGTERM)."""
        return Preempted(stage, step, self.signum or signal.SIGTERM, saved, state)
