"""The loss math of train/losses.py against values worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from posttrain.train.losses import (
    aggregate,
    batch_advantages,
    dpo_loss,
    group_spread,
    grpo_advantages,
    grpo_loss,
    rewards_differ,
    rloo_advantages,
    sequence_log_ratio,
    sft_loss,
    token_logprobs,
    truncated_is_weights,
)

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


# 0.86 eight times: in float32 the group mean is 1 ulp off 0.86, so a std-based test
# of spread sees ~7e-8 and the std-scaled deviations come out near ±0.06.
PARTIAL_CREDIT = torch.tensor([0.86] * 8)


def test_advantages_of_equal_partial_credit_rewards_are_exactly_zero() -> None:
    assert torch.equal(grpo_advantages(PARTIAL_CREDIT, group_size=8), torch.zeros(8))
    assert torch.equal(grpo_advantages(PARTIAL_CREDIT, 8, scale=False), torch.zeros(8))
    assert torch.equal(rloo_advantages(PARTIAL_CREDIT, group_size=8), torch.zeros(8))
    assert torch.equal(batch_advantages(PARTIAL_CREDIT), torch.zeros(8))


def test_group_spread_is_whether_any_reward_differs_from_its_groups_first() -> None:
    rewards = torch.cat([PARTIAL_CREDIT, torch.tensor([0.86] * 7 + [0.85])])
    assert group_spread(rewards, group_size=8).tolist() == [False, True]


def test_group_spread_compares_judged_rewards_in_float32() -> None:
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0])
    judged = torch.tensor([True, True, True, False, False, False, True, False])
    assert group_spread(rewards, 4, judged).tolist() == [False, False]  # one judged: no spread
    assert group_spread(rewards, 4).tolist() == [True, True]
    assert not rewards_differ([0.3, 0.1 + 0.2]) and rewards_differ([0.3, 0.2])
    assert not rewards_differ([]) and not rewards_differ([0.5])


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


def test_chunked_token_logprobs_equal_the_unchunked_values_and_gradients() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=generator, requires_grad=True)  # [B, T, V]
    labels = torch.randint(0, 11, (3, 5), generator=generator)
    weights = torch.randn(3, 5, generator=generator)
    whole = token_logprobs(logits, labels)
    (grad_whole,) = torch.autograd.grad((whole * weights).sum(), logits)
    chunked = token_logprobs(logits, labels, chunk=4)  # 15 positions: 4 + 4 + 4 + 3
    (grad_chunked,) = torch.autograd.grad((chunked * weights).sum(), logits)
    assert torch.allclose(chunked, whole, atol=1e-6)
    assert torch.allclose(grad_chunked, grad_whole, atol=1e-6)


def test_chunked_token_logprobs_without_grad_equal_the_unchunked_values() -> None:
    generator = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 7, 5, generator=generator)
    labels = torch.randint(0, 5, (2, 7), generator=generator)
    with torch.no_grad():
        assert torch.allclose(
            token_logprobs(logits, labels, chunk=3), token_logprobs(logits, labels)
        )


def test_token_logprobs_reject_a_chunk_below_one() -> None:
    with pytest.raises(ValueError, match="chunk"):
        token_logprobs(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long), chunk=0)


# ---- DPO variants -------------------------------------------------------------------------

# one pair with Δ = (−3 − −4) − (−5 − −4.5) = 1.5, β = 0.1, so βΔ = 0.15
PAIR = dict(
    policy_chosen=torch.tensor([-3.0]),
    policy_rejected=torch.tensor([-5.0]),
    ref_chosen=torch.tensor([-4.0]),
    ref_rejected=torch.tensor([-4.5]),
)


def softplus(x: float) -> float:  # −log σ(−x)
    return math.log1p(math.exp(x))


def test_cdpo_label_smoothing_mixes_in_the_flipped_label() -> None:
    loss, _ = dpo_loss(**PAIR, beta=0.1, label_smoothing=0.1)
    expected = 0.9 * softplus(-0.15) + 0.1 * softplus(0.15)  # 0.9·0.62096 + 0.1·0.77096
    assert loss.item() == pytest.approx(expected, abs=1e-6)


def test_robust_dpo_subtracts_the_flipped_label_and_rescales() -> None:
    loss, _ = dpo_loss(**PAIR, beta=0.1, loss_type="robust", label_smoothing=0.1)
    expected = (0.9 * softplus(-0.15) - 0.1 * softplus(0.15)) / 0.8
    assert loss.item() == pytest.approx(expected, abs=1e-6)


def test_ipo_is_the_squared_distance_of_the_margin_to_one_over_two_beta() -> None:
    loss, margin = dpo_loss(**PAIR, beta=0.1, loss_type="ipo")
    assert loss.item() == pytest.approx((1.5 - 5.0) ** 2, abs=1e-5)
    assert margin.item() == pytest.approx(0.15)


def test_ipo_with_token_counts_normalizes_each_log_ratio_by_its_length() -> None:
    # chosen log ratio 1 over 2 tokens, rejected −0.5 over 5 tokens: Δ = 0.5 − (−0.1) = 0.6
    loss, margin = dpo_loss(
        **PAIR,
        beta=0.1,
        loss_type="ipo",
        chosen_tokens=torch.tensor([2.0]),
        rejected_tokens=torch.tensor([5.0]),
    )
    assert loss.item() == pytest.approx((0.6 - 5.0) ** 2, abs=1e-5)
    assert margin.item() == pytest.approx(0.06)  # β·Δ of the Δ the loss sees (summed: 0.15)


def test_reference_free_dpo_equals_a_zero_reference() -> None:
    chosen, rejected = torch.tensor([-3.0, -1.0]), torch.tensor([-5.0, -0.5])
    free, _ = dpo_loss(chosen, rejected, None, None, beta=0.1)
    zero, _ = dpo_loss(chosen, rejected, torch.zeros(2), torch.zeros(2), beta=0.1)
    assert free.item() == pytest.approx(zero.item())
    assert free.item() == pytest.approx((softplus(-0.2) + softplus(0.05)) / 2, abs=1e-6)


def test_dpo_positive_penalizes_only_a_chosen_answer_below_its_reference() -> None:
    # pair 1: chosen ratio −3 − −4 = +1 (above the reference: no penalty), Δ = 1.5;
    # pair 2: chosen ratio −2 − −1 = −1 (below it by 1), Δ = −1 − (−1 − −3) = −3.
    # DPOP logits: β·(Δ − λ·max(0, ref_c − π_c)) = 0.1·1.5 and 0.1·(−3 − 50·1) = −5.3
    loss, margin = dpo_loss(
        policy_chosen=torch.tensor([-3.0, -2.0]),
        policy_rejected=torch.tensor([-5.0, -1.0]),
        ref_chosen=torch.tensor([-4.0, -1.0]),
        ref_rejected=torch.tensor([-4.5, -3.0]),
        beta=0.1,
        positive_lambda=50.0,
    )
    assert torch.allclose(margin, torch.tensor([0.15, -0.3]))  # the DPO margin, unpenalized
    assert loss.item() == pytest.approx((softplus(-0.15) + softplus(5.3)) / 2, abs=1e-6)


def test_dpo_positive_at_lambda_zero_is_dpo() -> None:
    plain, _ = dpo_loss(**PAIR, beta=0.1)
    positive, _ = dpo_loss(**PAIR, beta=0.1, positive_lambda=0.0)
    assert positive.item() == plain.item()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"loss_type": "hinge"}, "loss_type"),
        ({"label_smoothing": 0.5}, "label_smoothing"),
        ({"label_smoothing": 0.1, "loss_type": "ipo"}, "IPO has none"),
        ({"positive_lambda": -1.0}, "positive_lambda"),
        ({"positive_lambda": 5.0, "loss_type": "ipo"}, "positive_lambda"),
        ({"positive_lambda": 5.0, "label_smoothing": 0.1}, "positive_lambda"),
        (
            {"positive_lambda": 5.0, "loss_type": "robust", "label_smoothing": 0.1},
            "label_smoothing",
        ),
    ],
)
def test_dpo_loss_rejects_bad_options(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        dpo_loss(**PAIR, beta=0.1, **kwargs)


def test_reference_free_dpo_positive_is_an_error() -> None:
    with pytest.raises(ValueError, match="needs a reference"):
        dpo_loss(torch.tensor([-1.0]), torch.tensor([-2.0]), None, None, 0.1, positive_lambda=5.0)


# ---- advantage baselines ------------------------------------------------------------------


def test_rloo_advantages_subtract_the_mean_of_the_other_samples() -> None:
    # group [1, 0, 0, 1]: sample 0's baseline (0 + 0 + 1) / 3 = 1/3, sample 1's 2/3
    adv = rloo_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0]), group_size=4)
    third = 1.0 / 3.0
    expected = torch.tensor([1 - third, -2 * third, -2 * third, 1 - third, 0.0, 0.0, 0.0, 0.0])
    assert torch.allclose(adv, expected, atol=1e-6)


def test_rloo_advantages_need_two_samples_per_group() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        rloo_advantages(torch.zeros(3), group_size=1)


def test_batch_advantages_normalize_by_the_batch_mean_and_std() -> None:
    # mean 0.5 over all four, unbiased std sqrt(1/3)
    adv = batch_advantages(torch.tensor([1.0, 1.0, 0.0, 0.0]))
    expected = 0.5 / math.sqrt(1 / 3)
    assert torch.allclose(adv, torch.tensor([expected, expected, -expected, -expected]), atol=1e-5)


def test_batch_advantages_of_equal_rewards_are_zero_not_nan() -> None:
    assert torch.equal(batch_advantages(torch.ones(4)), torch.zeros(4))


# ---- GSPO, aggregation, KL correction -----------------------------------------------------


def test_sequence_log_ratio_is_the_log_geometric_mean_of_the_counted_token_ratios() -> None:
    old = torch.zeros(1, 3)
    new = torch.log(torch.tensor([[2.0, 0.5, 8.0]]))  # the 8 is masked out
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    assert sequence_log_ratio(new, old, mask).item() == pytest.approx(0.0, abs=1e-6)


def test_gspo_clips_the_sequence_ratio_as_one_number() -> None:
    # token ratios 4 and 1: geometric mean 2, clipped at 1.28 for A = 1 on every token
    old = torch.zeros(1, 2)
    new = torch.log(torch.tensor([[4.0, 1.0]]))
    loss, stats = grpo_loss(
        new, old, torch.tensor([1.0]), MASK, clip_eps_high=0.28, ratio_level="sequence"
    )
    assert loss.item() == pytest.approx(-1.28, abs=1e-5)
    assert stats["clip_frac"].item() == 1.0
    assert stats["ratio"].item() == pytest.approx(2.0, abs=1e-5)


def test_gspo_spreads_an_unclipped_sequence_gradient_over_its_tokens() -> None:
    # ratio s = exp(mean(π − π_old)) = 1 here; d(−s·A)/dπ_t = −A·s / n_tokens = −0.5 each
    new = torch.zeros(1, 2, requires_grad=True)
    loss, _ = grpo_loss(new, torch.zeros(1, 2), torch.tensor([1.0]), MASK, ratio_level="sequence")
    loss.backward()
    assert new.grad is not None
    assert torch.allclose(new.grad, torch.tensor([[-0.5, -0.5]]))


def test_constant_aggregation_divides_the_token_sum_by_batch_times_max_tokens() -> None:
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert aggregate(per_token, mask, "constant", max_tokens=10).item() == pytest.approx(7 / 20)


def test_constant_aggregation_needs_max_tokens() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        aggregate(torch.zeros(1, 2), MASK, "constant")


def test_grpo_loss_rejects_an_unknown_ratio_level() -> None:
    with pytest.raises(ValueError, match="ratio_level"):
        grpo_loss(NEW, OLD, torch.tensor([1.0]), MASK, ratio_level="group")


def test_kl_ratio_correction_weights_the_k3_term_by_the_ratio() -> None:
    logprobs = torch.tensor([[-1.0, -2.0]])
    old = logprobs - torch.log(torch.tensor([[2.0, 0.5]]))  # ratios 2 and 0.5
    ref = torch.tensor([[-1.5, -1.0]])
    k3 = [math.exp(-0.5) + 0.5 - 1.0, math.exp(1.0) - 1.0 - 1.0]
    loss, _ = grpo_loss(
        logprobs,
        old,
        torch.tensor([0.0]),
        MASK,
        ref_logprobs=ref,
        kl_coef=0.1,
        kl_ratio_correction=True,
    )
    assert loss.item() == pytest.approx(0.1 * (2.0 * k3[0] + 0.5 * k3[1]) / 2, abs=1e-6)


# ---- truncated importance sampling against a train/rollout mismatch ---------------------------

TRAIN_OLD = torch.tensor([[-1.0, -1.0, -1.0]])  # the training model's logprobs before the update
# The rollout engine saw these tokens as less likely by 0.1, 0.5 and 2.0 nats:
# raw weights e^{0.1} = 1.105, e^{0.5} = 1.649, e^{2.0} = 7.389; the cap C = 2 binds the last.
ROLLOUT = TRAIN_OLD - torch.tensor([[0.1, 0.5, 2.0]])
CAP = 2.0
MASK3 = torch.ones(1, 3)


def test_truncated_is_weights_are_capped_and_detached() -> None:
    old = TRAIN_OLD.clone().requires_grad_(True)
    weights = truncated_is_weights(old, ROLLOUT, CAP)
    expected = torch.tensor([[math.exp(0.1), math.exp(0.5), CAP]])
    assert torch.allclose(weights, expected, atol=1e-6)
    assert not weights.requires_grad


def test_tis_scales_each_tokens_loss_by_its_capped_weight() -> None:
    # on policy (π = π_old_train): each token's loss is −A, so with A = 1 the TIS loss is
    # −mean(w) instead of −1
    adv = torch.tensor([1.0])
    plain, _ = grpo_loss(TRAIN_OLD, TRAIN_OLD, adv, MASK3)
    weighted, stats = grpo_loss(
        TRAIN_OLD, TRAIN_OLD, adv, MASK3, rollout_logprobs=ROLLOUT, tis_cap=CAP
    )
    w = [math.exp(0.1), math.exp(0.5), CAP]
    assert plain.item() == pytest.approx(-1.0)
    assert weighted.item() == pytest.approx(-sum(w) / 3, abs=1e-6)
    assert stats["tis_weight_mean"].item() == pytest.approx(sum(w) / 3, abs=1e-6)
    assert stats["tis_clipped_frac"].item() == pytest.approx(1 / 3)


def test_tis_scales_the_gradient_of_a_capped_token_by_the_cap() -> None:
    adv = torch.tensor([1.0])
    plain_lp = TRAIN_OLD.clone().requires_grad_(True)
    grpo_loss(plain_lp, TRAIN_OLD, adv, MASK3)[0].backward()
    tis_lp = TRAIN_OLD.clone().requires_grad_(True)
    grpo_loss(tis_lp, TRAIN_OLD, adv, MASK3, rollout_logprobs=ROLLOUT, tis_cap=CAP)[0].backward()
    assert plain_lp.grad is not None and tis_lp.grad is not None
    assert torch.allclose(plain_lp.grad, torch.full((1, 3), -1.0 / 3))
    scale = tis_lp.grad / plain_lp.grad
    assert torch.allclose(scale, torch.tensor([[math.exp(0.1), math.exp(0.5), CAP]]), atol=1e-6)


def test_tis_leaves_the_kl_term_unweighted() -> None:
    ref = TRAIN_OLD - 0.5
    kl = math.exp(-0.5) + 0.5 - 1.0
    loss, _ = grpo_loss(
        TRAIN_OLD,
        TRAIN_OLD,
        torch.tensor([0.0]),
        MASK3,
        ref_logprobs=ref,
        kl_coef=0.1,
        rollout_logprobs=ROLLOUT,
        tis_cap=CAP,
    )
    assert loss.item() == pytest.approx(0.1 * kl, abs=1e-6)


def test_tis_needs_both_the_rollout_logprobs_and_the_cap() -> None:
    with pytest.raises(ValueError, match="tis_cap"):
        grpo_loss(TRAIN_OLD, TRAIN_OLD, torch.tensor([1.0]), MASK3, rollout_logprobs=ROLLOUT)


@pytest.mark.parametrize("ratio_level", ["token", "sequence"])
def test_grpo_loss_ignores_values_at_uncounted_positions_however_far_apart(
    ratio_level: str,
) -> None:
    # Padding may hold anything (a fill value on one side, a real logprob on the other):
    # 1000 nats apart, e^Δ overflows to inf and inf × a zero mask would be NaN.
    logprobs = torch.tensor([[-0.5, -1.0, 0.0]], requires_grad=True)
    old = torch.tensor([[-0.6, -0.9, -1000.0]])
    ref = torch.tensor([[-0.4, -1.1, 1000.0]])
    rollout = torch.tensor([[-0.7, -0.8, 1000.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    kwargs = dict(ref_logprobs=ref, kl_coef=0.1, ratio_level=ratio_level, tis_cap=2.0)
    loss, stats = grpo_loss(logprobs, old, torch.tensor([1.0]), mask, rollout_logprobs=rollout,
                            **kwargs)  # fmt: skip
    loss.backward()
    assert logprobs.grad is not None and torch.isfinite(logprobs.grad).all()
    assert all(torch.isfinite(v) for v in stats.values())
    # The same as the two counted tokens alone.
    short = logprobs.detach()[:, :2].clone().requires_grad_(True)
    kwargs["ref_logprobs"] = ref[:, :2]
    alone, _ = grpo_loss(short, old[:, :2], torch.tensor([1.0]), mask[:, :2],
                         rollout_logprobs=rollout[:, :2], **kwargs)  # fmt: skip
    alone.backward()
    assert torch.allclose(loss, alone) and short.grad is not None
    assert torch.allclose(logprobs.grad[:, :2], short.grad) and logprobs.grad[0, 2] == 0
