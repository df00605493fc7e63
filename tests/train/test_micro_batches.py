"""GRPO's token-budget micro-batches: the split, the loss weights, and that an update
split into micro-batches moves the weights exactly as the whole minibatch does."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from posttrain.config import GRPOConfig
from posttrain.train.batches import token_budget_split
from posttrain.train.losses import aggregate, micro_batch_weight
from tests.train.test_grpo import run_grpo, weights

# Different lengths, so micro-batches pad differently from the whole minibatch.
TEXTS = ["yes", "no no no no no no", "yes", "maybe not"]


def test_the_split_keeps_each_group_within_the_budget_and_partitions_the_rows() -> None:
    lengths = [5, 40, 12, 40, 3, 7, 90]
    groups = token_budget_split(lengths, budget=80)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        width = max(lengths[i] for i in group)
        assert len(group) * width <= 80 or len(group) == 1
    assert [6] in groups  # longer than the budget: alone


def test_no_budget_is_one_group_and_no_rows_is_no_group() -> None:
    assert token_budget_split([4, 9, 2], None) == [[0, 1, 2]]
    assert token_budget_split([], 16) == []


@pytest.mark.parametrize("aggregation", ["token", "sequence", "constant"])
def test_weighted_micro_losses_sum_to_the_whole_minibatch_loss(aggregation: str) -> None:
    torch.manual_seed(0)
    per_token = torch.randn(6, 9)
    mask = (torch.rand(6, 9) > 0.3).float()
    whole = aggregate(per_token, mask, aggregation, max_tokens=9)
    total_tokens = float(mask.sum())
    summed = torch.tensor(0.0)
    for rows in ([0, 3], [1], [2, 4, 5]):
        part = aggregate(per_token[rows], mask[rows], aggregation, max_tokens=9)
        summed += part * micro_batch_weight(mask[rows], total_tokens, 6, aggregation)
    assert float(summed) == pytest.approx(float(whole), rel=1e-6)


def test_an_unknown_aggregation_is_named() -> None:
    with pytest.raises(ValueError, match="'mean'"):
        micro_batch_weight(torch.ones(1, 2), 2.0, 1, "mean")


@pytest.mark.parametrize("loss", ["grpo", "dr_grpo", "gspo", "dapo"])
def test_micro_batched_updates_match_the_whole_minibatch(
    tiny_model: Any, tokenizer: Any, loss: str
) -> None:
    base = dict(steps=2, batch_size=8, group_size=4, minibatch_size=8, lr=1e-3, loss=loss)
    results = []
    for budget in (None, 1, 80):  # whole; one rollout per pass; a few per pass
        model = copy.deepcopy(tiny_model)
        cfg = GRPOConfig(**base, micro_batch_tokens=budget)
        logged = run_grpo(model, tokenizer, TEXTS, cfg)
        results.append((weights(model), [v["loss"] for v in logged]))
    (whole, whole_losses), *splits = results
    for split, losses in splits:
        assert losses == pytest.approx(whole_losses, rel=1e-4, abs=1e-6)
        for name, value in whole.items():
            torch.testing.assert_close(split[name], value, rtol=1e-4, atol=1e-6)
