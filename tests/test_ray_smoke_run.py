"""`posttrain run rollout.backend=ray --smoke` on a local Ray: it completes, and with one
rollout worker it trains and evaluates exactly as the local backend for the same seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from posttrain.store.metrics import read_metrics

pytest.importorskip("ray")

POSTTRAIN = str(Path(sys.executable).with_name("posttrain"))
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "RAY_AUTH_MODE": "disabled"}


def _smoke(tmp_path: Path, name: str, *overrides: str) -> Path:
    result = subprocess.run(
        [POSTTRAIN, "run", "--smoke", f"out_dir={tmp_path}", f"name={name}",
         "control.enabled=false", *overrides],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=ENV,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return tmp_path / name


def _grpo(run: Path) -> list[tuple[int, float, float]]:
    rows = [r for r in read_metrics(run / "metrics.jsonl") if r["stage"] == "grpo"]
    return [(r["step"], r["values"]["loss"], r["values"]["reward"]) for r in rows]


@pytest.mark.slow  # two smoke runs and Ray's start, about 4 minutes
def test_the_ray_backend_gives_the_local_backends_numbers(tmp_path: Path) -> None:
    local = _smoke(tmp_path, "local")
    on_ray = _smoke(tmp_path, "ray", "rollout.backend=ray", "rollout.ray_workers=1")
    metrics = [r for r in read_metrics(on_ray / "metrics.jsonl") if r["stage"] == "grpo"]
    assert metrics and all(r["values"]["ray/workers"] == 1.0 for r in metrics)
    ours, theirs = _grpo(on_ray), _grpo(local)
    assert [step for step, _, _ in ours] == [step for step, _, _ in theirs]
    flat = [x for _, loss, reward in ours for x in (loss, reward)]
    assert flat == pytest.approx(
        [x for _, loss, reward in theirs for x in (loss, reward)], rel=1e-5
    )
    for stage in ("sft", "grpo"):
        a = json.loads((local / "evals" / f"{stage}.json").read_text())
        b = json.loads((on_ray / "evals" / f"{stage}.json").read_text())
        assert [t["passed"] for t in b["tasks"]] == [t["passed"] for t in a["tasks"]]
        assert [t["tokens"] for t in b["tasks"]] == [t["tokens"] for t in a["tasks"]]
