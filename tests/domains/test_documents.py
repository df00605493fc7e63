"""The `documents/*` domains: the self-check, and each verifier's near-misses."""

from __future__ import annotations

import json

from posttrain.domains.check import check_domains
from posttrain.domains.documents import DOMAINS
from posttrain.domains.documents.tasks_checks import Anomalies, Covenants, Reconcile
from posttrain.domains.documents.tasks_cited import CrossDocCited, ExtractCited
from posttrain.domains.documents.tasks_derive import CashBridge, MissingCells
from posttrain.domains.documents.tasks_numeric import MetricFormula, RestatedFigure, ScaleSum
from posttrain.domains.documents.tasks_tables import GrowthSet, SegmentShare


def test_every_domain_passes_the_self_check() -> None:
    results = check_domains(DOMAINS, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


def test_twelve_domains_over_at_least_five_cells() -> None:
    cells = {(d.axes.modality, d.axes.verification) for d in DOMAINS}
    assert len(DOMAINS) >= 12 and len({d.id for d in DOMAINS}) == len(DOMAINS)
    assert len(cells) >= 5


def test_the_prompt_grows_from_about_2k_to_about_20k_tokens() -> None:
    domain = ExtractCited()
    small, large = domain.generate(0, 1), domain.generate(0, 10)
    assert 1_500 <= domain.difficulty_measure(small) <= 3_500
    assert 18_000 <= domain.difficulty_measure(large) <= 24_000


def test_a_right_value_cited_to_the_wrong_cell_scores_below_the_right_citation() -> None:
    domain = ExtractCited()
    task = domain.generate(3, 4)
    gold = task.meta["gold"]
    names = list(gold)
    wrong_cell = {n: {"value": gold[n]["value"], "cell": gold[names[(i + 1) % len(names)]]["cell"]} for i, n in enumerate(names)}  # fmt: skip
    uncited = {n: {"value": g["value"]} for n, g in gold.items()}
    right = domain.judge(task, task.answer)
    assert right.passed and right.reward == 1.0
    for answer in (wrong_cell, uncited):
        v = domain.judge(task, json.dumps(answer))
        assert not v.passed and 0 < v.reward < right.reward


def test_extraction_accepts_a_value_written_as_printed() -> None:
    domain = ExtractCited()
    task = domain.generate(5, 2)
    gold = task.meta["gold"]
    printed = {n: {"value": f"({-g['value']:,})" if g["value"] < 0 else f"{g['value']:,}", "cell": g["cell"]} for n, g in gold.items()}  # fmt: skip
    assert domain.judge(task, json.dumps(printed)).passed


def test_crossdoc_needs_both_sources_cited() -> None:
    domain = CrossDocCited()
    task = domain.generate(2, 3)
    gold = task.meta["gold"]
    full = domain.judge(task, task.answer)
    half = domain.judge(task, json.dumps({"answer": gold["answer"], "citations": gold["citations"][:1]}))  # fmt: skip
    wrong_cell = domain.judge(task, json.dumps({"answer": gold["answer"], "citations": ["IS-01@1900"]}))  # fmt: skip
    assert full.passed and not half.passed and not wrong_cell.passed
    assert wrong_cell.reward < half.reward < full.reward


def test_metric_formula_allows_spacing_but_needs_the_right_operands() -> None:
    domain = MetricFormula()
    task = domain.generate(1, 2)
    assert domain.judge(task, task.answer.replace(" / ", "/")).passed
    value = domain.judge(task, task.answer.replace(" = ", " =  "))
    assert value.passed
    result = task.answer.rsplit("= ", 1)[1]
    assert domain.judge(task, result).reward == 0.0
    assert domain.judge(task, f"1 / 2 = {result}").reward == 0.5


def test_scale_sum_requires_the_asked_scale_word() -> None:
    domain = ScaleSum()
    task = domain.generate(0, 2)
    number, word = task.answer.rsplit(" ", 1)
    other = "thousand" if word == "million" else "million"
    assert domain.judge(task, f"${number} {word}").passed
    assert not domain.judge(task, number).passed
    assert not domain.judge(task, f"{number} {other}").passed


def test_restated_figure_is_exact_and_accepts_separators() -> None:
    domain = RestatedFigure()
    task = domain.generate(4, 5)
    value = int(task.answer)
    assert domain.judge(task, f"{value:,}").passed
    assert not domain.judge(task, str(value + 1)).passed
    assert not domain.judge(task, f"{value} thousand").passed


def test_reconcile_scores_decision_and_difference_separately() -> None:
    domain = Reconcile()
    task = next(t for t in (domain.generate(s, 3) for s in range(20)) if t.answer != "yes; 0")
    diff = int(task.answer.split("; ")[1])
    assert domain.judge(task, task.answer.upper().replace("NO", "no")).passed
    assert domain.judge(task, f"no; {-diff}").reward == 0.5
    assert domain.judge(task, "yes; 0").reward == 0.0


def test_anomalies_score_by_set_f1_and_reject_prose() -> None:
    domain = Anomalies()
    task = domain.generate(0, 7)
    gold = task.meta["gold"]
    assert len(gold) >= 2
    assert domain.judge(task, ", ".join(reversed(gold))).passed
    partial = domain.judge(task, gold[0])
    assert not partial.passed and 0 < partial.reward < 1
    assert domain.judge(task, f"The misprints are {gold[0]}").reward == 0.0


def test_covenants_accept_none_only_when_nothing_is_breached() -> None:
    domain = Covenants()
    tasks = [domain.generate(s, 6) for s in range(30)]
    clean = next(t for t in tasks if t.answer == "none")
    breached = next(t for t in tasks if t.answer != "none")
    assert domain.judge(clean, "None").passed
    assert not domain.judge(breached, "none").passed
    assert domain.judge(breached, breached.answer.lower()).passed


def test_missing_cells_need_integers_under_exactly_the_blank_ids() -> None:
    domain = MissingCells()
    task = domain.generate(2, 6)
    gold = task.meta["gold"]
    assert len(gold) >= 3 and "?" in task.prompt[0].content
    assert domain.judge(task, json.dumps(dict(reversed(list(gold.items()))))).passed
    assert domain.judge(task, json.dumps({**gold, "extra": 1})).reward == 0.0
    assert domain.judge(task, json.dumps({k: str(v) for k, v in gold.items()})).reward == 0.0


def test_cash_bridge_scores_the_share_of_right_totals() -> None:
    domain = CashBridge()
    task = domain.generate(1, 4)
    gold = task.meta["gold"]
    assert "CF-" not in task.prompt[0].content
    v = domain.judge(task, json.dumps({**gold, "investing": -gold["investing"]}))
    assert not v.passed and v.reward == 0.75


def test_growth_set_accepts_any_order_and_rejects_unknown_ids() -> None:
    domain = GrowthSet()
    task = next(t for t in (domain.generate(s, 5) for s in range(20)) if len(t.meta["gold"]) >= 2)
    assert domain.judge(task, ", ".join(reversed(task.meta["gold"]))).passed
    assert domain.judge(task, "XX-01").reward == 0.0


def test_segment_share_accepts_more_decimals_but_not_a_flipped_sign() -> None:
    domain = SegmentShare()
    task = next(t for t in (domain.generate(s, 3) for s in range(20)) if abs(float(t.answer)) > 0.1)
    numerator, denominator = task.meta["exact"]
    assert domain.judge(task, f"{numerator / denominator:.4f}").passed
    assert not domain.judge(task, f"{-numerator / denominator:.2f}").passed
    assert not domain.judge(task, task.answer + "%").passed


def test_an_answer_that_overflows_to_infinity_is_wrong_not_a_verifier_error() -> None:
    crossdoc, share = CrossDocCited(), SegmentShare()
    task = crossdoc.generate(0, 1)
    citations = json.dumps(task.meta["gold"]["citations"])
    v = crossdoc.judge(task, f'{{"answer": 1e999, "citations": {citations}}}')
    # strict JSON refuses a number that overflows to infinity: malformed, scored 0
    assert v.error is None and not v.passed and v.components == {"format": 0.0}
    v = share.judge(share.generate(0, 1), "9" * 400)
    assert v.error is None and not v.passed
