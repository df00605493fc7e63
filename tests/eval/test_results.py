"""The results file: per-domain and per-cell rates, pass@k, round trip, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from posttrain.eval.results import (
    FORMAT,
    ResultsFileError,
    load_results,
    save_results,
    summarize,
)
from posttrain.eval.stats import pass_at_k, wilson_interval


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


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "does not exist"),
        ("{not json", "is not JSON"),
        (json.dumps({"format": "other"}), "not a posttrain results file"),
        (
            json.dumps(
                {
                    "format": FORMAT,
                    "label": "x",
                    "model": "m",
                    "overall": {},
                    "per_domain": {},
                    "per_cell": {},
                }
            ),
            "'tasks' is missing",
        ),  # fmt: skip
        (
            json.dumps(
                {
                    "format": FORMAT,
                    "label": "x",
                    "model": "m",
                    "overall": {},
                    "per_domain": {},
                    "per_cell": {},
                    "tasks": [{"id": "a", "domain": "d"}],
                }
            ),
            "tasks[0].passed",
        ),  # fmt: skip
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
