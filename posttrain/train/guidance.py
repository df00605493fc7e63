"""Off-policy guidance: a task's reference solution stands in for one sample of a group
the policy failed entirely (`grpo.guidance`; LUFFY, Yan et al. 2025, "Learning to
Reason under Off-Policy Guidance").

A group whose rollouts all failed has no reward spread, so a group baseline gives it no
gradient: cells the policy never solves teach it nothing, however often they are drawn.
With guidance on, such a group's last rollout is replaced by the task's reference played
through the real episode loop (`replay_references`: tool calls and observations
included) and verified. When the reference scores higher than the failures, the group
has spread: the reference gets a positive advantage and the failures a negative one.

The reference was not sampled from the policy, so it has no sampling logprobs. Its
"old" logprobs are the policy's own at the sampling temperature, computed without grad
before the update: its ratio starts at 1, and its loss term is the policy gradient
A · ∇log π(reference). LUFFY's policy shaping of the off-policy ratio is not applied.

    groups, stats = guide(groups, model, tokenizer, get_domain, reward, pad_id, temperature)

Not guaranteed: a reference whose replayed prompt differs from the sampled one (a
context strategy that rewrote the prompt) is skipped, as is a task whose reference or
replay fails; both are counted in the returned stats, never raised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import torch
from transformers import PreTrainedModel

from posttrain.domains.base import Domain
from posttrain.rollout.episode import replay_references
from posttrain.train.batches import batch_logprobs, model_device, pack, trained_completion_length
from posttrain.types import Rollout, Task

Group = tuple[Task, list[Rollout]]
RewardFn = Callable[[Rollout], float]  # what the advantages are computed from


def all_failed(group: Sequence[Rollout], reward: RewardFn) -> bool:
    """Whether every scored rollout of `group` got the same reward below 1 (and one at
    least was scored): a group with no spread that a passing reference could give some."""
    values = {reward(r) for r in group if r.scored}
    return len(values) == 1 and next(iter(values)) < 1.0


def guide(
    groups: list[Group],
    model: PreTrainedModel,
    tokenizer: Any,
    get_domain: Callable[[str], Domain],
    reward: RewardFn,
    pad_id: int,
    temperature: float,
) -> tuple[list[Group], dict[str, float]]:
    """`groups` with the last rollout of each all-failed group (`all_failed`) replaced by
    its task's verified reference, when that scores higher than the failures; the others
    as they were (the same list objects). Stats: `guided_groups` (replaced) and
    `guidance_skipped` (all-failed groups left as they were: no reference, a replay
    that failed or did not score higher, or a prompt that differs)."""
    failed = [i for i, (_, group) in enumerate(groups) if all_failed(group, reward)]
    stats = {"guided_groups": 0.0, "guidance_skipped": 0.0}
    if not failed:
        return groups, stats
    out = list(groups)
    references: list[tuple[int, Rollout]] = []
    for i in failed:
        task, group = groups[i]
        ref = _replayed(task, tokenizer, get_domain)
        failure = next(reward(r) for r in group if r.scored)
        if (
            ref is None
            or ref.prompt_ids != group[-1].prompt_ids
            or not ref.scored
            or not any(ref.loss_mask)
            or reward(ref) <= failure
        ):
            stats["guidance_skipped"] += 1
            continue
        references.append((i, ref))
    if references:
        logprobs = _policy_logprobs(model, [r for _, r in references], pad_id, temperature)
        for (i, ref), lp in zip(references, logprobs, strict=True):
            task, group = groups[i]
            guided = replace(ref, id=f"{group[-1].id}~reference", logprobs=lp)
            out[i] = (task, [*group[:-1], guided])
        stats["guided_groups"] = float(len(references))
    return out, stats


def _replayed(task: Task, tokenizer: Any, get_domain: Callable[[str], Domain]) -> Rollout | None:
    """The task's reference as a verified rollout, or None when it cannot be had."""
    try:
        (ref,) = replay_references([task], tokenizer, get_domain)
    except Exception:  # a domain whose reference raises: that group stays unguided
        return None
    return ref if ref.error is None else None


def _policy_logprobs(
    model: PreTrainedModel, rollouts: list[Rollout], pad_id: int, temperature: float
) -> list[list[float]]:
    """Each rollout's per-completion-token logprobs under `model` at `temperature`
    (0 where the loss mask is 0), laid out as `Rollout.logprobs`."""
    with torch.no_grad():
        batch = pack(rollouts, pad_id, model_device(model))
        lp = batch_logprobs(model, batch, temperature).cpu()  # [n, T-1]
    out = []
    for row, r in zip(lp, rollouts, strict=True):
        p, n = len(r.prompt_ids), trained_completion_length(r)
        values = row[p - 1 : p - 1 + n].tolist()  # position t scores token t + 1
        sampled = [v if m else 0.0 for v, m in zip(values, r.loss_mask[:n], strict=True)]
        out.append(sampled + [0.0] * (len(r.completion_ids) - n))
    return out
