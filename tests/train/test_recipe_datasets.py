"""A recipe that trains on the user's own JSONL file, rewarded by a function given by
import path, runs end to end through the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

POSTTRAIN = str(Path(sys.executable).with_name("posttrain"))

REWARDS = textwrap.dedent(
    """
    def echo_word(prompts, completions, answer, **columns):
        return [float(c.strip() == a) for c, a in zip(completions, answer)]
    """
)


def test_a_recipe_trains_on_a_user_jsonl_with_a_reward_by_import_path(tmp_path: Path) -> None:
    (tmp_path / "my_rewards.py").write_text(REWARDS)
    words = ["cat", "dog", "sun", "map", "pen", "cup", "hat", "box", "jam", "owl"]
    # Each prompt on three lines, as real files repeat rows: all copies land on one side,
    # so heldout_fraction 0.4 holds out 3 of the 10 prompts (eval.tasks_per_domain=3).
    (tmp_path / "echo.jsonl").write_text(
        "".join(json.dumps({"prompt": f"say {w}", "answer": w}) + "\n" for w in words * 3)
    )
    (tmp_path / "recipe.yaml").write_text(
        textwrap.dedent(
            f"""
            out_dir: {tmp_path}
            name: mine
            datasets:
              - id: mine/echo-v1
                path: {tmp_path / "echo.jsonl"}
                reward: [my_rewards:echo_word]
                heldout_fraction: 0.4
            domains: [mine/echo-v1]
            """
        )
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "COLUMNS": "200",
           "PYTHONPATH": str(tmp_path)}  # fmt: skip
    overrides = ["sft.num_examples=64", "sft.max_steps=8", "sft.eval_every=4", "sft.val_examples=8",
                 "dpo.num_tasks=8", "dpo.val_tasks=4", "dpo.batch_size=4", "grpo.steps=2",
                 "grpo.batch_size=16", "grpo.minibatch_size=16", "eval.tasks_per_domain=3"]  # fmt: skip
    result = subprocess.run(
        [POSTTRAIN, "run", str(tmp_path / "recipe.yaml"), *overrides],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run = tmp_path / "mine"
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    stages = {m.get("stage") for m in metrics}
    assert {"sft", "grpo"} <= stages, stages
    assert "mine/echo-v1" in (run / "summary.md").read_text()
