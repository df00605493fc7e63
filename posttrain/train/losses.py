"""Loss math shared by the trainers: pure functions on tensors, no model, no state.

Shapes: B sequences, T tokens (already shifted so position t scores token t), V the
vocabulary. Masks are float tensors of 0/1 selecting the tokens a loss counts.

    adv = grpo_advantages(rewards, group_size=8)                 # [B]
    loss, stats = grpo_loss(logprobs, old, adv, mask, clip_eps_high=0.28)
    loss, margin = dpo_loss(pc, pr, rc, rr, beta=0.1, loss_type="ipo",
                            chosen_tokens=nc, rejected_tokens=nr)

What is here: token logprobs (optionally chunked over positions), masked NLL, the DPO
family (sigmoid, cDPO label smoothing, rDPO, IPO, reference-free), advantages (GRPO
group-normalized, Dr. GRPO unscaled, RLOO leave-one-out, REINFORCE++ batch-normalized),
and the clipped-surrogate policy loss with its options: asymmetric clip (DAPO), GSPO
sequence-level ratio, token / sequence / constant (Dr. GRPO) aggregation, k3 KL with
optional importance-ratio correction, truncated importance sampling against the
rollout engine's logprobs (TIS). `tests/train/test_trl_parity.py` checks these
against TRL 1.16's own loss code.

Not guaranteed: the functions do not check that masks are 0/1 or that logprobs are
≤ 0; chunking bounds the float32 working set of `token_logprobs`, not the size of the
logits the model already produced.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

AGGREGATIONS = ("token", "sequence", "constant")
RATIO_LEVELS = ("token", "sequence")
DPO_LOSS_TYPES = ("sigmoid", "robust", "ipo")


# ---- logprobs and NLL ----------------------------------------------------------------------


def _gathered_log_softmax(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, labels[..., None]).squeeze(-1)


def token_logprobs(
    logits: torch.Tensor, labels: torch.Tensor, chunk: int | None = None
) -> torch.Tensor:
    """log p(labels) under `logits` [B, T, V] → [B, T] (labels [B, T], any int).

    `chunk` = N runs the float32 log_softmax on N positions at a time, so the working
    set is N × V instead of B × T × V; under autograd each chunk is recomputed in the
    backward pass (activation checkpointing) rather than kept. Same values either way.
    """
    if chunk is None:
        return _gathered_log_softmax(logits, labels)
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of positions, got {chunk}")
    flat_logits = logits.reshape(-1, logits.shape[-1])  # [B*T, V]
    flat_labels = labels.reshape(-1)  # [B*T]
    grad = torch.is_grad_enabled() and flat_logits.requires_grad
    parts = []
    for i in range(0, flat_labels.numel(), chunk):
        x, y = flat_logits[i : i + chunk], flat_labels[i : i + chunk]
        if grad:
            part = checkpoint(_gathered_log_softmax, x, y, use_reentrant=False)
        else:
            part = _gathered_log_softmax(x, y)
        parts.append(part)
    if not parts:
        return torch.zeros(labels.shape, dtype=torch.float32, device=logits.device)
    return torch.cat(parts).view(labels.shape)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `values` over the positions where `mask` is 1 (0 when the mask is empty)."""
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def sft_loss(logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood per assistant token: -mean(logprobs[mask])."""
    return -masked_mean(logprobs, mask)


# ---- DPO family ----------------------------------------------------------------------------


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor | None,
    ref_rejected: torch.Tensor | None,
    beta: float,
    *,
    loss_type: str = "sigmoid",
    label_smoothing: float = 0.0,
    chosen_tokens: torch.Tensor | None = None,
    rejected_tokens: torch.Tensor | None = None,
    positive_lambda: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The DPO family on summed sequence logprobs [B] each; returns (mean loss, margin [B]).

    With Δ = (π_c − ref_c) − (π_r − ref_r) and the margin β·Δ (detached; for IPO with
    token counts, of the length-normalized Δ its loss uses):
    - "sigmoid": DPO (Rafailov et al. 2023), −log σ(βΔ); with `label_smoothing` ε it is
      conservative DPO (cDPO, Mitchell 2023): −(1−ε)·log σ(βΔ) − ε·log σ(−βΔ).
    - "robust": rDPO (Chowdhury et al. 2024), unbiased under label flips of rate ε:
      (−(1−ε)·log σ(βΔ) + ε·log σ(−βΔ)) / (1 − 2ε).
    - "ipo": IPO (Azar et al. 2023, Eq. 17), (Δ − 1/(2β))². Given `chosen_tokens` and
      `rejected_tokens` [B], each side's log ratio is first divided by its token count
      (TRL's length-normalized form, which the IPO authors endorse); without them the
      summed form of the paper.
    `ref_chosen = ref_rejected = None` is reference-free (the reference logprobs are 0).
    `positive_lambda` λ > 0 (sigmoid and robust, ε = 0) is DPO-Positive (DPOP, Pal et al. 2024,
    Eq. 3): βΔ becomes β·(Δ − λ·max(0, ref_c − π_c)), a penalty once the chosen answer
    is less likely than under the reference — which plain DPO allows, and which pairs
    that differ in a token or two (a digit of an answer) drive it to.
    """
    if loss_type not in DPO_LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {DPO_LOSS_TYPES}, got {loss_type!r}")
    if not 0.0 <= label_smoothing < 0.5:
        raise ValueError(f"label_smoothing must be in [0, 0.5), got {label_smoothing}")
    if (ref_chosen is None) != (ref_rejected is None):
        raise ValueError("give both ref_chosen and ref_rejected, or neither (reference-free)")
    if positive_lambda < 0:
        raise ValueError(f"positive_lambda must be >= 0, got {positive_lambda}")
    if loss_type == "ipo" and label_smoothing > 0:
        raise ValueError("label_smoothing is for the sigmoid and robust losses; IPO has none")
    if positive_lambda > 0 and (ref_chosen is None or loss_type == "ipo" or label_smoothing > 0):
        # (with ε > 0 the flipped term ε·log σ(−logits) would reward lowering the chosen answer)
        raise ValueError(
            "positive_lambda (DPOP) needs a reference, the sigmoid or robust loss and no "
            "label_smoothing"
        )
    chosen = policy_chosen if ref_chosen is None else policy_chosen - ref_chosen  # [B]
    rejected = policy_rejected if ref_rejected is None else policy_rejected - ref_rejected
    margin = beta * (chosen - rejected)  # [B]
    if loss_type == "ipo":
        if (chosen_tokens is None) != (rejected_tokens is None):
            raise ValueError("give both chosen_tokens and rejected_tokens, or neither")
        if chosen_tokens is not None and rejected_tokens is not None:
            chosen = chosen / chosen_tokens.clamp(min=1.0)
            rejected = rejected / rejected_tokens.clamp(min=1.0)
            margin = beta * (
                chosen - rejected
            )  # the Δ the loss sees, so its sign is the logged one
        losses = (chosen - rejected - 1.0 / (2.0 * beta)) ** 2
    else:
        eps = label_smoothing
        logits = margin  # [B]
        if positive_lambda > 0:
            logits = margin - beta * positive_lambda * torch.relu(-chosen)
        agree, flip = -F.logsigmoid(logits), -F.logsigmoid(-logits)
        if loss_type == "sigmoid":
            losses = (1.0 - eps) * agree + eps * flip
        else:
            losses = ((1.0 - eps) * agree - eps * flip) / (1.0 - 2.0 * eps)
    return losses.mean(), margin.detach()


# ---- advantages ----------------------------------------------------------------------------


def _groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    return rewards.view(-1, group_size).float()  # [B, G]


def group_spread(
    rewards: torch.Tensor, group_size: int, scored: torch.Tensor | None = None
) -> torch.Tensor:
    """Whether each group's rewards differ [B]: compared exactly, not by std > 0, since
    the float mean of equal rewards (0.86 eight times) can be an ulp off them, and in
    float32, as the advantages see them (0.3 and 0.1 + 0.2 are one reward there).
    `scored` [B*G] (bool) limits the comparison to the rollouts that were judged.

    Every "has this group a gradient?" question of the trainers asks this function, so
    dynamic sampling, guidance and the update never disagree about a group."""
    grouped = _groups(rewards, group_size)  # [B, G]
    if scored is None:
        return (grouped != grouped[:, :1]).any(dim=1)
    judged = scored.view(-1, group_size).bool()  # [B, G]
    high = grouped.masked_fill(~judged, float("-inf")).amax(dim=1)  # [B]
    low = grouped.masked_fill(~judged, float("inf")).amin(dim=1)  # [B]
    return high > low  # no judged rollout: -inf > inf is False; one: equal


def rewards_differ(values: Sequence[float]) -> bool:
    """`group_spread` for one group's judged rewards given as floats."""
    return bool(values) and bool(group_spread(torch.tensor(values), len(values)).any())


def grpo_advantages(
    rewards: torch.Tensor, group_size: int, scale: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """Group-normalized advantages (Shao et al. 2024): (r − mean_group) / (std_group + eps).

    `rewards` [B*G] holds groups of `group_size` consecutive samples of one prompt.
    `scale=False` drops the division by the std (Dr. GRPO, Liu et al. 2025). Std is the
    unbiased one, as in TRL; TRL's eps is 1e-4. A group of equal rewards gets exactly 0.
    """
    grouped = _groups(rewards, group_size)  # [B, G]
    centered = grouped - grouped.mean(dim=1, keepdim=True)
    if scale:
        std = grouped.std(dim=1, keepdim=True) if group_size > 1 else torch.ones_like(grouped)
        centered = centered / (std + eps)
    spread = group_spread(rewards, group_size)[:, None]  # [B, 1]
    return torch.where(spread, centered, 0.0).view(-1)  # [B*G]


def rloo_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """RLOO (Ahmadian et al. 2024): each sample's reward minus the mean of the other
    `group_size − 1` samples of its group, r_i − (Σ_j r_j − r_i)/(G − 1): [B*G]."""
    if group_size < 2:
        raise ValueError(f"RLOO needs at least 2 samples per group, got {group_size}")
    grouped = _groups(rewards, group_size)  # [B, G]
    baseline = (grouped.sum(dim=1, keepdim=True) - grouped) / (group_size - 1)
    spread = group_spread(rewards, group_size)[:, None]  # [B, 1]
    return torch.where(spread, grouped - baseline, 0.0).view(-1)


def batch_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """REINFORCE++-style global baseline (Hu 2025): (r − mean_batch) / (std_batch + eps)
    over every reward of the batch [N] → [N] (unbiased std; 0 when all are equal)."""
    flat = rewards.float().view(-1)
    if not bool(group_spread(flat, flat.numel()).any()):
        return torch.zeros_like(flat)
    return (flat - flat.mean()) / (flat.std() + eps)


# ---- the clipped-surrogate policy loss ------------------------------------------------------


def sequence_log_ratio(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """GSPO (Zheng et al. 2025): the log of the geometric mean of the token ratios of
    each sequence, Σ_t m_t (π − π_old) / Σ_t m_t: [B, 1]."""
    log_ratio = torch.where(mask.bool(), logprobs - old_logprobs, 0.0)  # [B, T]
    return (log_ratio.sum(-1) / mask.sum(-1).clamp(min=1.0))[:, None]


def truncated_is_weights(
    old_logprobs: torch.Tensor, rollout_logprobs: torch.Tensor, cap: float
) -> torch.Tensor:
    """TIS (Yao et al. 2025, "Your efficient RL framework secretly brings you off-policy
    RL training"): per token min(e^{π_old_train − π_rollout}, cap), detached: [B, T].

    Corrects for the rollout engine sampling from a slightly different distribution
    than the training model computes; the cap bounds the variance."""
    return torch.exp(old_logprobs - rollout_logprobs).clamp(max=cap).detach()


def aggregate(
    per_token: torch.Tensor, mask: torch.Tensor, aggregation: str, max_tokens: int | None = None
) -> torch.Tensor:
    """Reduce a per-token loss [B, T] to a scalar.

    "token": mean over every counted token of the batch (DAPO, Yu et al. 2025; TRL's
    "dapo"/"bnpo"). "sequence": mean per sequence, then over sequences (original GRPO;
    TRL's "grpo"). "constant": Σ counted tokens / (B × max_tokens) (Dr. GRPO, Liu et
    al. 2025; TRL's "dr_grpo" with max_completion_length = max_tokens).
    """
    if aggregation == "token":
        return masked_mean(per_token, mask)
    if aggregation == "sequence":
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    if aggregation == "constant":
        if max_tokens is None or max_tokens < 1:
            raise ValueError(f"aggregation 'constant' needs max_tokens ≥ 1, got {max_tokens}")
        return (per_token * mask).sum() / (per_token.shape[0] * max_tokens)
    raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")


def micro_batch_weight(
    mask: torch.Tensor, total_tokens: float, total_sequences: int, aggregation: str
) -> float:
    """The share of a minibatch's loss that a micro-batch with loss mask `mask` [b, T]
    carries, so that Σ weight × `aggregate(micro)` = `aggregate(whole minibatch)`.

    "token": its counted tokens / the minibatch's; "sequence" and "constant": its
    sequences / the minibatch's (both are means over sequences)."""
    if aggregation == "token":
        return float(mask.sum()) / max(total_tokens, 1.0)
    if aggregation in ("sequence", "constant"):
        return mask.shape[0] / total_sequences
    raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")


def grpo_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    clip_eps_high: float | None = None,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    aggregation: str = "token",
    *,
    ratio_level: str = "token",
    max_tokens: int | None = None,
    rollout_logprobs: torch.Tensor | None = None,
    tis_cap: float | None = None,
    kl_ratio_correction: bool = False,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped-surrogate policy loss (PPO, Schulman et al. 2017, as used by GRPO) with an
    optional k3 KL penalty to a reference.

    logprobs, old_logprobs, ref_logprobs, rollout_logprobs, mask: [B, T]; advantages: [B].
    per token: w · −min(ρ·A, clip(ρ, 1−ε, 1+ε_high)·A) + kl_coef · (e^{ref−π} − (ref−π) − 1)
    - ρ = e^{π − π_old} per token (`ratio_level="token"`), or per sequence the geometric
      mean of the token ratios, clipped as one number (`"sequence"`, GSPO).
    - w = `truncated_is_weights(old_logprobs, rollout_logprobs, tis_cap)` when both are
      given (TIS), else 1; it scales the policy term only, not the KL (as TRL does).
    - `kl_ratio_correction` multiplies the k3 term by ρ (DeepSeek-V3.2's unbiased KL
      gradient; TRL's `use_bias_correction_kl`, default True there, False here).
    - `aggregation`: see `aggregate` ("constant" needs `max_tokens`).
    Stats: clip_frac, ratio, kl (with a reference), tis_weight_mean and
    tis_clipped_frac (with TIS), each a masked mean.
    """
    if ratio_level not in RATIO_LEVELS:
        raise ValueError(f"ratio_level must be one of {RATIO_LEVELS}, got {ratio_level!r}")
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if (rollout_logprobs is None) != (tis_cap is None):
        raise ValueError("truncated importance sampling needs both rollout_logprobs and tis_cap")
    high = clip_eps if clip_eps_high is None else clip_eps_high
    # Uncounted positions (padding) are zeroed before any exp: values that differ there by
    # more than ~88 nats would overflow to inf, and inf × a zero mask is NaN.
    counted = mask.bool()
    if ratio_level == "sequence":
        ratio = torch.exp(sequence_log_ratio(logprobs, old_logprobs, mask))  # [B, 1]
    else:
        ratio = torch.exp(torch.where(counted, logprobs - old_logprobs, 0.0))  # [B, T]
    adv = advantages[:, None]  # [B, 1]
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + high) * adv
    per_token = (-torch.minimum(unclipped, clipped)).expand_as(logprobs)  # [B, T]
    stats: dict[str, torch.Tensor] = {}
    if rollout_logprobs is not None and tis_cap is not None:
        raw = torch.exp(torch.where(counted, old_logprobs - rollout_logprobs, 0.0)).detach()
        weights = raw.clamp(max=tis_cap)
        per_token = per_token * weights
        stats["tis_weight_mean"] = masked_mean(weights, mask)
        stats["tis_clipped_frac"] = masked_mean((raw > tis_cap).float(), mask)
    if ref_logprobs is not None and kl_coef > 0:
        delta = torch.where(counted, ref_logprobs - logprobs, 0.0)  # [B, T]
        kl = torch.exp(delta) - delta - 1.0  # [B, T], k3 estimator, ≥ 0
        stats["kl"] = masked_mean(kl.detach(), mask)
        if kl_ratio_correction:
            kl = kl * ratio
        per_token = per_token + kl_coef * kl
    loss = aggregate(per_token, mask, aggregation, max_tokens)
    is_clipped = ((ratio < 1.0 - clip_eps) & (adv < 0)) | ((ratio > 1.0 + high) & (adv > 0))
    stats["clip_frac"] = masked_mean(is_clipped.float().expand_as(mask), mask)
    stats["ratio"] = masked_mean(ratio.detach().expand_as(mask), mask)
    return loss, stats
