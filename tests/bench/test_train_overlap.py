"""`bench/train_overlap.py` through the real script, one timed step per side: every
variant runs, the overlapped ones train on rollouts one version old, and the ratios
in the JSON line are the sides' own step times divided."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # 4 sides x 2 tiny GRPO steps, a warm-up run and a Ray start

ROOT = Path(__file__).resolve().parents[2]


def test_every_variant_runs_and_the_ratios_are_its_step_time_over_trls() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "train_overlap.py"), "--steps", "1", "--rounds", "1"],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["threads"] == {"TRL": 2, "sync": 2, "thread": 1, "ray": 1}
    runs = out["runs"]
    assert set(runs) == {"TRL", "sync", "thread", "ray"}
    for name in ("sync", "thread", "ray"):
        expected = runs[name]["step_s"] / runs["TRL"]["step_s"]
        assert out[f"step_time_ratio_{name}"] == pytest.approx(expected, rel=1e-3)
        assert runs[name]["tokens_per_step"] > 0
    assert runs["sync"]["staleness_mean"] == [0.0]
    # the timed step trains on groups generated while the warm-up step updated
    for name in ("thread", "ray"):
        [staleness] = runs[name]["staleness_mean"]
        assert 0 < staleness <= 1, (name, staleness)
