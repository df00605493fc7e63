"""`posttrain run --smoke` through the real console script: every stage on a tiny budget,
the full run directory, and a GRPO checkpoint that plain transformers loads."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from posttrain.store import COMPLETE_MARKER

POSTTRAIN = str(Path(sys.executable).with_name("posttrain"))
STAGES = ("sft", "dpo", "grpo", "control")

# A fresh interpreter that loads the checkpoint with plain transformers and never posttrain.
GENERATE = textwrap.dedent(
    """
    import sys
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
    model = AutoModelForCausalLM.from_pretrained(sys.argv[1])
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "12+34"}], add_generation_prompt=True, tokenize=False
    )
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).input_ids
    out = model.generate(ids, max_new_tokens=8, do_sample=False)
    assert out.shape[1] > ids.shape[1], out.shape
    print("generated:", repr(tokenizer.decode(out[0, ids.shape[1]:])))
    leaked = sorted(m for m in sys.modules if m == "posttrain" or m.startswith("posttrain."))
    assert not leaked, leaked
    """
)


def test_smoke_run_writes_a_complete_run_directory_loadable_without_posttrain(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    start = time.perf_counter()
    result = subprocess.run(
        [POSTTRAIN, "run", "--smoke", f"out_dir={tmp_path}", "name=smoke"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=env,
    )
    seconds = time.perf_counter() - start
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert seconds < 120, f"the smoke run took {seconds:.0f} s"

    run = tmp_path / "smoke"
    for name in ("config.yaml", "metrics.jsonl", "summary.md", "traces.sqlite", "report.html"):
        assert (run / name).is_file(), name
    assert f"report: {run / 'report.html'}" in result.stdout
    for label in ("untrained", *STAGES):
        assert json.loads((run / "evals" / f"{label}.json").read_text())["label"] == label
    assert any(p.name.startswith("events.out.tfevents") for p in (run / "tb").rglob("*"))
    for stage in STAGES:
        assert (run / "checkpoints" / stage / COMPLETE_MARKER).is_file(), stage

    logged = {
        json.loads(line)["stage"] for line in (run / "metrics.jsonl").read_text().splitlines()
    }
    assert set(STAGES) | {f"eval/{s}" for s in ("untrained", *STAGES)} | {"heldout"} <= logged
    with sqlite3.connect(run / "traces.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0] > 0

    child_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    loaded = subprocess.run(
        [sys.executable, "-c", GENERATE, str(run / "checkpoints" / "grpo")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=child_env,
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert "generated:" in loaded.stdout
