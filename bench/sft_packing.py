"""SFT steps with packed rows vs one padded row per sequence, same process and settings.

    python bench/sft_packing.py [--steps 60] [--width 512] [--micro 4] [--batch 32]

Builds the recipe's demonstrations (the `make demo` domains, difficulties 1..10, one
thread), runs a few untimed steps of each arm (the first SFT run in a process is
slower, whichever arm it is), then times `--steps` SFT optimizer steps of the tiny
model from the same seed twice: padded (`sft.pack_tokens` unset, the default) and
packed into rows of at most `--width` tokens. Both arms see the same batches, micro-batches and settings,
printed in the JSON. Tokens/s counts non-pad tokens. The last line is one JSON object
with `packed_over_padded` (the speed ratio), each arm's tokens/s and padded-token
share, and the loss after the last step of each (they train the same way).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import torch

from posttrain.config import SFTConfig, load_config
from posttrain.domains import get_domain
from posttrain.models.loading import load_policy
from posttrain.rollout.episode import replay_references
from posttrain.train.mixture import TaskSampler
from posttrain.train.recipe_inputs import resolve_domains
from posttrain.train.sft import _micro_batches, train_sft
from posttrain.types import Rollout


def padded_share(examples: list[Rollout], cfg: SFTConfig, pad_id: int) -> float:
    """Share of pad tokens in the micro-batches SFT runs (its first 8 batches)."""
    real = padded = 0
    for start in range(0, min(len(examples), cfg.batch_size * 8), cfg.batch_size):
        batch = sorted(examples[start : start + cfg.batch_size],
                       key=lambda r: len(r.prompt_ids) + len(r.completion_ids))  # fmt: skip
        for part, weight in _micro_batches(batch, pad_id, cfg.micro_batches, cfg.pack_tokens):
            if weight:
                real += int((part.input_ids != pad_id).sum())
                padded += part.input_ids.numel()
    return 1.0 - real / padded


def run(examples: list[Rollout], cfg: SFTConfig, pad_id: int) -> dict[str, float]:
    model = load_policy("tiny", seed=0).model
    start = time.perf_counter()
    res = train_sft(model, examples, [], cfg, pad_id, stop_on_plateau=False)
    seconds = time.perf_counter() - start
    tokens = res.steps * cfg.batch_size * sum(
        len(r.prompt_ids) + len(r.completion_ids) for r in examples
    ) / len(examples)  # fmt: skip
    return {"seconds": seconds, "steps": res.steps, "tokens_per_s": tokens / seconds,
            "pad_share": padded_share(examples, cfg, pad_id), "final_loss": res.train_loss}  # fmt: skip


WARMUP_STEPS = 5


Measure = Callable[[list[Rollout], SFTConfig, int], dict[str, float]]


def compare(
    examples: list[Rollout],
    base: SFTConfig,
    width: int,
    pad_id: int,
    measure: Measure | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """(padded, packed) figures, each arm warmed up untimed before either is timed."""
    measure = run if measure is None else measure
    arms = (base, base.model_copy(update={"pack_tokens": width}))
    for cfg in arms:
        steps = min(WARMUP_STEPS, cfg.max_steps)
        measure(examples, cfg.model_copy(update={"max_steps": steps, "eval_every": steps}), pad_id)
    padded, packed = (measure(examples, cfg, pad_id) for cfg in arms)
    return padded, packed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--micro", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    recipe = load_config(None, [])
    policy = load_policy("tiny", seed=0)
    tasks = TaskSampler(resolve_domains(recipe), "sft", range(1, 11), seed=0).sample(2000)
    examples = replay_references(tasks, policy.tokenizer, get_domain)
    pad_id = policy.tokenizer.pad_token_id
    base = SFTConfig(batch_size=args.batch, micro_batches=args.micro, max_steps=args.steps,
                     eval_every=args.steps, max_minutes=60.0)  # fmt: skip
    padded, packed = compare(examples, base, args.width, pad_id)
    print(json.dumps({
        "packed_over_padded": packed["tokens_per_s"] / padded["tokens_per_s"],
        "padded": padded, "packed": packed,
        "settings": {"threads": 1, "batch": args.batch, "micro_batches": args.micro,
                     "steps": args.steps, "width": args.width, "examples": len(examples),
                     "warmup_steps_per_arm": WARMUP_STEPS},
    }))  # fmt: skip


if __name__ == "__main__":
    main()
