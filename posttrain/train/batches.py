"""From rollouts to padded tensors, and per-token logprobs of a model on them.

A rollout's sequence is `prompt_ids + completion_ids`; position t of the packed
tensors scores token t+1. `loss_mask` marks sampled (assistant) tokens; environment
and prompt tokens are 0. Sequences are right-padded (`pack`: one sequence per row), or
packed several to a row (`pack_rows`: position ids restart at each sequence and
attention stays within it).

Only a rollout's trained part is packed and measured (`trained_part`, `sequence_length`):
environment tokens after its last sampled token (the observations of an episode's last
allowed turn) change no loss and no gradient, as nothing trained attends to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from transformers import PreTrainedModel

from posttrain.train.losses import token_logprobs
from posttrain.types import Rollout


@dataclass
class TokenBatch:
    input_ids: torch.Tensor  # [B, T] (T = longest sequence)
    attention_mask: torch.Tensor  # [B, T]
    labels: torch.Tensor  # [B, T-1] next tokens
    loss_mask: torch.Tensor  # [B, T-1] float, 1 on sampled tokens
    old_logprobs: torch.Tensor  # [B, T-1] rollout logprobs where loss_mask is 1
    position_ids: torch.Tensor | None = None  # [B, T] for packed rows, restarting per sequence

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def to(self, device: torch.device | str | None) -> TokenBatch:
        """The same batch with every tensor on `device` (None: unchanged)."""
        if device is None:
            return self
        move = {
            k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in vars(self).items()
        }
        return TokenBatch(**move)

    def model_inputs(self) -> dict[str, torch.Tensor | bool]:
        """The forward's keyword arguments. Packed rows pass position ids, no attention
        mask and no cache: transformers then builds a block-diagonal causal mask from
        the position ids (with a cache it would not, and sequences would see each other)."""
        if self.position_ids is None:
            return {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        return {"input_ids": self.input_ids, "position_ids": self.position_ids, "use_cache": False}


def trained_completion_length(r: Rollout) -> int:
    """How many completion tokens the trainers run: up to and including the last one
    with loss mask 1. A rollout without any (nothing sampled, or a crash) keeps its
    whole completion, so it is packed as it always was."""
    for k in range(len(r.loss_mask) - 1, -1, -1):
        if r.loss_mask[k]:
            return k + 1
    return len(r.completion_ids)


def trained_part(r: Rollout) -> Rollout:
    """`r` without the environment tokens after its last sampled token (`r` itself when
    there are none). Causal attention means no trained position sees them, and their
    loss mask is 0, so the loss and its gradients are those of the whole rollout."""
    n = trained_completion_length(r)
    if n == len(r.completion_ids):
        return r
    return replace(
        r, completion_ids=r.completion_ids[:n], loss_mask=r.loss_mask[:n], logprobs=r.logprobs[:n]
    )


def sequence_length(r: Rollout) -> int:
    """Tokens of `r` that the trainers run (prompt + `trained_completion_length`): the
    length that plans micro-batches and packed rows."""
    return len(r.prompt_ids) + trained_completion_length(r)


def check_prompts(rollouts: Sequence[Rollout]) -> None:
    """Refuse a rollout without prompt tokens: position t scores token t+1, so its
    first completion token would go unscored (padded) or be scored from the previous
    sequence of a packed row."""
    for r in rollouts:
        if not r.prompt_ids:
            raise ValueError(
                f"rollout {r.id} ({r.task_id}) has no prompt tokens; every sequence needs at "
                "least one (e.g. the chat template's header) before its first trained token"
            )


def model_device(model: torch.nn.Module) -> torch.device:
    """Where `model`'s parameters live (DDP and FSDP wrappers included): the device the
    trainers build their batches on."""
    return next(model.parameters()).device


def pack(
    rollouts: Sequence[Rollout], pad_id: int, device: torch.device | str | None = None
) -> TokenBatch:
    """One right-padded row per rollout's trained part (`trained_part`)."""
    check_prompts(rollouts)
    rollouts = [trained_part(r) for r in rollouts]
    seqs = [r.prompt_ids + r.completion_ids for r in rollouts]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.float32)
    old = torch.zeros((len(seqs), width), dtype=torch.float32)
    for i, (r, s) in enumerate(zip(rollouts, seqs, strict=True)):
        p, c = len(r.prompt_ids), len(r.completion_ids)
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
        mask[i, p : p + c] = torch.tensor(r.loss_mask, dtype=torch.float32)
        old[i, p : p + c] = torch.tensor(r.logprobs, dtype=torch.float32)
    return TokenBatch(ids, attn, ids[:, 1:], mask[:, 1:], old[:, 1:]).to(device)


def plan_rows(lengths: Sequence[int], width: int) -> list[list[int]]:
    """Positions of `lengths` grouped into rows of at most `width` tokens: first fit,
    longest first; a sequence longer than `width` gets a row of its own."""
    rows: list[list[int]] = []
    used: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda k: -lengths[k]):
        slot = next((j for j, u in enumerate(used) if u + lengths[i] <= width), None)
        if slot is None:
            rows.append([i])
            used.append(lengths[i])
        else:
            rows[slot].append(i)
            used[slot] += lengths[i]
    return rows


