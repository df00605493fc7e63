"""Training forwards that run each distinct prompt once for all the rollouts that share it.

GRPO samples `group_size` completions per prompt. Packed one sequence per row
(`batches.pack`), the training forward recomputes every prompt `group_size` times.
`shared_logprobs` instead runs each distinct prompt once (left-padded, [U, P]), repeats
its K/V to the rows of its rollouts, and runs only the completions on top ([R, C]), the
layout the sampler decodes with. The gradients of a prompt's rows flow back through the
repeated K/V into its one prompt forward, so the update is the per-row forward's (same
math, float sums in another order; with dropout on, one draw per prompt instead of one
per row — posttrain's models train without dropout). A model that keeps no K/V in
training (activation checkpointing) is refused with a ValueError. The work saved is
the prompt positions of all but one rollout per prompt: (G - 1) / G of the prompt
tokens.

Like `pack`, it runs each rollout's trained part only (`batches.trained_part`). The
result is laid out as `pack`'s [R, T-1] (position t scores token t+1), zero at
prompt positions and padding, where `pack`'s loss mask is 0, so losses, probes and the
`TokenBatch` of the same rollouts are used unchanged.

    logprobs, entropy = shared_logprobs(model, rollouts, temperature=1.0, entropy=True)

`group_split` cuts a minibatch into micro-batches of whole prompt groups under a token
budget, counting padded positions as the shared forward lays them out. GRPO picks the
forward per micro-batch with `share_plan` and runs it with `rollout_logprobs`.

Not guaranteed: bitwise equality with `batch_logprobs` on `pack` (different padding
and summation order; float32 logprobs differ by up to ~2e-5 on a model with large
logits, see `tests/train/test_shared_prefix.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from posttrain.config import GRPOConfig
from posttrain.train.batches import (
    TokenBatch,
    batch_logprobs,
    batch_logprobs_entropy,
    trained_completion_length,
    trained_part,
)
from posttrain.types import Rollout


def prompt_owners(rollouts: Sequence[Rollout]) -> tuple[list[list[int]], list[int]]:
    """The distinct prompts in first-seen order, and each rollout's prompt index."""
    index: dict[tuple[int, ...], int] = {}
    owners = []
    for r in rollouts:
        owners.append(index.setdefault(tuple(r.prompt_ids), len(index)))
    return [list(p) for p in index], owners


def shares_prompts(rollouts: Sequence[Rollout]) -> bool:
    """Whether some prompt is shared: only then does the shared forward save work."""
    return len({tuple(r.prompt_ids) for r in rollouts}) < len(rollouts)


