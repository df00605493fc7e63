"""The trainers' optimizer step: clipping as `clip_grad_norm_`, non-finite gradients
skipped with the weights and the optimizer state untouched, and a stage stopped by name
once too many updates in a row were skipped."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
import torch

from posttrain.config import GRPOConfig, SFTConfig
from posttrain.domains import STARTER_DOMAINS, get_domain
from posttrain.rollout.episode import replay_references
from posttrain.train.sft import train_sft
from posttrain.train.step_guard import PATIENCE, NonFiniteGradients, StepGuard
from tests.train.test_grpo import run_grpo, same_weights, weights


def _model_with_gradients(scale: float = 1.0) -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    (model(torch.randn(16, 4)).pow(2).sum() * scale).backward()
    return model


def _poison(param: torch.nn.Parameter, calls: int) -> list[int]:
    """Make `param`'s gradient NaN in its next `calls` backward passes; returns a
    one-item list counting the passes poisoned so far."""
    seen = [0]

    def hook(grad: torch.Tensor) -> torch.Tensor:
        if seen[0] >= calls:
            return grad
        seen[0] += 1
        return torch.full_like(grad, math.nan)

    param.register_hook(hook)
    return seen


def test_a_finite_step_clips_and_updates_exactly_as_clip_grad_norm() -> None:
    ours, theirs = _model_with_gradients(scale=50.0), _model_with_gradients(scale=50.0)
    expected = float(torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0))
    torch.optim.AdamW(theirs.parameters(), lr=0.1).step()
    guard = StepGuard("test")
    assert guard.step(ours, torch.optim.AdamW(ours.parameters(), lr=0.1))
    assert expected > 1.0  # clipping took effect
    assert guard.metrics() == {"grad_norm": pytest.approx(expected), "skipped_updates": 0.0}
    assert guard.metrics()["grad_norm"] == 0.0  # no update since the last call
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b) and torch.equal(a.grad, b.grad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [math.nan, math.inf], ids=["nan", "inf"])
def test_a_non_finite_gradient_leaves_weights_and_optimizer_state_alone(bad: float) -> None:
    model = _model_with_gradients()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    guard = StepGuard("test")
    guard.step(model, optimizer)  # one real update: the optimizer has state to keep
    before, state = copy.deepcopy(model.state_dict()), copy.deepcopy(optimizer.state_dict())
    model(torch.randn(3, 4)).sum().backward()
    next(model.parameters()).grad[0, 0] = bad  # type: ignore[index]

    assert not guard.step(model, optimizer)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    after = optimizer.state_dict()["state"]
    assert after.keys() == state["state"].keys()
    for key, moments in state["state"].items():
        assert all(torch.equal(after[key][k], v) for k, v in moments.items())
    assert all(p.grad is None for p in model.parameters())  # the next step starts clean
    assert guard.metrics()["skipped_updates"] == 1.0


def test_patience_non_finite_updates_in_a_row_stop_the_stage_by_name() -> None:
    model = _model_with_gradients()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    guard = StepGuard("grpo", patience=2)

    def nan_step() -> bool:
        model(torch.randn(3, 4)).sum().backward()
        next(model.parameters()).grad.fill_(math.nan)  # type: ignore[union-attr]
        return guard.step(model, optimizer)

    assert not nan_step()
    model(torch.randn(3, 4)).sum().backward()
    assert guard.step(model, optimizer)  # a finite update resets the count
    assert not nan_step()
    with pytest.raises(NonFiniteGradients, match=r"^grpo: the gradient norm was nan at 2 "):
        nan_step()
    assert guard.skipped == 3


def test_patience_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="patience must be >= 1, got 0"):
        StepGuard("sft", patience=0)


def test_a_model_without_gradients_has_norm_zero_and_steps() -> None:
    model = torch.nn.Linear(2, 2)
    guard = StepGuard("test")
    assert guard.step(model, torch.optim.AdamW(model.parameters()))
    assert guard.metrics()["grad_norm"] == 0.0


def test_grpo_skips_a_nan_update_and_goes_on(tiny_model: Any, tokenizer: Any) -> None:
    cfg = GRPOConfig(steps=2, batch_size=4, group_size=2, minibatch_size=4, lr=1e-3)
    start = weights(tiny_model)
    poisoned = _poison(tiny_model.get_input_embeddings().weight, calls=1)
    after_first: dict[str, torch.Tensor] = {}

    def snapshot(step: int) -> None:
        if step == 1:
            after_first.update(weights(tiny_model))

    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg, after_step=snapshot)
    assert poisoned == [1] and len(logged) == 2
    assert [v["skipped_updates"] for v in logged] == [1.0, 1.0]
    assert logged[0]["grad_norm"] == 0.0 and logged[1]["grad_norm"] > 0
    assert same_weights(start, after_first)  # the poisoned update was not applied
    assert not same_weights(start, weights(tiny_model))  # the next one was
    assert all(torch.isfinite(p).all() for p in tiny_model.parameters())


def test_sft_stops_with_a_named_error_when_every_gradient_is_nan(
    tiny_model: Any, tokenizer: Any
) -> None:
    tasks = [get_domain(d).generate(s, 1) for d in STARTER_DOMAINS for s in range(4)]
    train = replay_references(tasks, tokenizer, get_domain)
    start = weights(tiny_model)
    _poison(tiny_model.get_input_embeddings().weight, calls=10**6)
    cfg = SFTConfig(batch_size=8, micro_batches=1, warmup_steps=0, max_steps=10, eval_every=1)
    with pytest.raises(NonFiniteGradients, match=rf"^sft: .* at {PATIENCE} optimizer updates"):
        train_sft(tiny_model, train, [], cfg, tokenizer.pad_token_id)
    assert same_weights(start, weights(tiny_model))


def test_a_guard_restored_from_its_state_continues_the_counts() -> None:
    model = _model_with_gradients()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    guard = StepGuard("grpo", patience=2)
    model(torch.randn(3, 4)).sum().backward()
    assert guard.step(model, optimizer)  # a norm not yet logged
    next(model.parameters()).grad.fill_(math.nan)  # type: ignore[union-attr]
    assert not guard.step(model, optimizer)  # one skip in a row
    state = json.loads(json.dumps(guard.state_dict()))  # as a resume state stores it
    resumed = StepGuard("grpo", patience=2)
    resumed.load_state_dict(state)
    model(torch.randn(3, 4)).sum().backward()
    next(model.parameters()).grad.fill_(math.inf)  # type: ignore[union-attr]
    with pytest.raises(NonFiniteGradients, match="at 2 optimizer updates in a row"):
        resumed.step(model, optimizer)
    assert resumed.metrics() == guard.metrics() | {"skipped_updates": 2.0}
    fresh = StepGuard("sft")
    fresh.load_state_dict({})  # a state saved before the guard's was kept
    assert fresh.state_dict() == {"skipped": 0, "in_a_row": 0, "norms": []}
