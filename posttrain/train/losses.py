"""Loss math shared by the trainers: pure functions on tensors, no model, no state.

Shapes: B sequences, T tokens (already shifted so position t scores token t).
Masks are float tensors of 0/1 selecting the tokens a loss counts.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def token_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """log p(labels) under `logits` [B, T, V] → [B, T] (labels [B, T], any int)."""
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, labels[..., None]).squeeze(-1)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `values` over the positions where `mask` is 1 (0 when the mask is empty)."""
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def sft_loss(logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood per assistant token: -mean(logprobs[mask])."""
    return -masked_mean(logprobs, mask)


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """DPO (Rafailov et al. 2023) on summed sequence logprobs [B] each.

    Returns (mean loss, per-pair implicit reward margin [B]).
    loss = -log σ(β · ((π_c − ref_c) − (π_r − ref_r)))
    """
    margin = beta * ((policy_chosen - ref_chosen) - (policy_rejected - ref_rejected))  # [B]
    return -F.logsigmoid(margin).mean(), margin.detach()


def grpo_advantages(
    rewards: torch.Tensor, group_size: int, scale: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """Group-normalized advantages: (r − mean_group) / (std_group + eps).

    `rewards` [B*G] holds groups of `group_size` consecutive samples of one prompt.
    `scale=False` drops the division by the std (Dr. GRPO). Std is the unbiased one.
    """
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    grouped = rewards.view(-1, group_size).float()  # [B, G]
    centered = grouped - grouped.mean(dim=1, keepdim=True)
    if scale:
        std = grouped.std(dim=1, keepdim=True) if group_size > 1 else torch.ones_like(grouped)
        centered = centered / (std + eps)
    return centered.view(-1)  # [B*G]


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
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped-surrogate policy loss with an optional k3 KL penalty to a reference.

    logprobs, old_logprobs, ref_logprobs, mask: [B, T]; advantages: [B].
    per token: −min(ρ·A, clip(ρ, 1−ε, 1+ε_high)·A) + kl_coef · (e^{ref−π} − (ref−π) − 1),
    with ρ = e^{π − π_old}. `aggregation` "token" averages over all tokens of the batch
    (DAPO); "sequence" averages per sequence, then over sequences (original GRPO).
    """
    high = clip_eps if clip_eps_high is None else clip_eps_high
    ratio = torch.exp(logprobs - old_logprobs)  # [B, T]
    adv = advantages[:, None]  # [B, 1]
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + high) * adv
    per_token = -torch.minimum(unclipped, clipped)  # [B, T]
    stats: dict[str, torch.Tensor] = {}
    if ref_logprobs is not None and kl_coef > 0:
        delta = ref_logprobs - logprobs
        kl = torch.exp(delta) - delta - 1.0  # [B, T], k3 estimator, ≥ 0
        per_token = per_token + kl_coef * kl
        stats["kl"] = masked_mean(kl.detach(), mask)
    if aggregation == "token":
        loss = masked_mean(per_token, mask)
    elif aggregation == "sequence":
        per_seq = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)  # [B]
        loss = per_seq.mean()
    else:
        raise ValueError(f"aggregation must be 'token' or 'sequence', got {aggregation!r}")
    is_clipped = ((ratio < 1.0 - clip_eps) & (adv < 0)) | ((ratio > 1.0 + high) & (adv > 0))
    stats["clip_frac"] = masked_mean(is_clipped.float(), mask)
    stats["ratio"] = masked_mean(ratio.detach(), mask)
    return loss, stats
