"""Held-out completion rates per domain, greedy, with format and lenient correctness
reported apart; and paired comparison of two checkpoints on the same tasks.

`evaluate` runs every task once with greedy decoding through the real episode loop.
A task counts as completed when its verdict passed. `format` is the share of final
answers in the domain's strict format; `correct` the share whose answer a lenient
extractor finds right, whatever the format (both come from verdict components).
Not every verifier reports those components (num/divmod-v1 reports quotient and
remainder): a domain where no verdict has one gets None for it, not 0%.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from posttrain.domains.base import Domain
from posttrain.engines.base import Engine, SamplingParams
from posttrain.eval.stats import PairedComparison, Rate, paired_compare, rate
from posttrain.ranks import shard_map
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.rollout.episode import run_episodes
from posttrain.types import Rollout, Task


@dataclass
class DomainScore:
    domain: str
    completed: Rate
    format: Rate | None  # None: the domain's verifier does not report "format"
    correct: Rate | None  # None: the domain's verifier does not report "correct"


@dataclass
class EvalResult:
    label: str
    overall: Rate
    per_domain: dict[str, DomainScore]
    passed: dict[str, bool]  # task id -> completed, in task order
    seconds: float
    rollouts: list[Rollout] = field(default_factory=list, repr=False)

    @property
    def mean(self) -> float:
        """Unweighted mean of the per-domain completion rates."""
        return sum(s.completed.rate for s in self.per_domain.values()) / max(
            1, len(self.per_domain)
        )


def evaluate(
    label: str,
    tasks: Sequence[Task],
    engine: Engine,
    tokenizer: Any,
    get_domain: Callable[[str], Domain],
    max_tokens: int,
    max_context: int | None = None,
    over_long: OverLongPolicy | None = None,
) -> EvalResult:
    start = time.perf_counter()
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
    rollouts = shard_map(  # under torchrun each rank runs its share of the tasks
        tasks,
        lambda mine: [
            g[0]
            for g in run_episodes(
                mine, engine, tokenizer, params, get_domain, max_context=max_context,
                over_long=over_long,
            )
        ],
    )  # fmt: skip
    by_domain: dict[str, list[Rollout]] = {}
    for r in rollouts:
        by_domain.setdefault(r.domain, []).append(r)
    per_domain = {
        name: DomainScore(
            name,
            rate(sum(r.verdict.passed for r in rs), len(rs)),
            _component_rate(rs, "format"),
            _component_rate(rs, "correct"),
        )
        for name, rs in by_domain.items()
    }
    return EvalResult(
        label=label,
        overall=rate(sum(r.verdict.passed for r in rollouts), len(rollouts)),
        per_domain=per_domain,
        passed={r.task_id: r.verdict.passed for r in rollouts},
        seconds=time.perf_counter() - start,
        rollouts=rollouts,
    )


def _component_rate(rollouts: Sequence[Rollout], key: str) -> Rate | None:
    """The share of `rollouts` whose verdict component `key` is full (>= 1.0); None when
    no verdict reports `key` at all. Once the domain reports it, a rollout without it
    (an episode that crashed before its verifier ran) counts as not satisfying it."""
    if not any(key in r.verdict.components for r in rollouts):
        return None
    return rate(sum(r.verdict.components.get(key, 0.0) >= 1.0 for r in rollouts), len(rollouts))


def compare(a: EvalResult, b: EvalResult) -> PairedComparison:
    """Exact McNemar test of b against a on the tasks both were evaluated on."""
    if list(a.passed) != list(b.passed):
        raise ValueError(f"{a.label!r} and {b.label!r} were evaluated on different tasks")
    return paired_compare(list(a.passed.values()), list(b.passed.values()))