def pack_rows(
    rollouts: Sequence[Rollout], pad_id: int, width: int, device: torch.device | str | None = None
) -> TokenBatch:
    """`rollouts` concatenated into rows of at most `width` tokens (`plan_rows`)."""
    lengths = [sequence_length(r) for r in rollouts]
    rows = [[rollouts[i] for i in row] for row in plan_rows(lengths, width)]
    return rows_batch(rows, pad_id, device)


def rows_batch(
    rows: Sequence[Sequence[Rollout]], pad_id: int, device: torch.device | str | None = None
) -> TokenBatch:
    """One row per entry of `rows`, its sequences (trained parts, `trained_part`)
    concatenated, right-padded to the longest row.

    Each sequence's position ids start at 0, so the model attends within it only
    (`TokenBatch.model_inputs`); the padding is one more sequence, with loss mask 0. A
    row's last token of one sequence "predicts" the next sequence's first token, a
    prompt token whose loss mask is always 0, so the loss is the padded batch's."""
    check_prompts([r for row in rows for r in row])
    rows = [[trained_part(r) for r in row] for row in rows]
    T = max(sum(len(r.prompt_ids) + len(r.completion_ids) for r in row) for row in rows)
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    pos = torch.zeros((len(rows), T), dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.float32)
    old = torch.zeros((len(rows), T), dtype=torch.float32)
    for b, row in enumerate(rows):
        at = 0
        for r in row:
            seq, p = r.prompt_ids + r.completion_ids, len(r.prompt_ids)
            n = len(seq)
            ids[b, at : at + n] = torch.tensor(seq)
            pos[b, at : at + n] = torch.arange(n)
            mask[b, at + p : at + n] = torch.tensor(r.loss_mask, dtype=torch.float32)
            old[b, at + p : at + n] = torch.tensor(r.logprobs, dtype=torch.float32)
            at += n
        pos[b, at:] = torch.arange(T - at)  # the padding: a sequence of its own
    return TokenBatch(ids, torch.ones_like(ids), ids[:, 1:], mask[:, 1:], old[:, 1:], pos).to(
        device
    )


def token_budget_split(lengths: Sequence[int], budget: int | None) -> list[list[int]]:
    """Positions of `lengths` grouped so that each group, padded to its longest, holds at
    most `budget` tokens (a single longer sequence gets a group of its own).

    Longest first, so a group pads little; `None` keeps everything in one group. The
    groups partition `range(len(lengths))`."""
    if budget is None or not lengths:
        return [list(range(len(lengths)))] if lengths else []
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    for i in order:
        # Longest first: the group's first member fixes its padded width.
        if groups and (len(groups[-1]) + 1) * lengths[groups[-1][0]] <= budget:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def micro_split(rollouts: Sequence[Rollout], idx: list[int], budget: int | None) -> list[list[int]]:
    """The rollout indices `idx` of one minibatch as micro-batches of at most `budget`
    padded tokens each (`token_budget_split`)."""
    lengths = [sequence_length(rollouts[j]) for j in idx]
    return [[idx[k] for k in group] for group in token_budget_split(lengths, budget)]


def batch_logprobs(
    model: PreTrainedModel, batch: TokenBatch, temperature: float = 1.0
) -> torch.Tensor:
    """log p(next token) for every position: [B, T-1] (grad flows if enabled).

    `temperature` scales the logits as the sampler did, so that a policy's logprobs
    match the rollout logprobs it sampled with."""
    logits = model(**batch.model_inputs()).logits
    if temperature != 1.0:
        logits = logits / temperature
    return token_logprobs(logits[:, :-1, :], batch.labels)


def batch_logprobs_entropy(
    model: PreTrainedModel, batch: TokenBatch, temperature: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch_logprobs` and, detached, the entropy (nats) of each position's
    next-token distribution: ([B, T-1], [B, T-1]). One forward pass for both."""
    logits = model(**batch.model_inputs()).logits
    if temperature != 1.0:
        logits = logits / temperature
    logp = torch.log_softmax(logits[:, :-1, :].float(), dim=-1)  # [B, T-1, V]
    with torch.no_grad():
        entropy = -(logp.exp() * logp).sum(-1)
    return logp.gather(-1, batch.labels[..., None]).squeeze(-1), entropy


def sequence_logprob_sums(
    model: PreTrainedModel, rollouts: Sequence[Rollout], pad_id: int, max_tokens: int | None = 4096
) -> torch.Tensor:
    """Summed logprob of each rollout's sampled tokens, without grad: [N].

    Forward passes of at most `max_tokens` padded tokens each (`token_budget_split`;
    None: all at once), so the attention scores' T² stays bounded on long sequences."""
    lengths = [sequence_length(r) for r in rollouts]
    device = model_device(model)
    sums = torch.zeros(len(rollouts), device=device)
    with torch.no_grad():
        for group in token_budget_split(lengths, max_tokens):
            batch = pack([rollouts[i] for i in group], pad_id, device)
            sums[group] = (batch_logprobs(model, batch) * batch.loss_mask).sum(-1)
    return sums
