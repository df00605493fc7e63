"""What GRPO logs about a step's rollouts besides reward and loss: verifier and sandbox
error rates, tool-call outcomes, and figures per domain family, matrix cell and verdict
component."""

from __future__ import annotations

from posttrain.domains.matrix import family_of
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
    """Reward, pass rate and sampled tokens per domain family (`by_family/{family}/...`),
    pass rate per matrix cell (`by_cell/{modality/tools/rounds/verification}/pass_rate`)
    and the mean of each verdict component (`component/{name}`)."""
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
    for family, rs in groups.items():
        out[f"by_family/{family}/reward"] = sum(r.reward for r in rs) / len(rs)
        out[f"by_family/{family}/pass_rate"] = sum(r.verdict.passed for r in rs) / len(rs)
        out[f"by_family/{family}/tokens"] = sum(sum(r.loss_mask) for r in rs) / len(rs)
    for cell, rs in cells.items():
        out[f"by_cell/{cell}/pass_rate"] = sum(r.verdict.passed for r in rs) / len(rs)
    for name, values in components.items():
        out[f"component/{name}"] = sum(values) / len(values)
    return out
