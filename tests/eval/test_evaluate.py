"""Held-out evaluation through the episode loop, and paired comparison."""

from __future__ import annotations

from typing import Any

import pytest

from posttrain.domains import STARTER_DOMAINS, get_domain
from posttrain.engines import ReplayEngine
from posttrain.eval.evaluate import compare, evaluate
from posttrain.train.mixture import heldout_tasks

DOMAINS = [get_domain(i) for i in STARTER_DOMAINS]


def _engine(tokenizer: Any, tasks: list[Any], wrong: set[str]) -> ReplayEngine:
    engine = ReplayEngine(tokenizer)
    for task in tasks:
        ref = get_domain(task.domain).reference(task)
        if task.id in wrong:
            ref = get_domain(task.domain).corrupt(task, ref)[0]
        engine.add(task.id, ref)
    return engine


def test_references_complete_every_task_with_format_and_correctness(tokenizer: Any) -> None:
    tasks = heldout_tasks(DOMAINS, 10, seed_offset=10**9)
    res = evaluate("ref", tasks, _engine(tokenizer, tasks, set()), tokenizer, get_domain, 80)
    assert res.overall.successes == res.overall.n == 40
    for score in res.per_domain.values():
        assert score.completed.rate == score.format.rate == score.correct.rate == 1.0
    assert res.mean == 1.0


def test_paired_comparison_counts_discordant_tasks(tokenizer: Any) -> None:
    tasks = heldout_tasks(DOMAINS, 10, seed_offset=10**9)
    wrong = {t.id for t in tasks[:12]}
    good = evaluate("good", tasks, _engine(tokenizer, tasks, set()), tokenizer, get_domain, 80)
    bad = evaluate("bad", tasks, _engine(tokenizer, tasks, wrong), tokenizer, get_domain, 80)
    cmp = compare(bad, good)
    assert (cmp.only_a, cmp.only_b) == (0, 12)
    assert cmp.p_value == pytest.approx(2 * 0.5**12)


def test_comparing_different_task_sets_is_refused(tokenizer: Any) -> None:
    a_tasks = heldout_tasks(DOMAINS[:1], 5, seed_offset=10**9)
    b_tasks = heldout_tasks(DOMAINS[:1], 5, seed_offset=10**9 + 100)
    a = evaluate("a", a_tasks, _engine(tokenizer, a_tasks, set()), tokenizer, get_domain, 80)
    b = evaluate("b", b_tasks, _engine(tokenizer, b_tasks, set()), tokenizer, get_domain, 80)
    with pytest.raises(ValueError, match="different tasks"):
        compare(a, b)
