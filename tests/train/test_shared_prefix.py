"""The shared-prompt training forward: the per-row forward's logprobs, entropy and
gradients with each distinct prompt run once, and micro-batches of whole groups."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

from posttrain.config import GRPOConfig
from posttrain.train.batches import batch_logprobs_entropy, pack, trained_completion_length
from posttrain.train.shared_prefix import group_split, prompt_owners, shared_logprobs
from posttrain.types import Message, Rollout, Verdict
from tests.train.test_grpo import EvenFirstToken, run_grpo


def rollout(prompt: list[int], completion: list[int], i: int) -> Rollout:
    return Rollout(
        id=f"r{i}", task_id="t", domain="d", difficulty=1, prompt_ids=prompt,
        completion_ids=completion, loss_mask=[int(i % 5 != 0) for i in range(len(completion))],
        logprobs=[-1.0] * len(completion), messages=[Message("user", "x")], turns=[],
        verdict=Verdict(1.0, True, "x"),
    )  # fmt: skip


def groups_of_rollouts(seed: int, prompts: int = 5, group: int = 4) -> list[Rollout]:
    rng = random.Random(seed)
    out = []
    for _ in range(prompts):
        prompt = [rng.randrange(3, 250) for _ in range(rng.randint(2, 20))]
        for _ in range(group):
            completion = [rng.randrange(3, 250) for _ in range(rng.randint(1, 15))]
            out.append(rollout(prompt, completion, len(out)))
    rng.shuffle(out)  # groups need not be contiguous
    return out


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_and_entropy_match_one_padded_row_per_rollout(
    scrambled: Any, temperature: float
) -> None:
    rollouts = groups_of_rollouts(0)
    batch = pack(rollouts, 0)
    want, want_entropy = batch_logprobs_entropy(scrambled, batch, temperature)
    got, entropy = shared_logprobs(scrambled, rollouts, temperature, entropy=True)
    assert got.shape == want.shape and entropy is not None
    scored = batch.attention_mask[:, 1:].bool()  # [R, T-1]: positions with a next token
    completion = torch.zeros_like(scored)
    for i, r in enumerate(rollouts):  # the trained part: a masked tail is not run
        p = len(r.prompt_ids)
        completion[i, p - 1 : p - 1 + trained_completion_length(r)] = True
    assert torch.allclose(got[completion], want[completion], atol=1e-4)
    assert torch.allclose(entropy[completion], want_entropy[completion], atol=1e-4)
    assert (got[scored & ~completion] == 0).all()  # prompt positions: loss mask 0 there


def test_gradients_match_one_padded_row_per_rollout(scrambled: Any) -> None:
    rollouts = groups_of_rollouts(1)
    batch = pack(rollouts, 0)
    weights = torch.randn(batch.loss_mask.shape, generator=torch.Generator().manual_seed(2))

    def grads(logprobs: torch.Tensor) -> list[torch.Tensor]:
        scrambled.zero_grad()
        (logprobs * batch.loss_mask * weights).sum().backward()
        return [p.grad.clone() for p in scrambled.parameters()]

    want = grads(batch_logprobs_entropy(scrambled, batch)[0])
    got = grads(shared_logprobs(scrambled, rollouts)[0])
    for a, b in zip(got, want, strict=True):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-4 * float(b.abs().max()))


def test_prompt_owners_maps_each_rollout_to_its_distinct_prompt() -> None:
    rollouts = [rollout(p, [5], i) for i, p in enumerate([[1, 2], [3], [1, 2], [3], [4]])]
    prompts, owners = prompt_owners(rollouts)
    assert prompts == [[1, 2], [3], [4]] and owners == [0, 1, 0, 1, 2]


def test_group_split_keeps_groups_whole_under_the_budget() -> None:
    rollouts = groups_of_rollouts(3, prompts=8, group=4)
    idx = list(range(len(rollouts)))
    micros = group_split(rollouts, idx, budget=200)
    assert sorted(j for m in micros for j in m) == idx  # a partition
    owner_of = dict(enumerate(prompt_owners(rollouts)[1]))
    for m in micros:
        owners = {owner_of[j] for j in m}
        for o in owners:  # every member of a group is in the micro-batch that holds it
            assert {j for j in idx if owner_of[j] == o} <= set(m)
        prompt = max(len(rollouts[j].prompt_ids) for j in m)
        completion = max(len(rollouts[j].completion_ids) for j in m)
        assert len(owners) * prompt + len(m) * completion <= 200 or len(owners) == 1
    assert len(micros) > 1
    assert group_split(rollouts, idx, None) == [idx]


def test_a_run_with_shared_prompts_reproduces_the_per_row_losses(
    tiny_model: Any, tokenizer: Any
) -> None:
    state = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    losses = {}
    for share in (True, False):
        tiny_model.load_state_dict(state)
        cfg = GRPOConfig(
            steps=3, batch_size=8, group_size=4, minibatch_size=8, lr=1e-3, share_prompts=share
        )
        logged = run_grpo(tiny_model, tokenizer, ["yes", "no", "no", "yes"], cfg)
        losses[share] = [v["loss"] for v in logged]
        assert all(v["entropy"] > 0 for v in logged)
    assert losses[True] == pytest.approx(losses[False], rel=1e-4, abs=1e-6)


def test_grpo_trains_through_the_shared_forward(
    tiny_model: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from posttrain.engines import HFEngine
    from posttrain.train import shared_prefix

    calls: list[int] = []
    real = shared_prefix.shared_logprobs

    def spy(model: Any, rows: list[Rollout], *args: Any, **kwargs: Any) -> Any:
        calls.append(len(rows))
        return real(model, rows, *args, **kwargs)

    monkeypatch.setattr(shared_prefix, "shared_logprobs", spy)
    cfg = GRPOConfig(steps=1, batch_size=16, group_size=4, minibatch_size=16)
    run_grpo(tiny_model, tokenizer, [], cfg, domain=EvenFirstToken(),
             engine=HFEngine(tiny_model, tokenizer, seed=0))  # fmt: skip
    assert calls and sum(calls) >= 4


def test_the_choice_is_made_for_the_whole_micro_batch_and_off_under_checkpointing(
    tiny_model: Any,
) -> None:
    from posttrain.train.shared_prefix import can_share, share_plan

    cfg = GRPOConfig()
    distinct = [rollout([i + 3], [5], i) for i in range(4)]
    grouped = [rollout([3, 4], [5], i) for i in range(4)]
    assert not share_plan(cfg, tiny_model, distinct).on
    assert share_plan(cfg, tiny_model, grouped).on
    assert not share_plan(cfg.model_copy(update={"share_prompts": False}), tiny_model, grouped).on
    assert can_share(cfg, tiny_model)
    tiny_model.activation_checkpointing_enable({"use_reentrant": False})
    assert not share_plan(cfg, tiny_model, grouped).on
    assert not can_share(cfg, tiny_model)  # micro-batches are then sized per row


def test_a_model_that_keeps_no_kv_in_training_is_refused(tiny_model: Any) -> None:
    tiny_model.activation_checkpointing_enable({"use_reentrant": False})
    tiny_model.train()
    with pytest.raises(ValueError, match="share_prompts=false"):
        shared_logprobs(tiny_model, groups_of_rollouts(4))


def test_a_rollout_without_completion_tokens_scores_nothing(scrambled: Any) -> None:
    rollouts = groups_of_rollouts(5, prompts=2, group=3)
    empty = rollout(rollouts[0].prompt_ids, [], 99)
    got, _ = shared_logprobs(scrambled, [*rollouts, empty])
    want, _ = shared_logprobs(scrambled, rollouts)
    assert (got[-1] == 0).all()
    assert torch.allclose(got[:-1, : want.shape[1]], want, atol=1e-5)
