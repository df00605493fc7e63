"""The recipe under torchrun: start-up checks, sharing episodes over ranks, and (slow)
a 2-rank DDP smoke run of `posttrain run` that writes one run directory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from posttrain.config import ConfigError, RunConfig, load_config
from posttrain.ranks import broadcast_object, shard_map
from posttrain.store.metrics import read_metrics
from posttrain.train.distributed import DistributedError, PolicyReplica, launch, wrap_model
from posttrain.train.recipe import check_launch

ROOT = Path(__file__).resolve().parents[2]


def config(*overrides: str) -> RunConfig:
    return load_config(None, list(overrides))


def test_a_strategy_without_torchrun_is_refused_naming_the_launcher(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ConfigError, match=r"train.strategy=ddp runs under torchrun.*nproc"):
        check_launch(config("train.strategy=ddp"))


def test_ranks_without_a_strategy_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match=r"2 torchrun ranks but train.strategy=none"):
        check_launch(config())


@pytest.mark.parametrize(
    ("override", "name"),
    [
        ("sft.batch_size=7", "sft.batch_size=7"),
        ("dpo.batch_size=9", "dpo.batch_size=9"),
        ("grpo.batch_size=24", "grpo.batch_size / grpo.group_size=3"),
    ],
)
def test_a_world_size_not_dividing_a_batch_is_refused_at_start_up(
    monkeypatch: pytest.MonkeyPatch, override: str, name: str
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    extra = ["grpo.group_size=8", "grpo.minibatch_size=24"] if "grpo" in override else []
    cfg = config("train.strategy=ddp", override, *extra)
    with pytest.raises(ConfigError, match=rf"{name.replace('/', '/')} does not split over 2"):
        check_launch(cfg)


def test_the_default_batches_split_over_two_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    check_launch(config("train.strategy=fsdp"))


def test_fsdp_with_lora_is_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match=r"fsdp with model.lora.r set.*use train.strategy=ddp"):
        check_launch(config("train.strategy=fsdp", "model.lora.r=8"))


def test_fsdp_refuses_a_model_without_decoder_layers_to_shard() -> None:
    class Flat(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 4)

    with pytest.raises(DistributedError, match=r"cannot shard Flat.*use train.strategy='ddp'"):
        wrap_model(Flat(), "fsdp")


def test_shard_map_and_broadcast_are_plain_calls_in_one_process() -> None:
    assert shard_map([3, 1, 2], lambda xs: [x * 10 for x in xs]) == [30, 10, 20]
    assert broadcast_object({"a": 1}) == {"a": 1}


def test_without_a_strategy_the_replica_trains_the_plain_model_itself() -> None:
    model = nn.Sequential(nn.Linear(2, 2))
    replica = PolicyReplica(model, config().train)
    assert replica.trained is model and replica.plain is model
    weights = {k: torch.zeros_like(v) for k, v in model.state_dict().items()}
    replica.load(weights)
    replica.sync()
    assert all(torch.equal(v, torch.zeros_like(v)) for v in model.state_dict().values())


@pytest.mark.slow  # a 2-rank torchrun of the whole smoke recipe (~45 s)
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_posttrain_run_under_torchrun_writes_one_run_directory(
    strategy: str, tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    args = ["-m", "posttrain", "run", "--smoke", f"train.strategy={strategy}",
            f"out_dir={out}", "name=r", "control.enabled=false"]  # fmt: skip
    launch(args, nproc=2, timeout_s=600, env={"PYTHONPATH": str(ROOT)})
    assert [p.name for p in out.iterdir()] == ["r"]  # rank 1 made no directory of its own
    run = out / "r"
    for stage in ("sft", "dpo", "grpo"):
        assert (run / "checkpoints" / stage / "COMPLETE").is_file()
        assert (run / "evals" / f"{stage}.json").is_file()
    rows = list(read_metrics(run / "metrics.jsonl"))
    grpo_steps = [r["step"] for r in rows if r["stage"] == "grpo"]
    assert grpo_steps == [1, 2, 3]  # logged once, by rank 0
    evals: dict[str, Any] = json.loads((run / "evals" / "sft.json").read_text())
    assert evals["overall"]["n"] == 40  # every held-out task, though each rank ran half
    assert os.environ.get("WORLD_SIZE") is None
