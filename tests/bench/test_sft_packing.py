"""`bench/sft_packing.py`: neither arm is timed before both have run untimed, so the
process's first-run slowness falls on the warm-up, not on the padded arm."""

from __future__ import annotations

from posttrain.config import SFTConfig
from posttrain.types import Rollout
from tests.bench import load_script


def test_both_arms_warm_up_before_either_is_timed() -> None:
    script = load_script("sft_packing")
    calls: list[tuple[int | None, int]] = []

    def measure(examples: list[Rollout], cfg: SFTConfig, pad_id: int) -> dict[str, float]:
        calls.append((cfg.pack_tokens, cfg.max_steps))
        return {"tokens_per_s": 1.0}

    base = SFTConfig(batch_size=8, micro_batches=2, max_steps=60, eval_every=60)
    script.compare([], base, 128, 0, measure)
    warm = script.WARMUP_STEPS
    assert calls == [(None, warm), (128, warm), (None, 60), (128, 60)]
