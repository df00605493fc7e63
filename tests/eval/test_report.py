"""The HTML reports: one self-contained file, every section there, every plot's embedded
series equal to its source (metrics.jsonl, evals/*.json, traces.sqlite)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from posttrain.eval.report import ReportError, write_eval_report, write_run_report
from posttrain.eval.results import FORMAT, save_results, summarize
from posttrain.eval.stats import paired_compare
from posttrain.store import MetricsLogger, RunDir, TraceStore, read_metrics
from posttrain.types import Rollout, Verdict

DOMAINS = ("arith/addition-v1", "text/reverse-v1")
PASSES = {"untrained": 2, "sft": 8, "grpo": 14, "control": 9}  # of 20 tasks per domain
GRPO_STEPS = 10
SECTIONS = ("overview", "checkpoints", "paired", "curves", "matrix", "rewards", "throughput",
            "alerts", "traces")  # fmt: skip
SERIES = re.compile(
    r'<script type="application/json" class="series" data-figure="([^"]*)">(.*?)</script>', re.S
)


def _doc(label: str, passes: int, k: int | None = None) -> dict[str, Any]:
    tasks = [
        {"id": f"{d}#{i}", "domain": d, "difficulty": 1 + i % 10, "passed": i < passes,
         "reward": float(i < passes), "tokens": 10 + i, "error": None,
         "samples": 4 if k else 0, "samples_passed": (1 + (i < passes)) if k else 0}
        for d in DOMAINS for i in range(20)
    ]  # fmt: skip
    head = {"format": FORMAT, "label": label, "model": f"runs/x/checkpoints/{label}",
            "created": "2026-01-01T00:00:00+00:00", "seconds": 1.5, "settings": {"n": 40}}  # fmt: skip
    return head | summarize(tasks, k=k, temperature=0.8 if k else None)


def _rollout(i: int, step: int, domain: str, reward: float) -> Rollout:
    return Rollout(
        id=f"r{i}", task_id=f"t{i}", domain=domain, difficulty=1, prompt_ids=[1],
        completion_ids=[2], loss_mask=[1], logprobs=[0.0], messages=[], turns=[],
        verdict=Verdict(reward=reward, passed=reward == 1.0, reason="test"), policy_version=step,
    )  # fmt: skip


def _grpo_values(step: int) -> dict[str, float]:
    values = {"reward": 0.1 * step, "pass_rate": 0.05 * step, "completion_tokens": 30.0 + step,
              "kl": 0.01 * step, "entropy": 1.0 / step, "loss": 0.5, "rollout_s": 0.3 + step,
              "update_s": 0.2, "tokens_per_s": 100.0 * step}  # fmt: skip
    for family in ("arith", "text"):
        values[f"by_family/{family}/reward"] = 0.1 * step + (family == "text") / 3
        values[f"by_family/{family}/pass_rate"] = 0.04 * step
        values[f"by_family/{family}/tokens"] = 20.0 + step
    return values


def _metrics_only_run(tmp_path: Path, name: str = "demo") -> RunDir:
    run = RunDir.create(tmp_path, name)
    run.write_config({"model": {"name": "tiny"}, "domains": list(DOMAINS)})
    with MetricsLogger(run, tensorboard=False) as metrics:
        for step in range(1, 5):
            metrics.log("sft", step, {"loss": 2.0 / step, "lr": 1e-3})
        for step in range(1, GRPO_STEPS + 1):
            values = _grpo_values(step)
            if step == 3:
                values["kl"] = float("nan")  # written as null
            metrics.log("grpo", step, values)
            if step % 5 == 0:
                heldout = {"completion": 0.3 + step / 100, "mean": 0.3}
                heldout |= {f"{d}/completion": 0.2 + step / 50 for d in DOMAINS}
                metrics.log("heldout", step, heldout)
    return run


def _full_run(tmp_path: Path) -> RunDir:
    run = _metrics_only_run(tmp_path)
    for label, passes in PASSES.items():
        save_results(run.eval_path(label), _doc(label, passes))
    alert = {"time": 1767225600.0, "stage": "grpo", "step": 7, "kind": "entropy_collapse",
             "metric": "entropy", "value": 0.01, "threshold": 0.05,
             "message": "entropy fell <fast> & far"}  # fmt: skip
    run.alerts_path.write_text(json.dumps(alert) + "\n", encoding="utf-8")
    with TraceStore(run.traces_path) as traces:
        rollouts = [_rollout(step * 10 + j, step, DOMAINS[j % 2], (step * j % 5) / 4)
                    for step in range(1, GRPO_STEPS + 1) for j in range(4)]  # fmt: skip
        traces.record(rollouts, "grpo")
        traces.record([_rollout(999, 0, DOMAINS[0], 1.0)], "eval/grpo")
    return run


@pytest.fixture
def full_run(tmp_path: Path) -> RunDir:
    """A run with every part; tests that change it take this one."""
    return _full_run(tmp_path)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, str]:
    """A run with every part and its report, built once for the tests that only read."""
    run = _full_run(tmp_path_factory.mktemp("built"))
    return run, write_run_report(run.path).read_text(encoding="utf-8")


def _series(html: str) -> dict[str, dict[str, Any]]:
    return {fig: json.loads(text) for fig, text in SERIES.findall(html)}


def _report(run: RunDir) -> str:
    return write_run_report(run.path).read_text(encoding="utf-8")


def test_run_report_is_one_self_contained_file_with_every_section(
    built: tuple[RunDir, str],
) -> None:
    run, html = built
    assert run.report_path.read_text(encoding="utf-8") == html
    assert html.startswith("<!DOCTYPE html>") and html.count("<html") == 1
    for section in SECTIONS:
        assert f'<section id="{section}">' in html
    for attr, value in re.findall(r'\b(src|href)="([^"]*)"', html):
        assert value.startswith("data:image/png;base64," if attr == "src" else "http://127.0.0.1:")
    assert "<link" not in html and "@import" not in html


def test_learning_curve_series_equal_the_values_in_metrics_jsonl(built: tuple[RunDir, str]) -> None:
    full_run, html = built
    figures = _series(html)
    records = read_metrics(full_run.metrics_path)
    checked = 0
    for figure in ("curve-reward", "curve-pass_rate", "curve-completion_tokens", "curve-kl",
                   "curve-entropy", "curve-heldout", "curve-loss", "throughput"):  # fmt: skip
        assert figures[figure]["figure"] == figure
        for s in figures[figure]["series"]:
            assert s["source"] == "metrics.jsonl"
            rows = [r for r in records if r["stage"] == s["stage"] and s["key"] in r["values"]]
            assert s["x"] == [r["step"] for r in rows]
            assert s["y"] == [r["values"][s["key"]] for r in rows]
            checked += 1
    names = {s["key"] for s in figures["curve-reward"]["series"]}
    assert names == {"reward", "by_family/arith/reward", "by_family/text/reward"}
    assert None in figures["curve-kl"]["series"][0]["y"]  # the NaN logged at step 3
    assert checked >= 15


def test_checkpoint_bar_series_equal_the_rates_in_the_evals_files(
    built: tuple[RunDir, str],
) -> None:
    full_run, html = built
    series = _series(html)["checkpoints"]["series"]
    assert [s["name"] for s in series] == ["untrained", "sft", "grpo", "control"]
    for s in series:
        doc = json.loads(full_run.eval_path(s["name"]).read_text(encoding="utf-8"))
        assert s["source"] == f"evals/{s['name']}.json"
        assert s["x"] == list(DOMAINS)
        for field in ("rate", "low", "high"):
            expected = [doc["per_domain"][d]["completed"][field] for d in DOMAINS]
            assert s["y" if field == "rate" else field] == expected


def test_paired_comparisons_show_the_exact_mcnemar_p_value(built: tuple[RunDir, str]) -> None:
    _, html = built
    expected = paired_compare([i < 9 for i in range(20)] * 2, [i < 14 for i in range(20)] * 2)
    row = re.search(r"<tr><td>grpo vs control</td>.*?</tr>", html)
    assert row is not None
    assert f"<td>{expected.p_value:.3g}</td>" in row.group(0)
    assert "dpo vs sft" not in html  # no DPO evaluation in this run


def test_matrix_heat_map_series_hold_the_final_evaluation_cells(built: tuple[RunDir, str]) -> None:
    full_run, html = built
    (s,) = _series(html)["matrix"]["series"]
    doc = json.loads(full_run.eval_path("grpo").read_text(encoding="utf-8"))
    assert s["source"] == "evals/grpo.json"
    assert sorted(s["x"]) == sorted(doc["per_cell"])
    assert s["y"] == [doc["per_cell"][k]["completed"]["rate"] for k in s["x"]]
    assert s["n"] == [doc["per_cell"][k]["completed"]["n"] for k in s["x"]]


def test_reward_histograms_count_the_first_and_last_fifth_of_grpo_steps(
    built: tuple[RunDir, str],
) -> None:
    _, html = built
    early, late = _series(html)["rewards"]["series"]
    assert early["source"] == late["source"] == "traces.sqlite"
    assert (early["steps"], late["steps"]) == ([1, 2], [9, 10])
    assert sum(early["y"]) == sum(late["y"]) == 8  # 2 steps x 4 rollouts; eval rows excluded
    assert len(early["x"]) == len(early["y"]) + 1


def test_alert_appears_in_the_report_escaped(built: tuple[RunDir, str]) -> None:
    _, html = built
    assert "entropy_collapse" in html
    assert "entropy fell &lt;fast&gt; &amp; far" in html
    assert "No alerts." not in html


def test_run_without_alerts_says_no_alerts(full_run: RunDir) -> None:
    full_run.alerts_path.unlink()
    assert "No alerts." in _report(full_run)


def test_viewer_links_point_at_each_domains_failures(built: tuple[RunDir, str]) -> None:
    full_run, html = built
    assert f"posttrain view {full_run.path}" in html
    for domain in DOMAINS:
        quoted = domain.replace("/", "%2F")
        assert f'href="http://127.0.0.1:8001/?domain={quoted}&amp;passed=0"' in html


def test_run_with_only_metrics_writes_a_report_saying_what_is_missing(tmp_path: Path) -> None:
    html = _report(_metrics_only_run(tmp_path))
    assert "No held-out evaluation results (evals/*.json)" in html
    assert "traces.sqlite is missing" in html
    assert "No alerts." in html and "no alert fired" in html
    assert "curve-reward" in _series(html)


def test_empty_run_directory_still_gets_a_report(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "empty")
    html = _report(run)
    assert "metrics.jsonl is missing" in html and "config.yaml is missing" in html
    assert _series(html) == {}


def test_unreadable_sources_are_named_not_fatal(full_run: RunDir) -> None:
    full_run.traces_path.write_bytes(b"not a database" * 100)
    full_run.eval_path("sft").write_text("{broken", encoding="utf-8")
    html = _report(full_run)
    assert "traces.sqlite cannot be read" in html
    assert "sft.json is not JSON" in html


def test_a_config_yaml_nested_too_deeply_is_named_not_fatal(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "deep")
    run.config_path.write_text("domains: " + "[" * 20000, encoding="utf-8")  # RecursionError
    assert "config.yaml cannot be read: it nests lists or mappings too deeply" in _report(run)


def test_strings_from_the_run_are_escaped(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "x")
    evil = '<script>alert("x")</script>'
    run.write_config({"model": {"name": evil}, "domains": [evil]})
    html = _report(run)
    assert evil not in html
    assert html.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") == 2  # model, domains


def test_missing_run_directory_is_a_report_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="does not exist"):
        write_run_report(tmp_path / "nope")


def test_a_directory_that_is_no_run_is_a_report_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(ReportError, match="not a posttrain run directory"):
        write_run_report(tmp_path)
    assert not (tmp_path / "report.html").exists()


def test_overview_counts_the_steps_taken_not_the_last_logged(tmp_path: Path) -> None:
    """A stage logging every 10 steps that stopped at step 17 ran 17 steps."""
    run = _metrics_only_run(tmp_path)
    state = run.checkpoint_path("control")
    state.mkdir(parents=True)
    (state / "trainer_state.json").write_text(
        json.dumps({"stage": "control", "step": 17, "stats": {"seconds": 2.5}}), encoding="utf-8"
    )
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("control", 10, {"loss": 1.0})
    html = _report(run)
    assert '<td>control</td><td class="num">17</td>' in html


def test_eval_report_shows_per_domain_rates_with_intervals_and_pass_at_k(tmp_path: Path) -> None:
    doc = _doc("grpo", 14, k=2)
    html = write_eval_report(doc, tmp_path / "out" / "eval.html", source="eval.json").read_text()
    (s,) = _series(html)["eval-domains"]["series"]
    assert s["source"] == "eval.json" and s["x"] == list(DOMAINS)
    assert s["y"] == [doc["per_domain"][d]["completed"]["rate"] for d in DOMAINS]
    assert s["low"] == [doc["per_domain"][d]["completed"]["low"] for d in DOMAINS]
    assert "eval-matrix" in _series(html)
    assert f"{doc['pass_at_k']['overall']:.3f}" in html and "pass@k overall" in html
    assert f"{doc['per_domain'][DOMAINS[0]]['completed']['low']:.3f}" in html


def test_eval_report_without_pass_at_k_says_so(tmp_path: Path) -> None:
    html = write_eval_report(_doc("sft", 8), tmp_path / "eval.html").read_text()
    assert "No pass@k" in html


def test_dollar_signs_in_names_do_not_break_the_plots(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "dollars")
    with MetricsLogger(run, tensorboard=False) as metrics:
        for step in (1, 2):
            metrics.log("grpo", step, {"reward": 0.5, "by_family/$x^{$/reward": 0.25 * step})
    (family,) = [s for s in _series(_report(run))["curve-reward"]["series"] if s["name"] != "all"]
    assert family["name"] == "$x^{$" and family["y"] == [0.25, 0.5]


def test_a_malformed_results_file_costs_its_section_not_the_report(full_run: RunDir) -> None:
    doc = json.loads(full_run.eval_path("grpo").read_text(encoding="utf-8"))
    for cell in doc["per_cell"].values():
        del cell["completed"]
    full_run.eval_path("grpo").write_text(json.dumps(doc), encoding="utf-8")
    html = _report(full_run)
    assert '<section id="matrix">' in html and "This section failed" in html
    assert "checkpoints" in _series(html)


@pytest.mark.parametrize("name", ["exp#1", "exp?x", "exp%41"])
def test_a_run_path_with_uri_characters_keeps_its_trace_sections(tmp_path: Path, name: str) -> None:
    from posttrain.eval.report_run import load_run

    run = _full_run(tmp_path / name)  # once read as a SQLite URI: 'no such table'
    files = load_run(run)
    assert "traces" not in files.notes and len(files.rewards) == GRPO_STEPS * 4
    assert sorted(p.name for p in (tmp_path).iterdir()) == [name]  # no stray database
