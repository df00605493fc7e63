"""The retrieval domains: exact answers from a fictional encyclopedia, archive or search index."""

from __future__ import annotations

from posttrain.domains.tools_api.retrieval import (
    ChainedLookupDomain,
    CounterfactualLookupDomain,
    FactLookupDomain,
    SearchSetDomain,
)
from tests.domains.tools_api.episodes import play, with_final

FACTS, CHAIN = FactLookupDomain(), ChainedLookupDomain()
ARCHIVE, SEARCH = CounterfactualLookupDomain(), SearchSetDomain()


def test_fact_answer_in_other_case_and_spacing_passes() -> None:
    task = FACTS.generate(0, 9)
    assert len(task.meta["values"]) == 3
    loose = " ;  ".join(v.upper() for v in task.meta["values"])
    assert play(FACTS, task, with_final(task, loose)).passed


def test_fact_answers_in_the_wrong_order_fail() -> None:
    task = FACTS.generate(0, 9)
    values = task.meta["values"]
    if values[0] != values[1]:
        swapped = "; ".join([values[1], values[0], *values[2:]])
        assert not play(FACTS, task, with_final(task, swapped)).passed


def test_fact_lookup_of_a_look_alike_is_not_the_needed_lookup() -> None:
    task = FACTS.generate(1, 2)
    target = task.meta["targets"][0]
    wrong_person = next(n for n in task.meta["world"]["records"] if n != target)
    plan = [[{"name": "lookup", "arguments": {"name": wrong_person}}], task.answer]
    assert play(FACTS, task, plan).components["used_tool"] == 0.0


def test_chain_answer_needs_every_record_on_the_chain() -> None:
    task = CHAIN.generate(2, 8)
    assert len(task.meta["links"]) == 5
    plan = task.meta["plan"]
    assert play(CHAIN, task, plan).passed
    assert not play(CHAIN, task, [*plan[:2], *plan[3:]]).passed


def test_chain_answer_with_prose_fails_the_format() -> None:
    task = CHAIN.generate(2, 4)
    verdict = play(CHAIN, task, with_final(task, f"The answer is {task.answer}.\nDone."))
    assert verdict.components["format"] == 0.0


def test_counterfactual_real_world_capital_is_flagged_as_memorized() -> None:
    task = ARCHIVE.generate(3, 1)
    verdict = play(ARCHIVE, task, with_final(task, task.meta["real"][0]))
    assert verdict.components["memorized"] == 1.0
    assert verdict.reward == 0.0 and "memory" in verdict.reason


def test_search_set_in_any_order_and_case_passes() -> None:
    task = SEARCH.generate(4, 9)
    gold = list(reversed(task.meta["gold"]))
    assert len(gold) >= 3
    assert play(SEARCH, task, with_final(task, ",".join(g.lower().title() for g in gold))).passed


def test_search_set_missing_one_company_gets_partial_credit() -> None:
    task = SEARCH.generate(4, 9)
    verdict = play(SEARCH, task, with_final(task, ", ".join(task.meta["gold"][1:])))
    assert not verdict.passed
    assert 0.5 < verdict.reward < 1.0


def test_search_set_with_the_company_that_closed_its_site_fails() -> None:
    task = SEARCH.generate(5, 3)
    names = ", ".join([*task.meta["gold"], task.meta["closed"]])
    assert not play(SEARCH, task, with_final(task, names)).passed


def test_search_set_without_searching_scores_zero() -> None:
    task = SEARCH.generate(5, 3)
    assert play(SEARCH, task, [task.answer]).reward == 0.0
