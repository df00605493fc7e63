"""The trainers on a CUDA model: batches, advantages and reference logprobs are built on
the model's device, so SFT, DPO and GRPO log the losses the CPU run logs.
Skipped where no GPU is present (CI here); `make test-all` runs it on a GPU machine."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch

from posttrain.config import DPOConfig, GRPOConfig, SFTConfig
from posttrain.domains import get_domain
from posttrain.rollout.episode import replay_references
from posttrain.train.dpo import train_dpo
from posttrain.train.sft import train_sft
from tests.train.test_dpo import starter_tasks, synthetic_pairs
from tests.train.test_grpo import run_grpo

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def on_both(model: Any, train: Callable[[Any, Any], None]) -> tuple[list[float], list[float]]:
    """The losses `train(model, log)` logs on a CPU copy and on a CUDA copy of `model`."""
    runs = []
    for device in ("cpu", "cuda"):
        logged: list[float] = []
        train(copy.deepcopy(model).to(device), lambda step, v, out=logged: out.append(v["loss"]))
        runs.append(logged)
    return runs[0], runs[1]


def test_sft_on_cuda_logs_the_cpu_losses(tiny_model: Any, tokenizer: Any) -> None:
    examples = replay_references(starter_tasks(range(8)), tokenizer, get_domain)
    val = replay_references(starter_tasks(range(1000, 1002)), tokenizer, get_domain)
    cfg = SFTConfig(batch_size=8, max_steps=3, eval_every=1, micro_batches=2, pack_tokens=256)
    cpu, gpu = on_both(tiny_model, lambda m, log: train_sft(m, examples, val, cfg, tokenizer.pad_token_id, log=log))  # fmt: skip
    assert len(cpu) == 3 and gpu == pytest.approx(cpu, rel=1e-3)


def test_dpo_on_cuda_logs_the_cpu_losses(tiny_model: Any, tokenizer: Any) -> None:
    pairs = synthetic_pairs(starter_tasks(range(4)), tokenizer)
    cfg = DPOConfig(lr=1e-3, batch_size=8, epochs=1, micro_batch_tokens=400)
    cpu, gpu = on_both(tiny_model, lambda m, log: train_dpo(m, pairs, pairs[:4], cfg, tokenizer.pad_token_id, log=log))  # fmt: skip
    assert len(cpu) == 2 and gpu == pytest.approx(cpu, rel=1e-3, abs=1e-5)


@pytest.mark.parametrize("share_prompts", [True, False])
def test_grpo_on_cuda_logs_the_cpu_losses(
    tiny_model: Any, tokenizer: Any, share_prompts: bool
) -> None:
    cfg = GRPOConfig(steps=2, batch_size=8, group_size=4, minibatch_size=8, lr=1e-3,
                     kl_coef=0.05, share_prompts=share_prompts)  # fmt: skip
    texts = ["yes", "no no no no no no", "yes", "maybe not"]

    def train(model: Any, log: Any) -> None:
        for values in run_grpo(model, tokenizer, texts, cfg):
            log(0, values)

    cpu, gpu = on_both(tiny_model, train)
    assert len(cpu) == 2 and gpu == pytest.approx(cpu, rel=1e-3, abs=1e-5)
