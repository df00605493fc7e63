"""Held-out evaluation through the episode loop, and paired comparison."""

from __future__ import annotations

from typing import Any

import pytest

from posttrain.domains import STARTER_DOMAINS, get_domain
from posttrain.engines import ReplayEngine
from posttrain.eval.evaluate import compare, evaluate
from posttrain.eval.results import results_document
from posttrain.eval.stats import rate
from posttrain.train.mixture import heldout_tasks
from posttrain.types import Reference

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
        assert score.format is not None and score.correct is not None
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


class _VerifierCrashesOn:
    """A domain whose verifier raises for one task: that rollout's verdict has no
    components at all, like any episode that crashed before it was verified."""

    def __init__(self, domain: Any, task_id: str) -> None:
        self.domain, self.task_id = domain, task_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self.domain, name)

    def verify(self, task: Any, rollout: Any, session: Any) -> Any:
        if task.id == self.task_id:
            raise RuntimeError("verifier crashed")
        return self.domain.verify(task, rollout, session)


def test_format_and_correct_count_every_rollout_of_a_domain_that_reports_them(
    tokenizer: Any,
) -> None:
    tasks = heldout_tasks([get_domain("text/reverse-v1")], 6, seed_offset=10**9)
    engine = _engine(tokenizer, tasks, set())
    for task in tasks[:2]:  # right, but not in the strict format
        engine.add(task.id, Reference.single(f"Reversed: {task.answer}."))
    crashed = tasks[5].id
    res = evaluate("x", tasks, engine, tokenizer,
                   lambda i: _VerifierCrashesOn(get_domain(i), crashed), 80)  # fmt: skip
    score = res.per_domain["text/reverse-v1"]
    assert not next(r for r in res.rollouts if r.task_id == crashed).verdict.components
    # The crashed rollout reports neither component and counts as satisfying neither.
    assert score.format == rate(3, 6)
    assert score.correct == rate(5, 6)


def test_a_component_the_verifier_never_reports_is_none_not_zero(tokenizer: Any) -> None:
    # polygon-area reports only "correct"; divmod reports "format", quotient, remainder.
    ids = ["geo/polygon-area-v1", "num/divmod-v1"]
    tasks = heldout_tasks([get_domain(i) for i in ids], 3, seed_offset=10**9)
    res = evaluate("ref", tasks, _engine(tokenizer, tasks, set()), tokenizer, get_domain, 200)
    geo, divmod = res.per_domain["geo/polygon-area-v1"], res.per_domain["num/divmod-v1"]
    assert geo.format is None and geo.correct == rate(3, 3)
    assert divmod.format == rate(3, 3) and divmod.correct is None
    doc = results_document(res, "m")["per_domain"]
    assert "format" not in doc["geo/polygon-area-v1"] and doc["geo/polygon-area-v1"]["correct"]
    assert "correct" not in doc["num/divmod-v1"] and doc["num/divmod-v1"]["format"]
