"""The results file: per-domain and per-cell rates, pass@k, round trip, clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from posttrain.domains import get_domain
from posttrain.engines import ReplayEngine
from posttrain.eval.evaluate import evaluate
from posttrain.eval.results import (
    FORMAT,
    ResultsFileError,
    eval_result_from_document,
    load_results,
    results_document,
    save_results,
    summarize,
)
from posttrain.eval.stats import pass_at_k, wilson_interval
from posttrain.train.mixture import heldout_tasks


def _rows() -> list[dict]:
    rows = []
    for i in range(10):
        rows.append({"id": f"a{i}", "domain": "arith/addition-v1", "difficulty": 1 + i % 10,
                     "passed": i < 7, "reward": float(i < 7), "tokens": 4, "error": None,
                     "samples": 4, "samples_passed": 4 if i < 7 else (1 if i == 7 else 0)})  # fmt: skip
    for i in range(4):
        rows.append({"id": f"r{i}", "domain": "text/reverse-v1", "difficulty": 1,
                     "passed": i == 0, "reward": float(i == 0), "tokens": 10, "error": None,
                     "samples": 4, "samples_passed": 2})  # fmt: skip
    return rows


def _doc(rows: list[dict], k: int | None = 2) -> dict:
    return {"format": FORMAT, "label": "x", "model": "tiny", "created": "now", "seconds": 1.0,
            "settings": {}, **summarize(rows, k=k, temperature=1.0)}  # fmt: skip


def test_per_domain_rates_carry_wilson_intervals_and_the_domains_cell() -> None:
    doc = _doc(_rows())
    arith = doc["per_domain"]["arith/addition-v1"]
    assert arith["completed"]["successes"] == 7 and arith["completed"]["n"] == 10
    assert (arith["completed"]["low"], arith["completed"]["high"]) == wilson_interval(7, 10)
    assert arith["cell"] == ["text", "none", "single", "exact"]
    assert doc["overall"]["successes"] == 8 and doc["overall"]["n"] == 14
    assert doc["mean"] == pytest.approx((0.7 + 0.25) / 2)
    assert doc["mean_tokens"] == pytest.approx((10 * 4 + 4 * 10) / 14)


def test_cells_pool_the_tasks_of_every_domain_in_them() -> None:
    doc = _doc(_rows())
    cell = doc["per_cell"]["text/none/single/exact"]
    assert sorted(cell["domains"]) == ["arith/addition-v1", "text/reverse-v1"]
    assert cell["completed"]["successes"] == 8 and cell["completed"]["n"] == 14


def test_pass_at_k_averages_the_unbiased_estimator_over_tasks() -> None:
    rows = _rows()
    doc = _doc(rows, k=2)
    expected = sum(pass_at_k(4, r["samples_passed"], 2) for r in rows) / len(rows)
    assert doc["pass_at_k"]["overall"] == pytest.approx(expected)
    assert doc["pass_at_k"]["k"] == 2 and doc["pass_at_k"]["samples"] == 4
    assert _doc(rows, k=None)["pass_at_k"] is None


def test_save_then_load_round_trips(tmp_path: Path) -> None:
    doc = _doc(_rows())
    path = save_results(tmp_path / "sub" / "results.json", doc)
    assert load_results(path) == doc


def _bare(**fields: Any) -> str:
    """A results file's JSON with the header and empty summaries, plus `fields`."""
    header = {"format": FORMAT, "label": "x", "model": "m", "overall": {}}
    return json.dumps({**header, "per_domain": {}, "per_cell": {}, **fields})


def _task(task_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": task_id, "domain": "d", **fields}


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "does not exist"),
        ("{not json", "is not JSON"),
        (json.dumps({"format": "other"}), "not a posttrain results file"),
        (_bare(), "'tasks' is missing"),
        (_bare(tasks=[_task("a")]), "tasks[0].passed"),
        (
            _bare(
                tasks=[_task("a", passed=True), _task("b", passed=True), _task("a", passed=False)]
            ),
            "tasks[2].id 'a' repeats tasks[0].id",
        ),
    ],
)
def test_a_malformed_results_file_names_the_problem(
    tmp_path: Path, content: str | None, needle: str
) -> None:
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ResultsFileError, match="results file") as info:
        load_results(path)
    assert needle in str(info.value)


def test_format_and_correct_a_verifier_does_not_report_stay_none_through_the_file(
    tmp_path: Path, tokenizer: Any
) -> None:
    # polygon-area's verifier reports only "correct"; addition reports both.
    tasks = heldout_tasks([get_domain("geo/polygon-area-v1"), get_domain("arith/addition-v1")],
                          2, seed_offset=10**9)  # fmt: skip
    engine = ReplayEngine(tokenizer)
    for task in tasks:
        engine.add(task.id, get_domain(task.domain).reference(task))
    res = evaluate("ref", tasks, engine, tokenizer, get_domain, 200)
    path = save_results(tmp_path / "results.json", results_document(res, "m"))
    back = eval_result_from_document(load_results(path))
    assert back.per_domain["geo/polygon-area-v1"].format is None
    assert back.per_domain == res.per_domain


_DELETE = object()
_NO_HIGH = {"successes": 7, "n": 10, "rate": 0.7, "low": 0.4}


@pytest.mark.parametrize(
    ("keys", "value", "needle"),
    [
        ((), ["completed"], " is not a dict"),
        (("completed",), _DELETE, ".completed is missing or not a rate"),
        (("completed", "n"), _DELETE, ".completed.n is missing"),
        (("completed", "rate"), "0.7", ".completed.rate is missing"),
        (("completed", "successes"), True, ".completed.successes"),
        (("cell",), None, ".cell is not a list of strings"),
        (("cell",), [1, 2], ".cell is not a list of strings"),
        (("format",), None, ".format is missing or not a rate"),
        (("correct",), _NO_HIGH, ".correct.high is missing"),
    ],
)  # fmt: skip
def test_a_malformed_per_domain_entry_names_its_key_path(
    tmp_path: Path, keys: tuple[str, ...], value: Any, needle: str
) -> None:
    doc = _doc(_rows())
    target, path = doc["per_domain"], ("arith/addition-v1", *keys)
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    file = tmp_path / "results.json"
    file.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match="results file") as info:
        load_results(file)
    assert f"per_domain['arith/addition-v1']{needle}" in str(info.value)
    assert str(file) in str(info.value)
