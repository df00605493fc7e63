"""The optimizer step every trainer takes: clip the gradients, log their norm, and skip
an update whose gradients are not finite.

One NaN or inf in a gradient would otherwise go through AdamW into every weight and
every later step: a week-long run would keep going with a dead model. `StepGuard`
measures the total gradient norm (the one clipping needs anyway), leaves the weights
and the optimizer state untouched when it is not finite, and stops the stage with an
error once `patience` updates in a row were skipped: by then the weights or the
learning rate are the likely cause. A resume would repeat the same updates (it replays
the run exactly, under the same settings), so the way on is a new run with a lower
learning rate, or a fix to a loss that overflows. Under data parallelism the norm is of the averaged (DDP) or sharded
(FSDP2, reduced over the shards) gradients, so every rank takes the same decision.
Reading the norm costs one device sync per update on a GPU, as logging it anywhere does.

    guard = StepGuard("grpo")
    loss.backward()
    guard.step(model, optimizer)      # False: skipped
    log(step, {**stats, **guard.metrics()})
    state["guard"] = guard.state_dict()   # a resume continues the counts exactly
"""

from __future__ import annotations

import math
from typing import Any, cast

import torch

PATIENCE = 3  # consecutive non-finite updates before a stage gives up


class NonFiniteGradients(RuntimeError):
    """`patience` optimizer updates in a row had non-finite gradients."""


class StepGuard:
    """Clipped optimizer steps that skip non-finite gradients (see the module docstring).

    `metrics()` returns the mean gradient norm (before clipping) of the updates taken
    since its last call, and the stage's running count of skipped updates.
    """

    def __init__(self, stage: str, max_norm: float = 1.0, patience: int = PATIENCE) -> None:
        if patience < 1:
            raise ValueError(f"StepGuard: patience must be >= 1, got {patience}")
        self.stage, self.max_norm, self.patience = stage, max_norm, patience
        self.skipped = 0  # over the stage
        self.in_a_row = 0
        self.norms: list[float] = []  # since the last metrics()

    def step(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> bool:
        """Clip, then `optimizer.step()` if the gradient norm is finite; else clear the
        gradients and count a skip. Returns whether the weights were updated."""
        norm = clip_finite_grad_norm(model, self.max_norm)
        if math.isfinite(norm):
            optimizer.step()
            self.in_a_row = 0
            self.norms.append(norm)
            return True
        optimizer.zero_grad(set_to_none=True)
        self.skipped += 1
        self.in_a_row += 1
        if self.in_a_row >= self.patience:
            raise NonFiniteGradients(
                f"{self.stage}: the gradient norm was {norm} at {self.in_a_row} optimizer "
                f"updates in a row ({self.skipped} skipped in the stage); the weights are as "
                "they were before the first of them. Look for a loss that overflows, or start "
                "a new run with a lower learning rate: a resume repeats the same updates"
            )
        return False

    def metrics(self) -> dict[str, float]:
        """{"grad_norm": mean pre-clip norm of the updates since the last call (0 when
        there were none: no gradient was applied), "skipped_updates": skipped in the stage}."""
        mean = sum(self.norms) / len(self.norms) if self.norms else 0.0
        self.norms = []
        return {"grad_norm": mean, "skipped_updates": float(self.skipped)}

    def state_dict(self) -> dict[str, Any]:
        """The counts and the norms not yet logged: part of a stage's resumable state."""
        return {"skipped": self.skipped, "in_a_row": self.in_a_row, "norms": list(self.norms)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from `state_dict()`'s output; an empty dict (a state saved before the
        guard's was kept) starts from zero."""
        self.skipped = int(state.get("skipped", 0))
        self.in_a_row = int(state.get("in_a_row", 0))
        self.norms = [float(n) for n in state.get("norms", [])]


def clip_finite_grad_norm(model: torch.nn.Module, max_norm: float) -> float:
    """The total L2 norm of the gradients, clipped in place to `max_norm` when finite
    (`clip_grad_norm_` would scale them by NaN otherwise). Parameters without a gradient
    (frozen, or a LoRA run's base) are left out."""
    params = [p for p in model.parameters() if p.grad is not None]
    grads = [cast(torch.Tensor, p.grad) for p in params]
    if not grads:
        return 0.0
    norm = torch.nn.utils.get_total_norm(grads)
    full = getattr(norm, "full_tensor", None)  # FSDP2: a DTensor, partial over the shards
    value = float(full() if full is not None else norm)
    if math.isfinite(value):
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)
    return value