def shared_logprobs(
    model: PreTrainedModel,
    rollouts: Sequence[Rollout],
    temperature: float = 1.0,
    entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log p of every next token, [R, T-1] in `pack`'s layout (grad flows if enabled), and
    with `entropy` the detached entropy (nats) of each scored position, else None."""
    if not rollouts or any(not r.prompt_ids for r in rollouts):
        raise ValueError("shared_logprobs needs rollouts with a prompt each")
    rollouts = [trained_part(r) for r in rollouts]
    prompts, owners = prompt_owners(rollouts)
    owner = torch.tensor(owners)  # [R]
    device = next(model.parameters()).device
    width = max(len(p) for p in prompts)
    prompt_ids = torch.zeros((len(prompts), width), dtype=torch.long)  # [U, P], left-padded
    prompt_mask = torch.zeros((len(prompts), width), dtype=torch.long)  # [U, P]
    for u, p in enumerate(prompts):
        prompt_ids[u, width - len(p) :] = torch.tensor(p)
        prompt_mask[u, width - len(p) :] = 1
    prompt_pos = (prompt_mask.cumsum(-1) - 1).clamp(min=0)  # [U, P]
    prompt_cache = DynamicCache()
    last = model(
        input_ids=prompt_ids.to(device),
        attention_mask=prompt_mask.to(device),
        position_ids=prompt_pos.to(device),
        cache=prompt_cache,
        use_cache=True,
        logits_to_keep=1,
    ).logits[:, -1, :]  # [U, V]: scores each prompt's first completion token
    if prompt_cache.get_seq_length() != width:
        raise ValueError(
            "the prompt forward kept no K/V (gradient checkpointing turns the cache off): "
            "set grpo.share_prompts=false"
        )

    at = owner.to(device)
    layers = cast(list[DynamicLayer], prompt_cache.layers)
    rows = DynamicCache(
        ddp_cache_data=[(la.keys[at], la.values[at]) for la in layers]  # type: ignore[index]
    )  # [R, H, P, D] per layer: each row's prompt K/V (indexing: their grads add up)
    lengths = [len(r.completion_ids) for r in rollouts]
    span = max(1, *lengths)  # a rollout without completion tokens is all padding
    completion = torch.zeros((len(rollouts), span), dtype=torch.long)  # [R, C], right-padded
    completion_mask = torch.zeros((len(rollouts), span), dtype=torch.long)  # [R, C]
    for i, r in enumerate(rollouts):
        completion[i, : lengths[i]] = torch.tensor(r.completion_ids)
        completion_mask[i, : lengths[i]] = 1
    prompt_lengths = torch.tensor([len(p) for p in prompts])[owner]  # [R]
    logits = model(
        input_ids=completion.to(device),
        attention_mask=torch.cat([prompt_mask[owner], completion_mask], dim=-1).to(device),
        position_ids=(prompt_lengths[:, None] + torch.arange(span)[None, :]).to(device),
        cache=rows,
        use_cache=True,
    ).logits  # [R, C, V]
    scores = torch.cat([last[at][:, None, :], logits[:, :-1, :]], dim=1)  # [R, C, V]
    if temperature != 1.0:
        scores = scores / temperature
    logp = torch.log_softmax(scores.float(), dim=-1)  # [R, C, V]
    picked = logp.gather(-1, completion.to(device)[..., None]).squeeze(-1)  # [R, C]
    ent = None
    if entropy:
        with torch.no_grad():
            ent = -(logp.exp() * logp).sum(-1)  # [R, C]
    total = max(len(r.prompt_ids) + n for r, n in zip(rollouts, lengths, strict=True))
    return _to_pack_layout(picked, rollouts, lengths, total), (
        _to_pack_layout(ent, rollouts, lengths, total) if ent is not None else None
    )


def _to_pack_layout(
    values: torch.Tensor, rollouts: Sequence[Rollout], lengths: list[int], total: int
) -> torch.Tensor:
    """[R, C] completion-aligned values into `pack`'s [R, T-1]: completion token j of a
    rollout with prompt length p is scored at position p - 1 + j."""
    rows = []
    for i, r in enumerate(rollouts):
        start = len(r.prompt_ids) - 1
        rows.append(
            torch.nn.functional.pad(
                values[i, : lengths[i]], (start, total - 1 - start - lengths[i])
            )
        )
    return torch.stack(rows)  # [R, T-1]


def group_split(rollouts: Sequence[Rollout], idx: list[int], budget: int | None) -> list[list[int]]:
    """The rollout indices `idx` as micro-batches of whole prompt groups, each costing at
    most `budget` padded positions as `shared_logprobs` lays them out (prompts: distinct
    ones × their longest; completions: rows × the longest trained part); a group over
    the budget alone gets a micro-batch of its own. Groups keep their first-seen order;
    `None`: one."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for j in idx:
        groups.setdefault(tuple(rollouts[j].prompt_ids), []).append(j)
    if budget is None:
        return [list(idx)] if idx else []
    micros: list[list[int]] = []
    current: list[list[int]] = []
    for members in groups.values():
        if current and _cost(rollouts, [*current, members]) > budget:
            micros.append([j for g in current for j in g])
            current = []
        current.append(members)
    if current:
        micros.append([j for g in current for j in g])
    return micros


def _cost(rollouts: Sequence[Rollout], groups: list[list[int]]) -> int:
    prompt = max(len(rollouts[g[0]].prompt_ids) for g in groups)
    completion = max(trained_completion_length(rollouts[j]) for g in groups for j in g)
    rows = sum(len(g) for g in groups)
    return len(groups) * prompt + rows * completion


def rollout_logprobs(
    model: PreTrainedModel,
    rows: list[Rollout],
    batch: TokenBatch,
    share: SharePlan,
    entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logprobs [b, T-1] of `rows` (packed as `batch`), and with `entropy` the detached
    entropy: each prompt run once (`shared_prefix`) when `share.on`, else one padded
    sequence per row."""
    if share.on:
        return shared_logprobs(model, rows, share.temperature, entropy)
    if entropy:
        return batch_logprobs_entropy(model, batch, share.temperature)
    return batch_logprobs(model, batch, share.temperature), None


@dataclass(frozen=True)
class SharePlan:
    """How one micro-batch's training forwards run: `on` (each prompt once) is decided
    from the whole micro-batch, never from one rank's share of it, so that every rank
    runs the same forwards (FSDP gathers weights in each)."""

    on: bool
    temperature: float


def can_share(cfg: GRPOConfig, model: PreTrainedModel) -> bool:
    """Prompts are shared when asked and the model keeps K/V in training (activation
    checkpointing turns transformers' cache off)."""
    checkpointing = getattr(model, "is_activation_checkpointing", None)
    if checkpointing is None:  # transformers before 5
        checkpointing = getattr(model, "is_gradient_checkpointing", False)
    return cfg.share_prompts and not checkpointing


def share_plan(cfg: GRPOConfig, model: PreTrainedModel, micro: list[Rollout]) -> SharePlan:
    """Share prompts when `can_share` and some prompt of `micro` repeats."""
    return SharePlan(can_share(cfg, model) and shares_prompts(micro), cfg.temperature)
