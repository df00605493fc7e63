"""Drawing one token per row: the nucleus (top-p) filter and an inverse-CDF sampler.

    probs = nucleus(logprobs.exp(), top_p)        # [A, V], rows with top_p = 1 untouched
    token = sample_from(probs, generator)         # [A]

`sample_from` inverts each row's CDF at a uniform draw in float64: over the whole
row when it has at most `BLOCK` entries, else in two levels, a block of `BLOCK`
entries by the blocks' masses, then an entry within the block.
`torch.multinomial` draws one exponential per vocabulary entry (25 ms a step for 16
rows of SmolLM2's 49,152 tokens on one core; this: under 1 ms). A single float32
running sum would be as fast but not exact: near a running sum of 1 it moves in steps
of 6e-8, so tokens rarer than that, past the first half of the mass, could never be
drawn; in two levels every entry keeps its probability to about 1e-7 relative.

Not guaranteed: the same token stream as `torch.multinomial` for a given generator.
"""

from __future__ import annotations

import torch

BLOCK = 512  # entries per block of the first level; smaller vocabularies take one level


def nucleus(probs: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """`probs` [A, V] with each row cut to its smallest top set of mass ≥ `top_p` [A]
    (the top entry always kept); rows whose top_p is ≥ 1 are returned unchanged."""
    cut = top_p < 1  # [A]
    if not bool(cut.any()):
        return probs
    sorted_p, order = probs.sort(dim=-1, descending=True)
    # An entry goes once the mass before it already reaches top_p; the top entry, with
    # none before it, stays (top_p > 0).
    drop = sorted_p.cumsum(-1) - sorted_p >= top_p[:, None]
    drop &= cut[:, None]  # float32 sums can pass 1.0: never cut an uncut row's tail
    return torch.zeros_like(probs).scatter(-1, order, sorted_p.masked_fill(drop, 0.0))


def sample_from(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One index per row of `probs` [A, V] (non-negative, any finite positive total),
    drawn with probability proportional to its entry; zero entries are never drawn.
    `generator` is a CPU generator (its draws move to `probs`' device)."""
    rows, width = probs.shape
    if width <= BLOCK:  # one level
        weights = probs.double()
        check_totals(weights.sum(-1))
        return invert(weights, uniforms(rows, 1, generator, probs.device)[:, 0])
    pad = (-width) % BLOCK
    padded = torch.nn.functional.pad(probs, (0, pad)) if pad else probs
    blocks = padded.view(rows, -1, BLOCK)  # [A, nb, BLOCK]
    mass = blocks.sum(-1).double()  # [A, nb]
    check_totals(mass.sum(-1))
    u = uniforms(rows, 2, generator, probs.device)
    block = invert(mass, u[:, 0])  # [A]
    within = blocks[torch.arange(rows, device=probs.device), block].double()  # [A, BLOCK]
    return block * BLOCK + invert(within, u[:, 1])


def check_totals(total: torch.Tensor) -> None:
    if not bool(((total > 0) & torch.isfinite(total)).all()):  # NaN logits land here
        raise ValueError("sampling probabilities need a finite, positive total in every row")


def uniforms(
    rows: int, count: int, generator: torch.Generator, device: torch.device
) -> torch.Tensor:
    """[rows, count] float64 draws in [0, 1) from the CPU `generator`, on `device`."""
    return torch.rand((rows, count), generator=generator, dtype=torch.float64).to(device)


def invert(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """For `weights` [A, K] (non-negative, positive row sums) and `u` [A] in [0, 1): the
    first index whose running sum exceeds u · the row's sum. Rounding can put u · sum at
    the very top; the last non-zero entry is taken then, so zero entries never are."""
    cdf = weights.cumsum(-1)  # [A, K]
    index = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True).squeeze(-1)
    last = weights.shape[-1] - 1 - (weights.flip(-1) > 0).to(torch.int64).argmax(-1)
    return torch.minimum(index, last)
