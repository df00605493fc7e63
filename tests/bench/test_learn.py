"""`bench/learn.py` on the tiny model and a seconds-long budget, through the real
script: both arms train, every checkpoint is scored on the same held-out tasks, and
the JSON line agrees with itself and with our run's saved evaluations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from posttrain.domains import get_domain
from posttrain.train.mixture import heldout_tasks

pytestmark = pytest.mark.slow  # one tiny recipe and one tiny TRL run: about a minute

ROOT = Path(__file__).resolve().parents[2]
EVAL_TASKS = 8
TINY = [
    "--model", "tiny", "--minutes", "0.3", "--eval-tasks", str(EVAL_TASKS), "--threads", "1",
    "--name", "tiny",
    "--set", "sft.num_examples=64", "--set", "sft.val_examples=16", "--set", "sft.eval_every=5",
    "--set", "grpo.batch_size=16", "--set", "logging.tensorboard=false",
]  # fmt: skip


def run_bench(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "learn.py"), *TINY, "--out-dir", str(out), *extra],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
    )  # fmt: skip


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("learn")
    done = run_bench(out)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), out / "tiny"


def test_every_checkpoint_is_scored_on_the_same_heldout_tasks(tiny_run: tuple) -> None:
    doc, root = tiny_run
    assert json.loads((root / "learn.json").read_text(encoding="utf-8")) == doc
    assert list(doc["rates"]) == ["base", "ours_sft", "ours", "trl"]
    assert doc["heldout_tasks"] == EVAL_TASKS
    for scores in doc["rates"].values():
        for key in ("completed", "format", "correct"):
            assert scores[key]["n"] == EVAL_TASKS
            assert 0.0 <= scores[key]["low"] <= scores[key]["rate"] <= scores[key]["high"] <= 1.0
        assert sum(r["n"] for r in scores["correct_by_op"].values()) == EVAL_TASKS
    saved = json.loads((root / "ours" / "evals" / "untrained.json").read_text(encoding="utf-8"))
    tasks = heldout_tasks([get_domain("num/add-multiply-v1")], EVAL_TASKS, 10**9, [3])
    assert [t["id"] for t in saved["tasks"]] == [t.id for t in tasks]
    base = doc["rates"]["base"]["completed"]["successes"]
    assert base == sum(t["passed"] for t in saved["tasks"])


def test_tests_and_gains_follow_from_the_rates(tiny_run: tuple) -> None:
    doc, _ = tiny_run
    rates = doc["rates"]
    for key, (a, b) in {"ours_vs_base": ("base", "ours"), "trl_vs_base": ("base", "trl"),
                        "ours_vs_trl": ("trl", "ours")}.items():  # fmt: skip
        t = doc["tests"][key]
        assert t["n"] == EVAL_TASKS
        assert t["a_rate"] == rates[a]["correct"]["rate"]
        assert t["b_rate"] == rates[b]["correct"]["rate"]
        assert t["b_rate"] - t["a_rate"] == pytest.approx((t["only_b"] - t["only_a"]) / t["n"])
        assert 0.0 <= t["p"] <= 1.0
        a_bits, b_bits = doc["correct_per_task"][a], doc["correct_per_task"][b]
        assert (t["only_a"], t["only_b"]) == (
            sum(x == "1" and y == "0" for x, y in zip(a_bits, b_bits, strict=True)),
            sum(x == "0" and y == "1" for x, y in zip(a_bits, b_bits, strict=True)),
        )
    for name, bits in doc["correct_per_task"].items():
        assert len(bits) == EVAL_TASKS and bits.count("1") == rates[name]["correct"]["successes"]
    for name in ("ours_sft", "ours", "trl"):
        diff = rates[name]["correct"]["rate"] - rates["base"]["correct"]["rate"]
        assert doc["gains"][name] == pytest.approx(diff, abs=1e-4)


def test_both_arms_train_within_their_budget(tiny_run: tuple) -> None:
    doc, _ = tiny_run
    budget_s = 0.3 * 60
    ours, trl = doc["training"]["ours"], doc["training"]["trl"]
    assert ours["stages"]["sft"]["steps"] >= 1 and ours["stages"]["grpo"]["steps"] >= 1
    assert ours["train_s"] <= budget_s + 10  # each stage stops at its share, after a step
    assert trl["steps"] >= 1
    assert budget_s <= trl["train_s"] <= budget_s + 10  # stopped by the budget callback
    assert trl["settings"]["lora"]["r"] == doc["settings"]["ours"]["model"]["lora"]["r"] == 16
    assert set(doc["peak_rss_gib"]) == {"ours", "trl"}  # each arm its own window
    assert all(0 < gib < 64 for gib in doc["peak_rss_gib"].values())


def test_bad_arguments_are_refused_by_name(tmp_path: Path) -> None:
    done = run_bench(tmp_path, "--arms", "ours,ppo")
    assert done.returncode == 2 and "--arms" in done.stderr and "ppo" in done.stderr
    done = run_bench(tmp_path, "--sft-share", "1.5")
    assert done.returncode == 2 and "--sft-share" in done.stderr
