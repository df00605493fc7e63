"""Stage checkpoints: a plain transformers model directory plus the trainer's state.

`save_checkpoint` writes, atomically (temp directory + rename, `COMPLETE` marker
last), a directory that `AutoModelForCausalLM.from_pretrained` and
`AutoTokenizer.from_pretrained` load with no posttrain import, plus
`trainer_state.json` (stage, step, metrics, trace high-water mark) and `rng.pt`
(torch and Python RNG states). A crash mid-save leaves no directory that looks
complete; `load_checkpoint` refuses one without the marker.

A LoRA policy (`model.lora.r` set) is saved as its merged plain model, so the
directory loads the same way without peft, plus the adapter in `adapter/` and its
settings under `"lora"` in `trainer_state.json`. When the state also records the
base model (`"base_model"`, from `base_model_record`), `load_checkpoint` rebuilds
that base and attaches the saved adapter, trainable, so training continues with the
same frozen base and the same adapter; `merged=True` gives the plain model instead.

    save_checkpoint(path, policy, "sft", step, {"base_model": base_model_record(cfg.model, 0)})
    policy, state = load_checkpoint(path)  # base + adapter again, for a LoRA run

`load_run_policy(config.model, seed)` is the policy a run starts from: the base
model, wrapped with fresh adapters when `model.lora.r` is set.

Not guaranteed: rebuilding a LoRA checkpoint's base needs that base to still be
loadable under the recorded name (a model directory that has moved cannot be found);
without a `"base_model"` record the checkpoint loads as its merged model.
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import torch

from posttrain.config import ConfigError, ModelConfig
from posttrain.models.loading import Policy, load_model_dir, load_policy
from posttrain.models.lora import (
    LoraTargetError,
    apply_lora,
    is_lora,
    load_adapter,
    lora_settings,
    merged_copy,
    save_adapter,
)
from posttrain.models.tiny import TinyModelSpec
from posttrain.store.atomic import atomic_directory, is_complete

STATE_FILE = "trainer_state.json"
RNG_FILE = "rng.pt"
ADAPTER_DIR = "adapter"


def save_checkpoint(
    path: Path, policy: Policy, stage: str, step: int, state: dict[str, Any] | None = None
) -> Path:
    with atomic_directory(path) as tmp:
        record = {"stage": stage, "step": step, **(state or {})}
        if is_lora(policy.model):
            merged_copy(policy.model).save_pretrained(tmp)
            save_adapter(policy.model, tmp / ADAPTER_DIR)
            record["lora"] = lora_settings(policy.model)
        else:
            policy.model.save_pretrained(tmp)
        policy.tokenizer.save_pretrained(tmp)  # type: ignore[attr-defined]
        (tmp / STATE_FILE).write_text(json.dumps(record, indent=2, sort_keys=True, default=str))
        torch.save({"torch": torch.get_rng_state(), "python": random.getstate()}, tmp / RNG_FILE)
    return path


def load_checkpoint(
    path: Path, restore_rng: bool = True, merged: bool = False
) -> tuple[Policy, dict[str, Any]]:
    """The policy and trainer state saved at `path`; restores the RNG states (to resume).

    A LoRA checkpoint with a recorded base comes back as base + trainable adapter,
    unless `merged` asks for the plain merged model."""
    if not is_complete(path):
        raise FileNotFoundError(f"no complete checkpoint at {str(path)!r}")
    state = json.loads((path / STATE_FILE).read_text())
    base = state.get("base_model")
    if not merged and "lora" in state and base and (path / ADAPTER_DIR).is_dir():
        with torch.random.fork_rng(devices=[]):  # the tiny model seeds torch to build itself
            plain = load_base_policy(ModelConfig.model_validate(base["model"]), int(base["seed"]))
        model = load_adapter(plain.model, path / ADAPTER_DIR, trainable=True)
        policy = Policy(model, plain.tokenizer, str(path))  # training never edits the tokenizer
    else:
        policy = load_model_dir(path)
    if restore_rng:
        rng = torch.load(path / RNG_FILE, weights_only=False)
        torch.set_rng_state(rng["torch"])
        random.setstate(rng["python"])
    return policy, state


def base_model_record(model: ModelConfig, seed: int) -> dict[str, Any]:
    """What `load_checkpoint` needs to rebuild a LoRA checkpoint's frozen base."""
    return {"model": model.model_dump(mode="json"), "seed": seed}


def load_base_policy(model: ModelConfig, seed: int) -> Policy:
    """The model `model` names, before any adapter: the tiny model is built from
    `seed` (which reseeds the global torch RNG); `max_positions`, when set, overrides
    the context window."""
    spec = TinyModelSpec(model.hidden_size, model.num_layers, model.num_heads,
                         model.intermediate_size)  # fmt: skip
    if model.max_positions is not None:
        spec = dataclasses.replace(spec, max_positions=model.max_positions)
    policy = load_policy(model.name, seed=seed, spec=spec)
    if model.max_positions is not None:  # a loaded model's window, widened or narrowed
        policy.model.config.max_position_embeddings = model.max_positions
    return policy


def load_run_policy(model: ModelConfig, seed: int) -> Policy:
    """The policy a run trains: the base model, with fresh adapters when `model.lora.r`
    is set. Raises ConfigError when `model.lora.target_modules` names missing layers."""
    policy = load_base_policy(model, seed)
    if model.lora.r is not None:
        try:
            policy.model = apply_lora(policy.model, model.lora, seed=seed)
        except LoraTargetError as exc:
            raise ConfigError(f"model.lora.target_modules: {exc}") from None
    return policy
