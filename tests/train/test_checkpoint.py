"""Stage checkpoints: plain transformers directories, written atomically, refused when partial."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from posttrain.models import Policy
from posttrain.store import COMPLETE_MARKER
from posttrain.train.checkpoint import STATE_FILE, load_checkpoint, save_checkpoint

# Runs in a fresh interpreter: plain transformers only, and proves posttrain never loads.
LOAD_WITH_PLAIN_TRANSFORMERS = textwrap.dedent(
    """
    import sys
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    path = sys.argv[1]
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "1+2"}], add_generation_prompt=True, tokenize=False
    )
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).input_ids
    out = model.generate(ids, max_new_tokens=5, do_sample=False, min_new_tokens=5)
    assert out.shape[1] == ids.shape[1] + 5, out.shape
    print(repr(tokenizer.decode(out[0, ids.shape[1]:])))
    leaked = sorted(m for m in sys.modules if m == "posttrain" or m.startswith("posttrain."))
    assert not leaked, leaked
    print("OK")
    """
)


def load_in_plain_transformers(path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Load `path` and generate in a child process that never imports posttrain."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-c", LOAD_WITH_PLAIN_TRANSFORMERS, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


@pytest.fixture
def policy(tiny_model: Any, tokenizer: Any) -> Policy:
    return Policy(tiny_model, tokenizer, "tiny")


def test_a_checkpoint_loads_and_generates_with_plain_transformers(
    policy: Policy, tmp_path: Path
) -> None:
    path = save_checkpoint(tmp_path / "checkpoints" / "sft", policy, "sft", step=3)
    result = load_in_plain_transformers(path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("OK")


def test_a_checkpoint_is_marked_complete_with_its_trainer_state(
    policy: Policy, tmp_path: Path
) -> None:
    path = save_checkpoint(tmp_path / "grpo", policy, "grpo", step=7, state={"reward": 0.5})
    assert (path / COMPLETE_MARKER).is_file()
    state = json.loads((path / STATE_FILE).read_text())
    assert state == {"stage": "grpo", "step": 7, "reward": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == ["grpo"]  # no temporary sibling left


def test_load_checkpoint_gives_back_the_saved_weights_and_state(
    policy: Policy, tmp_path: Path
) -> None:
    path = save_checkpoint(tmp_path / "dpo", policy, "dpo", step=2, state={"pairs": 4})
    loaded, state = load_checkpoint(path)
    assert state["stage"] == "dpo" and state["step"] == 2 and state["pairs"] == 4
    saved = policy.model.state_dict()
    for name, tensor in loaded.model.state_dict().items():
        assert torch.equal(tensor, saved[name]), name


def test_load_checkpoint_restores_the_rng_state(policy: Policy, tmp_path: Path) -> None:
    torch.manual_seed(11)
    path = save_checkpoint(tmp_path / "sft", policy, "sft", step=1)
    expected = torch.rand(3)
    torch.manual_seed(99)
    load_checkpoint(path)
    assert torch.equal(torch.rand(3), expected)


def test_load_checkpoint_refuses_a_directory_without_the_complete_marker(
    policy: Policy, tmp_path: Path
) -> None:
    path = save_checkpoint(tmp_path / "sft", policy, "sft", step=1)
    (path / COMPLETE_MARKER).unlink()  # what a crash mid-save leaves behind
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        load_checkpoint(path)


def test_load_checkpoint_refuses_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        load_checkpoint(tmp_path / "never-written")
