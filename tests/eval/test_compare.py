"""Comparing two evaluations task by task: rows, intervals, significance, sides, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from posttrain.eval.compare import compare_results, load_side
from posttrain.eval.results import (
    FORMAT,
    UNREGISTERED,
    ResultsFileError,
    cell_key,
    save_results,
    summarize,
)
from posttrain.eval.stats import mcnemar_exact


def _doc(label: str, passed: dict[str, bool]) -> dict:
    rows = [{"id": i, "domain": "arith/addition-v1" if i.startswith("a") else "text/reverse-v1",
             "difficulty": 1, "passed": p, "reward": float(p), "tokens": 3, "error": None,
             "samples": 0, "samples_passed": 0} for i, p in passed.items()]  # fmt: skip
    return {"format": FORMAT, "label": label, "model": "m", "created": "t", "seconds": 0.0,
            "settings": {}, **summarize(rows)}  # fmt: skip


def test_rows_give_paired_deltas_with_mcnemar_and_a_significance_flag() -> None:
    a = _doc("a", {f"a{i}": i < 5 for i in range(40)} | {f"r{i}": True for i in range(10)})
    b = _doc("b", {f"a{i}": i < 25 for i in range(40)} | {f"r{i}": True for i in range(10)})
    cmp = compare_results(a, b)
    rows = {(r.scope, r.name): r for r in cmp.rows}
    arith = rows[("domain", "arith/addition-v1")]
    assert (arith.n, arith.only_a, arith.only_b) == (40, 0, 20)
    assert arith.delta == pytest.approx(0.5)
    assert arith.low < 0.5 < arith.high
    assert arith.p_value == mcnemar_exact(0, 20) and arith.significant
    reverse = rows[("domain", "text/reverse-v1")]
    assert reverse.delta == 0 and not reverse.significant and reverse.p_value == 1.0
    assert rows[("all", "all")].n == 50
    assert rows[("cell", "text/none/single/exact")].n == 50


def test_only_shared_tasks_are_paired_and_the_rest_are_counted() -> None:
    a = _doc("a", {"a1": True, "a2": False, "a3": True})
    b = _doc("b", {"a2": True, "a3": True, "a4": False})
    cmp = compare_results(a, b)
    assert (cmp.shared, cmp.only_in_a, cmp.only_in_b) == (2, 1, 1)


def test_disjoint_evaluations_are_refused_with_a_reason() -> None:
    with pytest.raises(ResultsFileError, match="share no tasks"):
        compare_results(_doc("a", {"a1": True}), _doc("b", {"a2": True}))


def test_a_run_side_defaults_to_its_final_stage_and_takes_a_label(tmp_path: Path) -> None:
    run = tmp_path / "run1"
    save_results(run / "evals" / "sft.json", _doc("sft", {"a1": False}))
    save_results(run / "evals" / "grpo.json", _doc("grpo", {"a1": True}))
    save_results(run / "evals" / "control.json", _doc("control", {"a1": True}))
    assert load_side(str(run))["label"] == "run1:grpo"
    assert load_side(f"{run}:sft")["label"] == "run1:sft"
    with pytest.raises(
        ResultsFileError, match="has no evaluation 'dpo'; it has: control, grpo, sft"
    ):
        load_side(f"{run}:dpo")


def test_a_missing_side_is_named(tmp_path: Path) -> None:
    with pytest.raises(ResultsFileError, match="neither a results file nor a run directory"):
        load_side(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsFileError, match="has no evaluations"):
        load_side(str(tmp_path / "empty"))


def _mixed_doc(label: str) -> dict:
    # Domains interleaved in task order, across two cells; zz/* are not registered.
    domains = ["arith/addition-v1", "zz/one-v1", "text/reverse-v1", "zz/two-v1"] * 3
    rows = [{"id": f"t{i}", "domain": d, "difficulty": 1, "passed": i % 2 == 0, "reward": 0.0,
             "tokens": 3, "error": None, "samples": 0, "samples_passed": 0}
            for i, d in enumerate(domains)]  # fmt: skip
    doc = {"format": FORMAT, "label": label, "model": "m", "created": "t", "seconds": 0.0,
           "settings": {}, **summarize(rows)}  # fmt: skip
    del doc["per_domain"]["zz/two-v1"]["cell"]  # a file that does not know this one's cell
    return doc


def test_rows_come_all_first_then_every_domain_then_every_cell() -> None:
    cmp = compare_results(_mixed_doc("a"), _mixed_doc("b"))
    unregistered = cell_key(UNREGISTERED)
    assert [(r.scope, r.name) for r in cmp.rows] == [
        ("all", "all"),
        ("domain", "arith/addition-v1"),
        ("domain", "zz/one-v1"),
        ("domain", "text/reverse-v1"),
        ("domain", "zz/two-v1"),
        ("cell", "text/none/single/exact"),
        ("cell", unregistered),
    ]
    # A domain without a cell in either file pools with the unregistered domains.
    assert cmp.rows[-1].n == 6


@pytest.mark.parametrize("alpha", [0.0, 1.0, 5.0, float("nan")])
def test_an_alpha_outside_zero_one_is_refused(alpha: float) -> None:
    doc = _doc("a", {"a1": True})
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
        compare_results(doc, doc, alpha)
