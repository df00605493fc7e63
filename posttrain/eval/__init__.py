"""Evaluation: completion rates, confidence intervals and paired tests between policies.

The statistics are re-exported here (no torch import); the held-out evaluation
through the episode loop is `posttrain.eval.evaluate.evaluate` / `compare`.
"""

from posttrain.eval.stats import (
    PairedComparison,
    Rate,
    mcnemar_exact,
    paired_compare,
    rate,
    wilson_interval,
)

__all__ = [
    "PairedComparison",
    "Rate",
    "mcnemar_exact",
    "paired_compare",
    "rate",
    "wilson_interval",
]
