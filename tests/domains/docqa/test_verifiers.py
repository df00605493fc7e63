"""Targeted checks of each `docqa/*` verifier: equivalent forms pass, near-misses fail."""

from __future__ import annotations

import json

from posttrain.domains.docqa.answerable import AnswerableDomain
from posttrain.domains.docqa.finance import CitedLimitDomain, GrowthDomain
from posttrain.domains.docqa.handbook import HandbookOwnerDomain
from posttrain.domains.docqa.memos import ApproverDomain, OpenActionsDomain
from posttrain.types import Task
from tests.domains.tools_api.episodes import play, with_final

APPROVER, ACTIONS, GROWTH = ApproverDomain(), OpenActionsDomain(), GrowthDomain()
CITED, ANSWERABLE, HANDBOOK = CitedLimitDomain(), AnswerableDomain(), HandbookOwnerDomain()


def _judge(domain: object, task: Task, text: str) -> tuple[bool, float]:
    verdict = domain.judge(task, text)  # type: ignore[attr-defined]
    return verdict.passed, verdict.reward


def test_approver_name_in_other_case_and_spacing_passes() -> None:
    task = APPROVER.generate(0, 5)
    assert _judge(APPROVER, task, "  " + task.answer.upper().replace(" ", "  ") + "\n")[0]


def test_approver_superseded_approval_fails() -> None:
    task = APPROVER.generate(3, 7)
    assert task.meta["superseded"] and task.meta["superseded"] in task.prompt[0].content
    assert _judge(APPROVER, task, task.meta["superseded"]) == (False, 0.0)


def test_open_actions_in_any_order_pass() -> None:
    task = ACTIONS.generate(0, 6)
    assert _judge(ACTIONS, task, ",".join(reversed(task.meta["gold"])))[0]


def test_open_actions_partial_set_gets_partial_credit_but_fails() -> None:
    task = ACTIONS.generate(0, 6)
    passed, reward = _judge(ACTIONS, task, ", ".join(task.meta["gold"][1:]))
    assert not passed and 0.0 < reward < 1.0


def test_open_actions_with_a_non_name_item_score_zero() -> None:
    task = ACTIONS.generate(0, 6)
    assert _judge(ACTIONS, task, task.answer + ", and that is all") == (False, 0.0)


def test_growth_with_a_plus_sign_or_last_digit_rounding_passes() -> None:
    task = GROWTH.generate(0, 4)
    value = float(task.answer.rstrip("%"))
    assert _judge(GROWTH, task, f"+{value:.2f}%" if value > 0 else task.answer)[0]
    assert _judge(GROWTH, task, f"{value + 0.001:.3f}%")[0]


def test_growth_as_a_fraction_or_from_the_preliminary_figure_fails() -> None:
    task = GROWTH.generate(0, 4)
    value = float(task.answer.rstrip("%"))
    assert not _judge(GROWTH, task, f"{value / 100:.4f}")[0]
    assert not _judge(GROWTH, task, task.meta["wrong"][0])[0]


def test_cited_limit_with_folded_whitespace_and_numeric_answer_passes() -> None:
    task = CITED.generate(0, 5)
    gold = json.loads(task.answer)
    loose = {"answer": float(gold["answer"]), "quote": gold["quote"].replace(" ", "  ")}
    assert _judge(CITED, task, json.dumps(loose))[0]


def test_cited_limit_quote_not_in_document_halves_the_reward() -> None:
    task = CITED.generate(0, 5)
    gold = json.loads(task.answer)
    made_up = {"answer": gold["answer"], "quote": f"The limit is {gold['answer']} USD."}
    assert _judge(CITED, task, json.dumps(made_up)) == (False, 0.5)


def test_cited_limit_quote_of_a_longer_amount_does_not_support_it() -> None:
    task = CITED.generate(0, 5)
    surface = task.meta["surface"]
    task.meta["document"] += f"\nA note mentions 1{surface} once."
    quote = f"A note mentions 1{surface} once."
    answer = json.dumps({"answer": surface, "quote": quote})
    assert _judge(CITED, task, answer) == (False, 0.5)


def _answerable(kind: str) -> Task:
    seed = 0
    while (task := ANSWERABLE.generate(seed, 6)).meta["kind"] != kind:
        seed += 1
    return task


def test_unanswerable_in_any_case_passes_when_the_fact_is_missing() -> None:
    for kind in ("absent", "unnamed"):
        assert _judge(ANSWERABLE, _answerable(kind), " Unanswerable\n")[0]


def test_a_name_for_an_unanswerable_question_fails_the_decision() -> None:
    task = _answerable("absent")
    verdict = ANSWERABLE.judge(task, task.meta["lead0"])
    assert not verdict.passed and verdict.components["decision"] == 0.0


def test_unanswerable_for_an_answerable_question_scores_zero() -> None:
    task = _answerable("answerable")
    assert _judge(ANSWERABLE, task, "unanswerable") == (False, 0.0)


def test_handbook_answer_without_reading_the_section_fails() -> None:
    task = HANDBOOK.generate(0, 4)
    verdict = play(HANDBOOK, task, [task.answer])
    assert not verdict.passed and verdict.components["correct"] == 1.0


def test_handbook_search_finds_the_home_section_and_the_stale_history() -> None:
    task = HANDBOOK.generate(0, 4)
    hits = HANDBOOK.serve(task.meta["world"], "search", {"query": task.meta["system"]})
    titles = {hit["title"] for hit in hits["results"]}
    sections = [hit["section"] for hit in hits["results"]]
    assert task.meta["home"] in sections and "History of system ownership" in titles


def test_handbook_stale_owner_fails_even_after_reading() -> None:
    task = HANDBOOK.generate(0, 4)
    assert not play(HANDBOOK, task, with_final(task, task.meta["stale"])).passed


def test_cited_limit_huge_integer_answer_is_wrong_not_a_verifier_error() -> None:
    task = CITED.generate(0, 5)
    gold = json.loads(task.answer)
    verdict = CITED.judge(task, f'{{"answer": {10**400}, "quote": {json.dumps(gold["quote"])}}}')
    assert verdict.error is None and not verdict.passed
    assert verdict.components["answer"] == 0.0 and "not a plain number" in verdict.reason


def test_cited_limit_bare_amount_as_quote_fails_and_the_sentence_passes() -> None:
    for difficulty in (1, 4, 7, 10):
        for seed in range(10):
            task = CITED.generate(seed, difficulty)
            gold = json.loads(task.answer)
            bare = {"answer": gold["answer"], "quote": task.meta["surface"]}
            assert _judge(CITED, task, json.dumps(bare)) == (False, 0.5)
            assert _judge(CITED, task, task.answer) == (True, 1.0)


def test_cited_limit_quote_must_name_the_asked_category() -> None:
    task = CITED.generate(0, 5)
    surface = task.meta["surface"]
    task.meta["document"] += f"\nA note mentions {surface} once."
    answer = json.dumps({"answer": surface, "quote": f"A note mentions {surface} once."})
    assert _judge(CITED, task, answer) == (False, 0.5)


def test_unanswerable_as_a_constant_reply_passes_about_a_quarter_of_tasks() -> None:
    tasks = [ANSWERABLE.generate(seed, d) for d in range(1, 11) for seed in range(40)]
    share = sum(_judge(ANSWERABLE, t, "unanswerable")[0] for t in tasks) / len(tasks)
    assert 0.15 <= share <= 0.33
