"""The token sampler: inverse-CDF draws at each entry's probability (rare entries
included), zero entries never drawn, bad rows refused, and the nucleus filter
cutting only the rows that ask for it."""

from __future__ import annotations

import pytest
import torch

from posttrain.engines.sampling import BLOCK, nucleus, sample_from


def fixed_uniforms(monkeypatch: pytest.MonkeyPatch, *values: float) -> None:
    """Make `torch.rand` return `values` (as many as asked for) as every row's uniforms."""
    row = torch.tensor(values, dtype=torch.float64)
    monkeypatch.setattr(torch, "rand", lambda shape, **kw: row[: shape[1]].expand(shape).clone())


def test_each_index_is_drawn_at_its_probability() -> None:
    probs = torch.zeros(2, BLOCK + 8)  # two blocks, the second one short (padded)
    probs[0, [0, 2, BLOCK + 3]] = torch.tensor([0.5, 0.3, 0.2])
    probs[1, [1, BLOCK + 7]] = torch.tensor([2.0, 6.0])  # not normalized
    drawn = sample_from(probs.repeat(20_000, 1), torch.Generator().manual_seed(0))
    for r in range(2):
        freq = torch.bincount(drawn[r::2], minlength=probs.shape[1]).double() / 20_000
        expected = (probs[r] / probs[r].sum()).double()
        assert freq[expected == 0].sum() == 0  # zero entries never drawn
        # binomial std is at most 0.0036 here: 0.015 is about 4 sigma
        assert torch.allclose(freq, expected, atol=0.015), (r, freq[expected > 0])


@pytest.mark.parametrize("width, rare", [(BLOCK, 300), (2 * BLOCK, BLOCK + 44)])
def test_a_rare_token_after_a_dominant_one_can_be_drawn(
    monkeypatch: pytest.MonkeyPatch, width: int, rare: int
) -> None:
    # In float32 a running sum at 1.0 cannot grow by 1e-9: a float32 inverse CDF could
    # never draw `rare`. Both paths (one level, two levels) run in float64.
    probs = torch.zeros(1, width)
    probs[0, 0], probs[0, rare] = 1.0, 1e-9
    fixed_uniforms(monkeypatch, 1 - 0.5e-9, 1 - 0.5e-9)
    assert sample_from(probs, torch.Generator()).tolist() == [rare]
    fixed_uniforms(monkeypatch, 1 - 2e-9, 1 - 2e-9)
    assert sample_from(probs, torch.Generator()).tolist() == [0]


def test_a_draw_at_the_very_top_takes_the_last_nonzero_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # u · total can round up to the total itself; u = 1 forces that case.
    fixed_uniforms(monkeypatch, 1.0, 1.0)
    probs = torch.zeros(2, 2 * BLOCK)
    probs[0, [3, 7]] = torch.tensor([0.2, 0.8])  # the second block is all zero
    probs[1, [3, BLOCK + 9]] = torch.tensor([0.5, 0.5])
    assert sample_from(probs, torch.Generator()).tolist() == [7, BLOCK + 9]


def test_rows_without_a_finite_positive_total_are_refused() -> None:
    for bad in ([0.0, 0.0], [float("nan"), 1.0], [float("inf"), 1.0]):
        with pytest.raises(ValueError, match="finite, positive total"):
            sample_from(torch.tensor([[0.5, 0.5], bad]), torch.Generator())


def test_nucleus_keeps_the_smallest_top_set_reaching_top_p() -> None:
    probs = torch.tensor([[0.2, 0.5, 0.3], [0.2, 0.5, 0.3], [0.2, 0.5, 0.3]])
    out = nucleus(probs, torch.tensor([0.6, 0.1, 1.0]))
    expected = torch.tensor([[0.0, 0.5, 0.3], [0.0, 0.5, 0.0], [0.2, 0.5, 0.3]])
    assert torch.equal(out, expected)
    # Mass exactly top_p: the set stops there, ties beyond it are not kept.
    head = torch.tensor([[0.5, 0.25, 0.25]])
    assert torch.equal(nucleus(head, torch.tensor([0.5])), torch.tensor([[0.5, 0.0, 0.0]]))
    quarters = nucleus(torch.full((1, 4), 0.25), torch.tensor([0.5]))
    assert sorted(quarters[0].tolist()) == [0.0, 0.0, 0.25, 0.25]


def test_nucleus_leaves_uncut_rows_whole_beside_cut_ones() -> None:
    # A float32 running sum over a large vocabulary passes 1.0 before its end; a row
    # asking for no cut must not lose that tail because its neighbour asked for one.
    logits = 4 * torch.randn(2, 49_152, generator=torch.Generator().manual_seed(0))
    probs = torch.softmax(logits, -1)
    sorted_p = probs[0].sort(descending=True).values
    assert bool((sorted_p.cumsum(-1) - sorted_p > 1.0).any())  # the case this guards
    out = nucleus(probs, torch.tensor([1.0, 0.9]))
    assert torch.equal(out[0], probs[0])
    assert 0 < int((out[1] > 0).sum()) < probs.shape[1]
