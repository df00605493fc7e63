"""GRPO's rollout sources: the scheduler synchronous (same training as lockstep) and
asynchronous (its own engine copy, loaded after each update, staleness bounded)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from posttrain.config import ConfigError, GRPOConfig, RolloutConfig, load_config
from posttrain.domains import get_domain
from posttrain.engines import GenerationRequest, HFEngine, SamplingParams
from posttrain.train.grpo import train_grpo
from posttrain.train.mixture import TaskSampler
from posttrain.train.rollout_source import ScheduledSource, local_scheduler
from tests.train.test_grpo import EvenFirstToken, run_grpo, weights

CFG = GRPOConfig(steps=3, batch_size=8, group_size=4, minibatch_size=8, lr=1e-3)
TEXTS = ["yes", "no", "no", "yes"]


def test_the_synchronous_scheduler_trains_exactly_as_the_lockstep_loop(
    tiny_model: Any, tokenizer: Any
) -> None:
    a, b = copy.deepcopy(tiny_model), copy.deepcopy(tiny_model)
    lockstep = run_grpo(a, tokenizer, TEXTS, CFG)
    scheduled = run_grpo(b, tokenizer, TEXTS, CFG, rollout=RolloutConfig(mode="scheduled"))
    assert [v["loss"] for v in scheduled] == pytest.approx([v["loss"] for v in lockstep])
    for name, value in weights(a).items():
        torch.testing.assert_close(weights(b)[name], value)
    assert all(v["staleness_max"] == 0.0 for v in scheduled)
    assert all(v["sched/engine/calls"] >= 1 for v in scheduled)


def test_async_rollouts_use_their_own_engine_copy_and_stay_within_the_staleness_bound(
    tiny_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = HFEngine(tiny_model, tokenizer, seed=0)
    loaded: list[int] = []
    real_init = ScheduledSource.__init__

    def spy_init(self: ScheduledSource, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        inner = self.scheduler.engine
        assert inner is not engine and inner.model is not tiny_model  # type: ignore[attr-defined]
        original = self.scheduler.update_weights

        def update(state: Any, version: int) -> None:
            original(state, version)
            loaded.append(version)
            for name, value in inner.model.state_dict().items():  # type: ignore[attr-defined]
                assert torch.equal(value, state[name])

        self.scheduler.update_weights = update  # type: ignore[method-assign]

    monkeypatch.setattr(ScheduledSource, "__init__", spy_init)
    domain = EvenFirstToken()
    logged: list[dict[str, float]] = []
    train_grpo(
        tiny_model,
        tokenizer,
        engine,
        TaskSampler([domain], "grpo"),
        lambda _: domain,
        CFG,
        max_tokens=4,
        log=lambda step, values: logged.append(values),
        rollout=RolloutConfig(mode="scheduled", max_staleness=1, over_provision=1),
    )
    assert loaded == [2, 3, 4]
    assert len(logged) == 3
    assert all(0.0 <= v["staleness_mean"] <= v["staleness_max"] <= 1.0 for v in logged)
    assert max(v["staleness_max"] for v in logged) == 1.0  # later steps train on carried groups


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["rollout.mode=scheduled", "rollout.over_provision=2"], "max_staleness"),
        (["rollout.max_staleness=1"], "rollout.mode=scheduled"),
        (["rollout.mode=fast"], "rollout.mode"),
    ],
)
def test_impossible_rollout_settings_are_named(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


def test_grpo_on_one_ray_worker_trains_exactly_as_the_local_lockstep_loop(
    tiny_model: Any, tokenizer: Any, ray_local: Any
) -> None:
    """Sampling at temperature 1 on the tiny model: the worker's engine (same seed, the
    whole step in one chunk, new weights after every update) draws what the local one
    does, so losses and weights agree."""
    domain = EvenFirstToken()

    def train(rollout: RolloutConfig | None) -> tuple[list[float], dict[str, torch.Tensor]]:
        model = copy.deepcopy(tiny_model)
        logged: list[dict[str, float]] = []
        train_grpo(
            model, tokenizer, HFEngine(model, tokenizer, seed=3), TaskSampler([domain], "grpo"),
            lambda _: domain, CFG, max_tokens=4,
            log=lambda step, values: logged.append(values), rollout=rollout,
        )  # fmt: skip
        return [v["loss"] for v in logged], weights(model)

    local_losses, local_weights = train(None)
    ray_losses, ray_weights = train(RolloutConfig(backend="ray", ray_workers=1))
    assert ray_losses == pytest.approx(local_losses, rel=1e-5)
    for name, value in local_weights.items():
        torch.testing.assert_close(ray_weights[name], value)


def test_the_async_schedulers_engine_copy_keeps_its_own_kv_caches(
    tiny_model: Any, tokenizer: Any
) -> None:
    # The trainer's engine evaluates (`after_step`) while the scheduler's copy generates
    # on its own thread: one shared cache would be cleared, and mutated, by both.
    engine = HFEngine(tiny_model, tokenizer, seed=0)
    params = SamplingParams(max_tokens=2, temperature=0.0)
    cfg = RolloutConfig(mode="scheduled", max_staleness=1)
    sched, own_copy = local_scheduler(cfg, tiny_model, engine, tokenizer, get_domain, params, None, None)  # fmt: skip
    try:
        assert own_copy
        ids = tokenizer.encode("1+1=", add_special_tokens=False)
        sched.engine.generate([GenerationRequest(ids, params, episode="scheduled")])
        engine.generate([GenerationRequest(ids, params, episode="evaluated")])
        assert "scheduled" in sched.engine.prefix_cache  # type: ignore[attr-defined]
        assert "scheduled" not in engine.prefix_cache  # type: ignore[operator]
    finally:
        sched.close()


class RunsDry:
    """A sampler with `left` tasks: then it returns fewer than asked (as a fixed list)."""

    def __init__(self, left: int) -> None:
        self.domain, self.left, self.window = get_domain("arith/addition-v1"), left, None

    def sample(self, count: int) -> list[Any]:
        got = min(count, self.left)
        self.left -= got
        return [self.domain.generate(self.left + i, 1) for i in range(got)]


def test_a_sampler_that_runs_dry_is_an_error_not_a_wait_for_groups_never_sent(
    tiny_model: Any, tokenizer: Any
) -> None:
    engine = HFEngine(tiny_model, tokenizer, seed=0)
    params = SamplingParams(max_tokens=2, temperature=0.0, n=2)
    cfg = RolloutConfig(mode="scheduled", max_staleness=1)
    sched, _ = local_scheduler(cfg, tiny_model, engine, tokenizer, get_domain, params, None, None)  # fmt: skip
    try:
        source = ScheduledSource(cfg, sched, RunsDry(3), push_weights=False)  # type: ignore[arg-type]
        with pytest.raises(RuntimeError, match="gave 3 tasks, 4 asked for"):
            source.batch(4, version=0)
    finally:
        sched.close()
