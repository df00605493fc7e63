"""The `longctx` family: long-context tasks over generated documents from 1k to 1M tokens.

Importing this package builds `DOMAINS`, one default-span instance of each domain:

    from posttrain.domains.longctx import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=4)        # about 10k SmolLM2 tokens
    short = DOMAINS[0].with_span(64, 512)                   # id "longctx/needle-v1@64-512"

Modules: `haystack` (filler prose, the length schedule), `framework` (the span
parameter, the document-question base), `lookup` (needle, multi-needle,
count-mentions), `tracking` (var-tracking, multi-hop), `synthesis` (aggregation,
contradictions, event-order) and `goal_retention` (a multi-turn rule kept through
long notes). docs/domains/longctx.md has the schedule and measured timings.

Not guaranteed: nothing here is registered with `posttrain.domains`; span variants
(`@MIN-MAX` ids) come from `with_span`, which the registry calls.
"""

from posttrain.domains.longctx import goal_retention, lookup, synthesis, tracking
from posttrain.domains.longctx.framework import DocumentDomain, Spanned, SpannedDomain

DOMAINS: tuple[SpannedDomain, ...] = (
    *lookup.DOMAINS,
    *tracking.DOMAINS,
    *synthesis.DOMAINS,
    *goal_retention.DOMAINS,
)

__all__ = ["DOMAINS", "DocumentDomain", "Spanned", "SpannedDomain"]
