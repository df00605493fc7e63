"""`bench/transfer.py` on a tiny budget, through the real script: the JSON line is
consistent with itself and with the three runs' saved evaluations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # one tiny run of three recipes: about 35 s on a busy machine

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ["arith/addition-v1", "list/sort-v1", "tools/calculator-v1"]
TINY = [
    "--domains", ",".join(DOMAINS), "--heldout", "arith", "--alone", "list",
    "--sft-steps", "10", "--grpo-steps", "2", "--eval-tasks", "4", "--max-difficulty", "4",
    "--name", "tiny",
    "--set", "sft.num_examples=64", "--set", "sft.val_examples=16", "--set", "sft.eval_every=5",
    "--set", "grpo.batch_size=16", "--set", "grpo.minibatch_size=16",
    "--set", "logging.tensorboard=false",
]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The last printed line of one tiny run, parsed, and the run's directory."""
    out = tmp_path_factory.mktemp("transfer")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "transfer.py"), *TINY, "--out-dir", str(out)],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    return json.loads(last), out / "tiny"


def saved_tasks(run_dir: str, label: str) -> list[dict[str, Any]]:
    doc = json.loads((Path(run_dir) / "evals" / f"{label}.json").read_text(encoding="utf-8"))
    return list(doc["tasks"])


def test_the_json_line_names_the_families_and_is_saved(tiny_run: tuple[dict, Path]) -> None:
    doc, root = tiny_run
    assert doc["heldout_family"] == "arith"
    assert doc["breadth_families"] == ["list", "tools"]
    assert doc["alone_family"] == "list"
    assert doc["groups"] == {
        "heldout": ["arith/addition-v1"],
        "in_family": ["list/sort-v1", "tools/calculator-v1"],
        "alone_family": ["list/sort-v1"],
    }
    assert json.loads((root / "transfer.json").read_text(encoding="utf-8")) == doc
    assert doc["training"]["start"]["steps"] == 10
    assert doc["training"]["breadth"]["steps"] == doc["training"]["alone"]["steps"] == 2
    assert doc["wall_s"] > 0


def test_each_arm_trained_only_on_its_families(tiny_run: tuple[dict, Path]) -> None:
    seen = tiny_run[0]["grpo_families_seen"]
    assert seen["breadth"] and set(seen["breadth"]) <= {"list", "tools"}
    assert seen["alone"] == ["list"]


def test_the_three_checkpoints_were_scored_on_the_same_tasks(tiny_run: tuple[dict, Path]) -> None:
    doc = tiny_run[0]
    assert len(set(doc["task_ids_sha256"].values())) == 1
    dirs = doc["run_dirs"]
    saved = [saved_tasks(dirs["start"], "sft"), saved_tasks(dirs["breadth"], "grpo"),
             saved_tasks(dirs["alone"], "grpo")]  # fmt: skip
    ids = [[t["id"] for t in tasks] for tasks in saved]
    assert ids[0] == ids[1] == ids[2]
    assert len(ids[0]) == 4 * len(DOMAINS)
    assert doc["start_rescored_disagreements"] == {"breadth": 0, "alone": 0}


def distinct_ids() -> set[str]:
    """The first task of each held-out prompt (the script counts a repeated prompt once)."""
    from posttrain.domains import get_domain
    from posttrain.train.mixture import heldout_tasks, prompt_key

    tasks = heldout_tasks([get_domain(d) for d in DOMAINS], 4, 10**9, [1, 2, 3, 4])
    first: dict[str, str] = {}
    for t in tasks:
        first.setdefault(prompt_key(t), t.id)
    return set(first.values())


def test_rates_and_paired_counts_match_the_saved_evaluations(tiny_run: tuple[dict, Path]) -> None:
    doc = tiny_run[0]
    dirs = doc["run_dirs"]
    labels = {"start": (dirs["start"], "sft"), "breadth": (dirs["breadth"], "grpo"),
              "alone": (dirs["alone"], "grpo")}  # fmt: skip
    passed = {name: {t["id"]: (t["domain"], t["passed"]) for t in saved_tasks(*where)}
              for name, where in labels.items()}  # fmt: skip
    counted = distinct_ids()
    assert doc["heldout_tasks"] == {"drawn": 4 * len(DOMAINS), "distinct": len(counted)}
    for group, domains in doc["groups"].items():
        ids = [i for i, (d, _) in passed["start"].items() if d in domains and i in counted]
        for name in labels:
            r = doc["rates"][name][group]
            assert 0 < r["n"] == len(ids) <= 4 * len(domains)
            assert r["successes"] == sum(passed[name][i][1] for i in ids)
            assert 0 <= r["low"] <= r["rate"] <= r["high"] <= 1
        for key, t in doc["tests"][group].items():
            b, a = key.split("_vs_")
            only_a = sum(passed[a][i][1] and not passed[b][i][1] for i in ids)
            only_b = sum(passed[b][i][1] and not passed[a][i][1] for i in ids)
            assert (t["n"], t["only_a"], t["only_b"]) == (len(ids), only_a, only_b)
            assert 0.0 <= t["p"] <= 1.0
            assert t["diff"] == pytest.approx(t["b_rate"] - t["a_rate"], abs=1e-3)
