"""The `list` family's single-turn domains: rearrange, reshape, summarize and compare lists.

    from posttrain.domains.list_ops import DOMAINS
    for domain in DOMAINS:
        task = domain.generate(seed=0, difficulty=3)

Every domain is an `AnswerDomain` in cell text / none / single, verified by one of:

- exact — one integer list or one integer: `order.py` (deduplicate, rotate, flatten),
  `sequences.py` (running sum, inversions, longest increasing subsequence, maximum
  subarray), `stats.py` (second-largest, k-th smallest, mode);
- numeric — a decimal compared by value: `stats.py` (median);
- structure — a JSON array of integer arrays: `shapes.py` (chunk, transpose);
- set match — items in any order, none repeated: `sets.py` (set algebra, pairs summing
  to a target, missing numbers).

`formats.py` holds the strict answer readers and judges they share. `list/sort-v1`
(in `posttrain/domains/sorting.py`) belongs to the family but not to this package.

Not guaranteed: answers must be exactly in the format each prompt states (prose around
the answer scores 0); inputs are short lists of small integers.
"""

from posttrain.domains.answer_domain import AnswerDomain
from posttrain.domains.list_ops import order, sequences, sets, shapes, stats

DOMAINS: tuple[AnswerDomain, ...] = (
    *order.DOMAINS,
    *shapes.DOMAINS,
    *stats.DOMAINS,
    *sequences.DOMAINS,
    *sets.DOMAINS,
)

__all__ = ["DOMAINS"]
