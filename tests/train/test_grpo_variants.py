"""The GRPO loss variants (`GRPOConfig.loss`) and truncated importance sampling
(`GRPOConfig.tis_cap`) as the training loop wires them."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from posttrain.config import GRPOConfig
from posttrain.train import grpo as grpo_module
from posttrain.train.grpo import LossPlan, loss_plan, step_advantages
from tests.train.test_grpo import SMALL, run_grpo

VARIANTS = ["grpo", "dr_grpo", "dapo", "rloo", "gspo", "reinforce_pp"]
# two groups of four: one with reward spread, one without
REWARDS = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])


def cfg_for(loss: str, **update: Any) -> GRPOConfig:
    return GRPOConfig(group_size=4, loss=loss, **update)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("loss", "plan"),
    [
        ("grpo", LossPlan("group", True, "token", "token")),
        ("dr_grpo", LossPlan("group", False, "constant", "token")),
        ("dapo", LossPlan("group", True, "token", "token")),
        ("rloo", LossPlan("rloo", False, "token", "token")),
        ("gspo", LossPlan("group", True, "sequence", "sequence")),
        ("reinforce_pp", LossPlan("batch", True, "token", "token")),
    ],
)
def test_each_variant_maps_onto_its_baseline_aggregation_and_ratio_level(
    loss: str, plan: LossPlan
) -> None:
    assert loss_plan(cfg_for(loss)) == plan


def test_grpo_keeps_the_configured_aggregation_and_scaling() -> None:
    cfg = cfg_for("grpo", aggregation="sequence", scale_rewards=False)
    assert loss_plan(cfg) == LossPlan("group", False, "sequence", "token")


def test_the_default_loss_is_grpo_without_tis() -> None:
    assert GRPOConfig().loss == "grpo" and GRPOConfig().tis_cap is None


@pytest.mark.parametrize("loss", ["grpo", "dapo", "gspo"])
def test_group_normalized_variants_scale_by_the_group_std(loss: str) -> None:
    adv, keep = step_advantages(REWARDS, cfg_for(loss))
    a = 0.5 / math.sqrt(1 / 3)  # centered ±0.5 over the unbiased std
    expected = torch.tensor([a, -a, -a, a, 0.0, 0.0, 0.0, 0.0])
    assert torch.allclose(adv, expected, atol=1e-5)
    assert keep == [0, 1, 2, 3]


def test_dr_grpo_advantages_are_only_centered() -> None:
    adv, keep = step_advantages(REWARDS, cfg_for("dr_grpo"))
    assert torch.allclose(adv, torch.tensor([0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0]))
    assert keep == [0, 1, 2, 3]


def test_rloo_advantages_use_the_leave_one_out_baseline() -> None:
    adv, keep = step_advantages(REWARDS, cfg_for("rloo"))
    assert torch.allclose(adv[:4], torch.tensor([2 / 3, -2 / 3, -2 / 3, 2 / 3]), atol=1e-6)
    assert torch.equal(adv[4:], torch.zeros(4))
    assert keep == [0, 1, 2, 3]


def test_reinforce_pp_keeps_every_rollout_with_its_batch_normalized_advantage() -> None:
    adv, keep = step_advantages(REWARDS, cfg_for("reinforce_pp"))
    mean, std = 6 / 8, math.sqrt((6 * 0.25**2 + 2 * 0.75**2) / 7)
    expected = (REWARDS - mean) / (std + 1e-6)
    assert torch.allclose(adv, expected, atol=1e-5)
    assert keep == list(range(8))  # the all-pass group is better than the batch: signal


def test_reinforce_pp_keeps_nothing_when_the_whole_batch_agrees() -> None:
    _, keep = step_advantages(torch.ones(8), cfg_for("reinforce_pp"))
    assert keep == []


# A group whose one failure is a verifier that raised (reward 0, no verdict) and a
# group with real spread whose first rollout's verifier raised.
UNSCORED = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
SCORED = [True, True, False, True, False, True, True, True]


@pytest.mark.parametrize("loss", VARIANTS)
def test_a_rollout_whose_verifier_raised_is_left_out_of_baseline_and_loss(loss: str) -> None:
    adv, keep = step_advantages(UNSCORED, cfg_for(loss), SCORED)
    if loss == "reinforce_pp":  # batch baseline over the six scored rewards (four are 1)
        rewards = UNSCORED[[0, 1, 3, 5, 6, 7]]
        want = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
        assert keep == [0, 1, 3, 5, 6, 7]
        assert torch.allclose(adv[keep], want) and adv[2] == 0 and adv[4] == 0
        return
    assert keep == [5, 6, 7]  # the first group's scored rewards agree: no signal
    assert torch.equal(adv[:5], torch.zeros(5))
    # [1, 0, 1] over three: mean 2/3; the std-scaled ones divide by the unbiased std
    want = {"rloo": [0.5, -1.0, 0.5], "dr_grpo": [1 / 3, -2 / 3, 1 / 3]}.get(loss)
    if want is None:
        std = math.sqrt(((1 / 3) ** 2 * 2 + (2 / 3) ** 2) / 2)
        want = [(1 / 3) / std, (-2 / 3) / std, (1 / 3) / std]
    assert torch.allclose(adv[5:], torch.tensor(want), atol=1e-5)


def test_a_batch_whose_verifiers_all_raised_but_one_trains_on_nothing() -> None:
    for loss in VARIANTS:
        _, keep = step_advantages(UNSCORED, cfg_for(loss), [True] + [False] * 7)
        assert keep == []


@pytest.mark.parametrize("loss", VARIANTS)
def test_equal_partial_credit_rewards_give_no_signal(loss: str) -> None:
    # Eight equal rewards whose float32 mean is 1 ulp off them: no spread, nothing kept.
    rewards = torch.tensor([0.86] * 8 + [1.0, 0.0, 0.0, 1.0] * 2)
    cfg = GRPOConfig(group_size=8, loss=loss)  # type: ignore[arg-type]
    adv, keep = step_advantages(rewards, cfg)
    if loss == "reinforce_pp":  # the batch has spread: the 0.86s are above its mean
        assert keep == list(range(16))
    else:
        assert torch.equal(adv[:8], torch.zeros(8)) and keep == list(range(8, 16))
    _, keep = step_advantages(rewards[:8], cfg)
    assert keep == []


@pytest.mark.parametrize("loss", VARIANTS)
def test_a_two_step_run_of_each_variant_logs_finite_losses(
    tiny_model: Any, tokenizer: Any, loss: str
) -> None:
    cfg = SMALL.model_copy(update={"loss": loss, "kl_coef": 0.05})
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg)
    assert len(logged) == 2
    assert all(math.isfinite(v["loss"]) and v["loss"] != 0.0 for v in logged)


def test_tis_runs_log_the_weight_mean_and_clipped_share(tiny_model: Any, tokenizer: Any) -> None:
    cfg = SMALL.model_copy(update={"tis_cap": 2.0})
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg)
    for values in logged:
        assert 0.0 < values["tis_weight_mean"] <= 2.0
        assert 0.0 <= values["tis_clipped_frac"] <= 1.0
        assert math.isfinite(values["loss"])


def test_runs_without_tis_do_not_log_tis_metrics(tiny_model: Any, tokenizer: Any) -> None:
    logged = run_grpo(tiny_model, tokenizer, ["yes", "no"], SMALL)
    assert all("tis_weight_mean" not in v for v in logged)


def test_tis_recomputes_the_old_logprobs_with_the_training_model(
    tiny_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scripted sampler reports −1 per token, far from the tiny model's own logprobs:
    # with TIS the ratio's "old" is the training model (so the first update's ratio is 1)
    # and the −1s arrive as the rollout logprobs.
    calls: list[dict[str, torch.Tensor]] = []
    real = grpo_module.grpo_loss

    def spy(lp: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor, **kw: Any):
        calls.append({"lp": lp.detach(), "old": old, "mask": mask, **kw})
        return real(lp, old, adv, mask, **kw)

    monkeypatch.setattr(grpo_module, "grpo_loss", spy)
    run_grpo(tiny_model, tokenizer, ["yes", "no"], SMALL.model_copy(update={"tis_cap": 2.0}))
    first = calls[0]
    mask = first["mask"].bool()
    assert torch.allclose(first["lp"][mask], first["old"][mask], atol=1e-5)
    assert torch.equal(first["rollout_logprobs"][mask], torch.full((int(mask.sum()),), -1.0))
    assert first["tis_cap"] == 2.0
