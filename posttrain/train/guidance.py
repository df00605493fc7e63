"""Off-policy guidance: a task's reference solution stands in for one sample of a group
the policy failed entirely (`grpo.guidance`; LUFFY, Yan et al. 2025, "Learning to
Reason under Off-Policy Guidance").

A group whose rollouts all failed has no reward spread, so a group baseline gives it no
gradient: cells the policy never solves teach it nothing, however often they are drawn.
With guidance on, such a group gets the task's reference, played through the real
episode loop (`replay_references`: tool calls and observations included) and
verified, in place of one sample (one with no reward to train on if there is one,
else the last).
When the reference scores higher than the failures, the group has spread: the
reference gets a positive advantage and the failures a negative one.

The reference was not sampled from the policy, so it has no sampling logprobs. Its
"old" logprobs are the policy's own at the sampling temperature, computed without grad
(eval mode) before the update: its ratio starts at 1, and its loss term is the policy
gradient A · ∇log π(reference). LUFFY's policy shaping of the off-policy ratio is not
applied.

    guidance = Guidance(model, tokenizer, get_domain, reward, pad_id, temperature, max_tokens)
    counts: dict[str, float] = {}
    groups = guidance.apply(groups, counts)  # counts: guided_groups, guidance_skipped

Under torchrun every rank gets the same groups: the replays and the logprob forwards
are spread over the ranks and gathered back (`shard_map`), so every rank trains on the
same references.

Not guaranteed: a reference is skipped, and counted in `guidance_skipped`, when it
cannot stand in for a sample: the domain has none or its replay fails, it does not
score higher, its prompt differs from the sampled one (a context strategy rewrote
it), or it is longer than the policy may sample (a turn above `max_tokens`, or the
episode above `max_context`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from transformers import PreTrainedModel

from posttrain.domains.base import Domain
from posttrain.ranks import shard_map
from posttrain.rollout.episode import replay_references
from posttrain.train.batches import (
    batch_logprobs,
    model_device,
    pack,
    sequence_length,
    token_budget_split,
    trained_completion_length,
)
from posttrain.train.losses import rewards_differ
from posttrain.types import Rollout, Task, Turn

Group = tuple[Task, list[Rollout]]
RewardFn = Callable[[Rollout], float]  # what the advantages are computed from

REFERENCE_SUFFIX = "~reference"  # ends the id of a rollout that guidance put in a group


def is_reference(rollout: Rollout) -> bool:
    """Whether guidance put `rollout` in its group (it was not sampled by the policy)."""
    return rollout.id.endswith(REFERENCE_SUFFIX)


def trains(rollout: Rollout, reward: RewardFn) -> bool:
    """`group_rewards.trainable` with guidance's reward function: scored, and a finite
    number to train on (a NaN component leaves the rollout out, as the update does)."""
    return rollout.scored and math.isfinite(reward(rollout))


def all_failed(group: Sequence[Rollout], reward: RewardFn) -> bool:
    """Whether every trainable rollout of `group` (`trains`) got the same reward below 1
    (and one at least is trainable): a group with no spread that a passing reference
    could give some."""
    values = [reward(r) for r in group if trains(r, reward)]
    return bool(values) and not rewards_differ(values) and float(torch.tensor(values[0])) < 1.0


@dataclass
class Guidance:
    """What guidance needs from the GRPO loop: the policy (for the references' logprobs),
    the episode plumbing (for their replay) and the limits the policy samples under."""

    model: PreTrainedModel
    tokenizer: Any
    get_domain: Callable[[str], Domain]
    reward: RewardFn
    pad_id: int
    temperature: float
    max_tokens: int
    max_context: int | None = None
    micro_batch_tokens: int | None = None

    def apply(self, groups: list[Group], counts: dict[str, float]) -> list[Group]:
        """`groups` with a reference in each all-failed group (`all_failed`) where one
        can stand in for a sample; the others as they were (the same tuples). Adds to
        `counts`: `guided_groups`, and `guidance_skipped` (all-failed groups left as
        they were)."""
        for key in ("guided_groups", "guidance_skipped"):
            counts.setdefault(key, 0.0)
        failed = [i for i, (_, group) in enumerate(groups) if all_failed(group, self.reward)]
        if not failed:
            return groups
        replays = shard_map([groups[i][0] for i in failed], self._replayed)
        references = []
        for i, ref in zip(failed, replays, strict=True):
            if ref is not None and self._fits(ref, groups[i][1]):
                references.append((i, ref))
        counts["guidance_skipped"] += len(failed) - len(references)
        if not references:
            return groups
        logprobs = shard_map([ref for _, ref in references], self._policy_logprobs)
        out = list(groups)
        for (i, ref), lp in zip(references, logprobs, strict=True):
            task, group = groups[i]
            slot = next(
                (k for k in reversed(range(len(group))) if not trains(group[k], self.reward)), -1
            )
            guided = replace(
                ref, id=group[slot].id + REFERENCE_SUFFIX, logprobs=lp, turns=turns_with(ref, lp)
            )
            group = list(group)
            group[slot] = guided
            out[i] = (task, group)
        counts["guided_groups"] += len(references)
        return out

    def _fits(self, ref: Rollout, group: list[Rollout]) -> bool:
        """Whether `ref` can stand in for a sample of `group`: verified, scoring higher,
        on the same prompt, and no longer than the policy may sample."""
        scored = next(r for r in group if trains(r, self.reward))
        return (
            trains(ref, self.reward)
            and any(ref.loss_mask)
            and self.reward(ref) > self.reward(scored)
            and ref.prompt_ids == scored.prompt_ids
            and all(len(turn.token_ids) <= self.max_tokens for turn in ref.turns)
            and (self.max_context is None or sequence_length(ref) <= self.max_context)
        )

    def _replayed(self, tasks: list[Task]) -> list[Rollout | None]:
        """Each task's reference as a verified rollout, or None where it cannot be had."""
        out: list[Rollout | None] = []
        for task in tasks:
            try:  # a domain whose reference raises: its group stays unguided, the run goes on
                (ref,) = replay_references([task], self.tokenizer, self.get_domain)
            except Exception:
                out.append(None)
                continue
            out.append(ref if ref.error is None else None)
        return out

    def _policy_logprobs(self, rollouts: list[Rollout]) -> list[list[float]]:
        """Each rollout's per-completion-token logprobs under the policy at the sampling
        temperature (0 where the loss mask is 0), laid out as `Rollout.logprobs`; in
        forwards of at most `micro_batch_tokens` padded tokens."""
        out: list[list[float]] = [[] for _ in rollouts]
        training = self.model.training
        self.model.eval()
        try:
            lengths = [sequence_length(r) for r in rollouts]
            for part in token_budget_split(lengths, self.micro_batch_tokens):
                rows = [rollouts[j] for j in part]
                with torch.no_grad():
                    batch = pack(rows, self.pad_id, model_device(self.model))
                    lp = batch_logprobs(self.model, batch, self.temperature).cpu()  # [b, T-1]
                for j, row, r in zip(part, lp, rows, strict=True):
                    p, n = len(r.prompt_ids), trained_completion_length(r)
                    values = row[p - 1 : p - 1 + n].tolist()  # position t scores token t + 1
                    own = [v if m else 0.0 for v, m in zip(values, r.loss_mask[:n], strict=True)]
                    out[j] = own + [0.0] * (len(r.completion_ids) - n)
        finally:
            self.model.train(training)
        return out


def turns_with(rollout: Rollout, logprobs: list[float]) -> list[Turn]:
    """`rollout.turns` with each turn's logprobs taken from `logprobs`, laid out as
    `Rollout.logprobs` (each turn's sampled tokens, then its environment tokens)."""
    turns, at = [], 0
    for turn in rollout.turns:
        n = len(turn.token_ids)
        turns.append(replace(turn, logprobs=logprobs[at : at + n]))
        at += n + len(turn.env_token_ids)
    if at != len(logprobs):
        raise ValueError(
            f"rollout {rollout.id}: its turns hold {at} tokens, its logprobs {len(logprobs)}"
        )
    return turns
