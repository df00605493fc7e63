"""Stage checkpoints: a plain transformers model directory plus the trainer's state.

`save_checkpoint` writes, atomically (temp directory + rename, `COMPLETE` marker
last), a directory that `AutoModelForCausalLM.from_pretrained` and
`AutoTokenizer.from_pretrained` load with no posttrain import, plus
`trainer_state.json` (stage, step, metrics, trace high-water mark) and `rng.pt`
(torch and Python RNG states). A crash mid-save leaves no directory that looks
complete; `load_checkpoint` refuses one without the marker.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import torch

from posttrain.models.loading import Policy, load_model_dir
from posttrain.store.atomic import atomic_directory, is_complete

STATE_FILE = "trainer_state.json"
RNG_FILE = "rng.pt"


def save_checkpoint(
    path: Path, policy: Policy, stage: str, step: int, state: dict[str, Any] | None = None
) -> Path:
    with atomic_directory(path) as tmp:
        policy.model.save_pretrained(tmp)
        policy.tokenizer.save_pretrained(tmp)  # type: ignore[attr-defined]
        record = {"stage": stage, "step": step, **(state or {})}
        (tmp / STATE_FILE).write_text(json.dumps(record, indent=2, sort_keys=True, default=str))
        torch.save({"torch": torch.get_rng_state(), "python": random.getstate()}, tmp / RNG_FILE)
    return path


def load_checkpoint(path: Path, restore_rng: bool = True) -> tuple[Policy, dict[str, Any]]:
    """The policy and trainer state saved at `path`; restores the RNG states (to resume)."""
    if not is_complete(path):
        raise FileNotFoundError(f"no complete checkpoint at {str(path)!r}")
    policy = load_model_dir(path)
    state = json.loads((path / STATE_FILE).read_text())
    if restore_rng:
        rng = torch.load(path / RNG_FILE, weights_only=False)
        torch.set_rng_state(rng["torch"])
        random.setstate(rng["python"])
    return policy, state
