"""The trainers run a rollout's trained part only: environment tokens after its last
sampled token (the observations of an episode's last allowed turn) are neither packed
nor counted, and dropping them changes no loss and no gradient."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import torch

from posttrain.train.batches import (
    TokenBatch,
    batch_logprobs,
    micro_split,
    pack,
    pack_rows,
    sequence_length,
    sequence_logprob_sums,
    trained_part,
)
from posttrain.train.dpo import PreferencePair, pair_micro_batches
from posttrain.train.losses import grpo_loss
from posttrain.train.shared_prefix import group_split, shared_logprobs
from posttrain.types import Message, Rollout, Verdict

TAIL = [7, 8, 9, 10, 11, 12]  # a last turn's tool observation


def rollout(prompt: list[int], completion: list[int], mask: list[int], i: int = 0) -> Rollout:
    return Rollout(
        id=f"r{i}", task_id="t", domain="d", difficulty=1, prompt_ids=prompt,
        completion_ids=completion, loss_mask=mask, logprobs=[-1.0 * m for m in mask],
        messages=[Message("user", "x")], turns=[], verdict=Verdict(1.0, True, "x"),
    )  # fmt: skip


def with_tail(r: Rollout, tail: list[int] = TAIL) -> Rollout:
    """`r` with environment tokens (loss mask 0, logprob 0) after its last sampled one."""
    return replace(
        r,
        completion_ids=r.completion_ids + tail,
        loss_mask=r.loss_mask + [0] * len(tail),
        logprobs=r.logprobs + [0.0] * len(tail),
    )


def groups(seed: int, prompts: int = 3, group: int = 3) -> list[Rollout]:
    """Rollouts whose last completion token is sampled, with environment tokens inside."""
    rng = random.Random(seed)
    out = []
    for _ in range(prompts):
        prompt = [rng.randrange(3, 250) for _ in range(rng.randint(2, 12))]
        for _ in range(group):
            n = rng.randint(2, 12)
            mask = [int(k == n - 1 or k % 4 != 2) for k in range(n)]
            completion = [rng.randrange(3, 250) for _ in range(n)]
            out.append(rollout(prompt, completion, mask, len(out)))
    return out


def test_the_trained_part_ends_at_the_last_sampled_token() -> None:
    r = rollout([1, 2], [3, 4, 5], [1, 0, 1])
    cut = trained_part(with_tail(r))
    assert (cut.completion_ids, cut.loss_mask, cut.logprobs) == ([3, 4, 5], [1, 0, 1], [-1, 0, -1])
    assert sequence_length(with_tail(r)) == 5
    assert trained_part(r) is r  # no tail: the very rollout, so its batches are unchanged


def test_a_rollout_without_a_sampled_token_is_kept_whole() -> None:
    r = rollout([1, 2], [3, 4, 5], [0, 0, 0])
    assert trained_part(r) is r and sequence_length(r) == 5
    assert pack([r], 0).input_ids.shape == (1, 5)


def test_a_batch_without_tails_is_laid_out_as_before() -> None:
    batch = pack([rollout([1, 2], [3, 4, 5], [1, 0, 1]), rollout([6], [7], [1])], 0)
    assert batch.input_ids.tolist() == [[1, 2, 3, 4, 5], [6, 7, 0, 0, 0]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    assert batch.loss_mask.tolist() == [[0, 1, 0, 1], [1, 0, 0, 0]]
    assert batch.old_logprobs.tolist() == [[0, -1, 0, -1], [-1, 0, 0, 0]]


def test_packed_batches_leave_the_tail_out() -> None:
    clean = groups(0)
    tailed = [with_tail(r) for r in clean]
    for build in (lambda rs: pack(rs, 0), lambda rs: pack_rows(rs, 0, 40)):
        want, got = build(clean), build(tailed)
        assert got.input_ids.shape == want.input_ids.shape
        for name, value in vars(want).items():
            other = vars(got)[name]
            assert other is value is None or torch.equal(other, value), name
    assert pack(tailed, 0).input_ids.shape[1] < max(
        len(r.prompt_ids + r.completion_ids) for r in tailed
    )


def test_micro_batches_are_planned_on_the_trained_length() -> None:
    a, b = rollout([1, 2], [3, 4], [1, 1], 0), rollout([1, 2], [5, 6], [1, 1], 1)
    tailed = [with_tail(a), with_tail(b)]
    assert micro_split(tailed, [0, 1], budget=8) == [[0, 1]]  # 2 rows × 4 trained tokens
    assert group_split(tailed, [0, 1], budget=6) == [[0, 1]]  # prompt 2 + 2 rows × 2
    pairs = [PreferencePair(tailed[0], tailed[1]), PreferencePair(tailed[1], tailed[0])]
    assert pair_micro_batches(pairs, [0, 1], budget=16) == [[0, 1]]  # 4 rows × 4


def grpo_grads(
    model: Any,
    rollouts: list[Rollout],
    forward: Callable[[list[Rollout]], tuple[Any, TokenBatch]],
    per_row: bool,
) -> tuple[float, dict[str, torch.Tensor], int]:
    """GRPO's loss on `rollouts` through `forward`, its gradients, and the batch width.
    Advantages differ per rollout when a row is one rollout (`per_row`), else are 1."""
    model.zero_grad(set_to_none=True)
    logprobs, batch = forward(rollouts)
    advantages = torch.linspace(-1.0, 1.0, len(batch)) if per_row else torch.ones(len(batch))
    loss, _ = grpo_loss(logprobs, batch.old_logprobs, advantages, batch.loss_mask)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return float(loss.detach()), grads, int(logprobs.shape[1])


@pytest.mark.parametrize("path", ["pack", "packed_rows", "shared_prefix"])
def test_a_masked_tail_changes_no_grpo_loss_nor_gradient(scrambled: Any, path: str) -> None:
    forwards: dict[str, Callable[[list[Rollout]], tuple[Any, TokenBatch]]] = {
        "pack": lambda rs: (batch_logprobs(scrambled, b := pack(rs, 0)), b),
        "packed_rows": lambda rs: (batch_logprobs(scrambled, b := pack_rows(rs, 0, 40)), b),
        "shared_prefix": lambda rs: (shared_logprobs(scrambled, rs)[0], pack(rs, 0)),
    }
    per_row = path != "packed_rows"  # packed rows hold several rollouts each
    clean = groups(1)
    tailed = [with_tail(r) if i % 2 == 0 else r for i, r in enumerate(clean)]
    want_loss, want, want_width = grpo_grads(scrambled, clean, forwards[path], per_row)
    got_loss, got, got_width = grpo_grads(scrambled, tailed, forwards[path], per_row)
    assert got_width == want_width  # the tail is not run
    assert got_loss == pytest.approx(want_loss, abs=1e-6)
    assert got.keys() == want.keys()
    for name, grad in want.items():
        torch.testing.assert_close(got[name], grad, rtol=1e-6, atol=1e-6, msg=name)


def test_a_masked_tail_changes_no_dpo_sequence_logprob_sum(scrambled: Any) -> None:
    clean = groups(2)
    tailed = [with_tail(r) for r in clean]
    for budget in (None, 30):
        want = sequence_logprob_sums(scrambled, clean, 0, budget)
        got = sequence_logprob_sums(scrambled, tailed, 0, budget)
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
