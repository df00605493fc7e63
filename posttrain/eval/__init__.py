"""Evaluation: completion rates, confidence intervals and paired tests between policies."""

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
