"""DAPO's dynamic sampling (refill groups without reward spread) and overlong filtering
(truncated rollouts out of the loss), and GRPO's difficulty ceiling."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from posttrain.config import ConfigError, GRPOConfig, load_config
from posttrain.engines import Completion
from posttrain.train.mixture import TaskSampler
from posttrain.types import Rollout, Task, Verdict
from tests.train.test_grpo import SayYes, ScriptedSampler, run_grpo, weights

TEXTS = ["yes", "no", "no", "yes"]


class YesOnEvenSeeds(SayYes):
    """SayYes on even seeds; on odd seeds every answer passes (a group without spread)."""

    id = "test/yes-on-even-v1"

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        passed = rollout.final_text == "yes" or task.seed % 2 == 1
        return Verdict(float(passed), passed, "ok" if passed else "not yes")


def train(
    model: Any, tokenizer: Any, cfg: GRPOConfig, engine: Any = None
) -> list[dict[str, float]]:
    return run_grpo(model, tokenizer, TEXTS, cfg, domain=YesOnEvenSeeds(), engine=engine)


CFG = GRPOConfig(steps=3, batch_size=16, group_size=4, minibatch_size=16, lr=1e-3, refill_rounds=0)


def test_refill_fills_the_batch_with_groups_that_have_reward_spread(
    tiny_model: Any, tokenizer: Any
) -> None:
    plain = train(copy.deepcopy(tiny_model), tokenizer, CFG)
    refilled = train(
        copy.deepcopy(tiny_model), tokenizer, CFG.model_copy(update={"refill_rounds": 4})
    )
    assert all(v["groups_with_signal"] < 1.0 for v in plain)  # odd seeds: no spread
    assert all(v["groups_with_signal"] == 1.0 for v in refilled)
    assert all(v["groups_sampled"] > 4 for v in refilled)
    assert all(v["groups_sampled"] == 4 for v in plain)


class TruncatingSampler(ScriptedSampler):
    """Every sample is cut by the token budget (finish reason "length")."""

    def sample(self, index: int) -> Completion:
        done = super().sample(index)
        return Completion(done.token_ids, done.logprobs, done.text, "length")


def test_overlong_filter_leaves_truncated_rollouts_out_of_the_loss(
    tiny_model: Any, tokenizer: Any
) -> None:
    cfg = GRPOConfig(steps=2, batch_size=8, group_size=4, minibatch_size=8, lr=1e-3)
    engine = TruncatingSampler(tokenizer, TEXTS)
    kept = copy.deepcopy(tiny_model)
    logged = train(kept, tokenizer, cfg, engine)
    assert all(v["truncated_frac"] == 1.0 for v in logged)
    before = weights(tiny_model)
    assert any(not torch.equal(value, before[name]) for name, value in weights(kept).items())
    filtered = copy.deepcopy(tiny_model)
    train(filtered, tokenizer, cfg.model_copy(update={"overlong_filter": True}), engine)
    for name, value in weights(tiny_model).items():
        assert torch.equal(weights(filtered)[name], value)  # nothing left to train on


def test_grpo_draws_only_at_its_difficulties() -> None:
    cfg = load_config(None, ["grpo.difficulties=[8, 9, 10]"])
    assert cfg.grpo.difficulties == [8, 9, 10]
    sampler = TaskSampler([SayYes()], "grpo", cfg.grpo.difficulties)
    assert {t.difficulty for t in sampler.sample(50)} == {8, 9, 10}


@pytest.mark.parametrize("value", ["[11]", "[]"])
def test_bad_difficulties_are_named(value: str) -> None:
    with pytest.raises(ConfigError, match="grpo.difficulties"):
        load_config(None, [f"grpo.difficulties={value}"])
