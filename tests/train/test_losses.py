"""The loss math of train/losses.py against values worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from posttrain.train.losses import dpo_loss, grpo_advantages, grpo_loss, sft_loss, token_logprobs

# ---- grpo_advantages ---------------------------------------------------------------------


def test_grpo_advantages_divide_by_the_unbiased_group_std() -> None:
    # mean 0.5, centered ±0.5, unbiased std sqrt(4 * 0.25 / 3) = 0.57735
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), group_size=4)
    expected = 0.5 / math.sqrt(1 / 3)  # 0.866025
    assert torch.allclose(adv, torch.tensor([expected, -expected, -expected, expected]), atol=1e-5)


def test_grpo_advantages_of_a_group_with_equal_rewards_are_zero_not_nan() -> None:
    adv = grpo_advantages(torch.tensor([1.0, 1.0, 1.0, 1.0]), group_size=4)
    assert not torch.isnan(adv).any()
    assert torch.equal(adv, torch.zeros(4))


def test_grpo_advantages_without_scaling_are_only_centered() -> None:
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), group_size=4, scale=False)
    assert torch.allclose(adv, torch.tensor([0.5, -0.5, -0.5, 0.5]))


def test_grpo_advantages_normalize_each_group_on_its_own() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    adv = grpo_advantages(rewards, group_size=4)
    assert torch.allclose(adv[:4], grpo_advantages(rewards[:4], group_size=4))
    assert torch.equal(adv[4:], torch.zeros(4))


def test_grpo_advantages_reject_rewards_that_do_not_split_into_groups() -> None:
    with pytest.raises(ValueError, match="groups of 4"):
        grpo_advantages(torch.zeros(6), group_size=4)


# ---- grpo_loss ---------------------------------------------------------------------------

OLD = torch.tensor([[-1.0, -1.0]])  # [1, 2]
# ratios ρ = e^{π − π_old} of 1.5 (above 1 + 0.28) and 0.5 (below 1 − 0.2)
NEW = OLD + torch.log(torch.tensor([[1.5, 0.5]]))
MASK = torch.ones(1, 2)


def test_grpo_loss_clips_the_high_side_at_clip_eps_high_for_a_positive_advantage() -> None:
    # A = 2: token 1 min(3.0, 1.28·2 = 2.56) = 2.56 (clipped); token 2 min(1.0, 0.8·2) = 1.0
    loss, stats = grpo_loss(NEW, OLD, torch.tensor([2.0]), MASK, clip_eps=0.2, clip_eps_high=0.28)
    assert loss.item() == pytest.approx(-(2.56 + 1.0) / 2, abs=1e-5)
    assert stats["clip_frac"].item() == pytest.approx(0.5)
    assert stats["ratio"].item() == pytest.approx(1.0, abs=1e-6)


def test_grpo_loss_clips_the_low_side_at_clip_eps_for_a_negative_advantage() -> None:
    # A = −2: token 1 min(−3.0, −2.56) = −3.0; token 2 min(−1.0, 0.8·−2 = −1.6) = −1.6 (clipped)
    loss, stats = grpo_loss(NEW, OLD, torch.tensor([-2.0]), MASK, clip_eps=0.2, clip_eps_high=0.28)
    assert loss.item() == pytest.approx((3.0 + 1.6) / 2, abs=1e-5)
    assert stats["clip_frac"].item() == pytest.approx(0.5)


def test_grpo_loss_clips_symmetrically_without_clip_eps_high() -> None:
    # A = 2: token 1 min(3.0, 1.2·2 = 2.4) = 2.4; token 2 unclipped 1.0
    loss, _ = grpo_loss(NEW, OLD, torch.tensor([2.0]), MASK, clip_eps=0.2)
    assert loss.item() == pytest.approx(-(2.4 + 1.0) / 2, abs=1e-5)


def test_grpo_loss_has_no_gradient_through_clipped_tokens() -> None:
    new = NEW.clone().requires_grad_(True)
    loss, _ = grpo_loss(new, OLD, torch.tensor([2.0]), MASK, clip_eps=0.2, clip_eps_high=0.28)
    loss.backward()
    assert new.grad is not None
    # token 1 is clipped: zero; token 2: d(−ρ·A / 2)/dπ = −ρ·A / 2 = −0.5
    assert torch.allclose(new.grad, torch.tensor([[0.0, -0.5]]), atol=1e-6)


def test_grpo_loss_token_aggregation_weights_every_token_equally() -> None:
    # ratio 1 everywhere, so each token's loss is −A: −1 on 3 tokens, +1 on 1 token
    logprobs = torch.zeros(2, 3)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    loss, _ = grpo_loss(logprobs, logprobs, torch.tensor([1.0, -1.0]), mask, aggregation="token")
    assert loss.item() == pytest.approx((-3.0 + 1.0) / 4)


def test_grpo_loss_sequence_aggregation_weights_every_sequence_equally() -> None:
    logprobs = torch.zeros(2, 3)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    loss, _ = grpo_loss(logprobs, logprobs, torch.tensor([1.0, -1.0]), mask, aggregation="sequence")
    assert loss.item() == pytest.approx((-1.0 + 1.0) / 2)


def test_grpo_loss_rejects_an_unknown_aggregation() -> None:
    with pytest.raises(ValueError, match="aggregation"):
        grpo_loss(NEW, OLD, torch.tensor([1.0]), MASK, aggregation="batch")


def test_grpo_loss_adds_the_k3_kl_penalty_to_the_reference() -> None:
    logprobs = torch.tensor([[-1.0, -2.0]])
    ref = torch.tensor([[-1.5, -1.0]])
    # δ = ref − π = (−0.5, 1.0); k3 = e^δ − δ − 1
    k3 = [math.exp(-0.5) + 0.5 - 1.0, math.exp(1.0) - 1.0 - 1.0]  # 0.10653, 0.71828
    loss, stats = grpo_loss(
        logprobs, logprobs, torch.tensor([0.0]), MASK, ref_logprobs=ref, kl_coef=0.1
    )
    assert stats["kl"].item() == pytest.approx(sum(k3) / 2, abs=1e-6)
    assert loss.item() == pytest.approx(0.1 * sum(k3) / 2, abs=1e-6)


def test_grpo_loss_ignores_the_reference_when_kl_coef_is_zero() -> None:
    logprobs = torch.tensor([[-1.0, -2.0]])
    loss, stats = grpo_loss(
        logprobs, logprobs, torch.tensor([0.0]), MASK, ref_logprobs=logprobs - 1.0, kl_coef=0.0
    )
    assert "kl" not in stats
    assert loss.item() == 0.0


# ---- dpo_loss, sft_loss, token_logprobs ---------------------------------------------------


def test_dpo_loss_is_minus_log_sigmoid_of_beta_times_the_margin() -> None:
    # pair 1: (−3 − −4) − (−5 − −4.5) = 1.5; pair 2: (−2 − −2) − (−1 − −3) = −2
    loss, margin = dpo_loss(
        policy_chosen=torch.tensor([-3.0, -2.0]),
        policy_rejected=torch.tensor([-5.0, -1.0]),
        ref_chosen=torch.tensor([-4.0, -2.0]),
        ref_rejected=torch.tensor([-4.5, -3.0]),
        beta=0.1,
    )

    def minus_log_sigmoid(x: float) -> float:
        return math.log1p(math.exp(-x))

    assert torch.allclose(margin, torch.tensor([0.15, -0.2]))
    expected = (minus_log_sigmoid(0.15) + minus_log_sigmoid(-0.2)) / 2  # (0.62096 + 0.79814) / 2
    assert loss.item() == pytest.approx(expected, abs=1e-6)


def test_sft_loss_is_the_negative_mean_logprob_over_masked_tokens() -> None:
    logprobs = torch.tensor([[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    assert sft_loss(logprobs, mask).item() == pytest.approx((1.0 + 2.0 + 5.0) / 3)


def test_sft_loss_of_an_empty_mask_is_zero() -> None:
    assert sft_loss(torch.tensor([[-1.0, -2.0]]), torch.zeros(1, 2)).item() == 0.0


def test_token_logprobs_of_a_hand_made_distribution() -> None:
    logits = torch.tensor([[[0.0, math.log(3.0)], [math.log(3.0), 0.0]]])  # [1, 2, 2]
    labels = torch.tensor([[1, 1]])
    expected = torch.tensor([[math.log(0.75), math.log(0.25)]])
    assert torch.allclose(token_logprobs(logits, labels), expected, atol=1e-6)


def test_token_logprobs_equal_log_softmax_gathered_at_the_labels() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 7, generator=generator)  # [B, T, V]
    labels = torch.randint(0, 7, (2, 3), generator=generator)  # [B, T]
    manual = logits - logits.logsumexp(dim=-1, keepdim=True)
    expected = torch.stack(
        [torch.stack([manual[b, t, labels[b, t]] for t in range(3)]) for b in range(2)]
    )
    assert torch.allclose(token_logprobs(logits, labels), expected, atol=1e-6)
