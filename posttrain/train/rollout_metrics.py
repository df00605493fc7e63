"""What GRPO logs about a step's rollouts besides reward and loss: verifier and sandbox
error rates, tool-call outcomes, figures per domain family, matrix cell and verdict
component, and the policy probe (entropy, train/inference logprob mismatch)."""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedModel

from posttrain.domains.matrix import family_of
from posttrain.train.batches import TokenBatch
from posttrain.train.guidance import is_reference
from posttrain.train.shared_prefix import SharePlan, rollout_logprobs
from posttrain.types import Rollout


def error_rates(rollouts: list[Rollout]) -> dict[str, float]:
    """Shares of rollouts whose verifier raised, and whose session or sandbox failed."""
    n = max(1, len(rollouts))
    return {
        "verifier_error_rate": sum(r.verdict.error is not None for r in rollouts) / n,
        "sandbox_error_rate": sum((r.error or "").startswith("session") for r in rollouts) / n,
    }


def tool_metrics(rollouts: list[Rollout]) -> dict[str, float]:
    """Tool-call outcomes of the batch (`tools/calls`, `tools/timeouts`, ...), summed."""
    out: dict[str, float] = {}
    for r in rollouts:
        for key, value in r.tool_stats.items():
            out[key] = out.get(key, 0.0) + value
    return out


def by_family(rollouts: list[Rollout]) -> dict[str, float]:
    """Reward, pass rate and sampled tokens per domain family (`by_family/{family}/...`)
    and per matrix cell (`by_cell/{modality/tools/rounds/verification}/...`), and the
    mean of each verdict component (`component/{name}`)."""
    from posttrain.eval.results import domain_cell

    groups: dict[str, list[Rollout]] = {}
    cells: dict[str, list[Rollout]] = {}
    components: dict[str, list[float]] = {}
    for r in rollouts:
        groups.setdefault(family_of(r.domain), []).append(r)
        cells.setdefault("/".join(domain_cell(r.domain)), []).append(r)
        for name, value in r.verdict.components.items():
            components.setdefault(name, []).append(float(value))
    out: dict[str, float] = {}
    for prefix, rollouts_of in (("by_family", groups), ("by_cell", cells)):
        for name, rs in rollouts_of.items():
            out[f"{prefix}/{name}/reward"] = sum(r.reward for r in rs) / len(rs)
            out[f"{prefix}/{name}/pass_rate"] = sum(r.verdict.passed for r in rs) / len(rs)
            out[f"{prefix}/{name}/tokens"] = sum(sum(r.loss_mask) for r in rs) / len(rs)
    for name, values in components.items():
        out[f"component/{name}"] = sum(values) / len(values)
    return out


def policy_probe(
    model: PreTrainedModel,
    rows: list[Rollout],
    batch: TokenBatch,
    share: SharePlan,
    logprobs_out: list[Any] | None = None,
    weight: float = 1.0,
) -> dict[str, float]:
    """Entropy of the policy on the sampled tokens' positions and its gap to the rollout
    logprobs, measured before any update of the step: then the trained policy is the
    sampling policy, so the gap is the train/inference mismatch. Guidance's references
    (not sampled) are left out. Sums over the tokens, and their count, times `weight`
    (0 for a rank's stand-in row), so that ranks add up; `probe_means` gives the means.
    `logprobs_out` receives the forward's logprobs (with grad) for reuse."""
    logprobs, entropy = rollout_logprobs(model, rows, batch, share, entropy=True)
    assert entropy is not None
    if logprobs_out is not None:
        logprobs_out.append(logprobs)
    gap = (logprobs.detach() - batch.old_logprobs).abs()
    sampled = torch.tensor([not is_reference(r) for r in rows], device=gap.device)  # [b]
    mask = batch.loss_mask * sampled[:, None]  # the policy's samples only
    return {
        "entropy": float((entropy * mask).sum()) * weight,
        "logprob_mismatch": float((gap * mask).sum()) * weight,
        "probe_tokens": float(mask.sum()) * weight,
    }


def probe_means(sums: dict[str, float]) -> dict[str, float]:
    """`policy_probe`'s sums (added over ranks) as means per token."""
    tokens = max(sums.get("probe_tokens", 0.0), 1.0)
    return {k: v / tokens for k, v in sums.items() if k != "probe_tokens"}
