"""GPU throughput of SFT and GRPO steps: tokens/s, model FLOPs utilization, peak memory.

Two Llama-shaped models with random weights (no download, no posttrain import; only
torch and transformers): SmolLM2-135M's shape and a ~1.2B one (Llama-3.2-1B's shape),
each with and without gradient checkpointing. Weights and AdamW state stay fp32; the
forward runs under bf16 autocast (`train.precision=bf16`). One JSON line on stdout:

    python bench/gpu.py              # on a CUDA machine (sized for under 10 minutes; not yet run)
    python bench/gpu.py --dry-run    # tiny shapes on CPU, one step each (a smoke test)

An SFT step is forward + token-mean NLL + backward + AdamW over `batch × seq` tokens.
A GRPO step samples `prompts × group` completions of `new_tokens` (timed on its own
as generation tokens/s), then runs the clipped-ratio policy loss on them against the
sampling-time logprobs. MFU is 6·N·(trained tokens/s) over the GPU's dense bf16 peak
(N = unique parameters; attention score FLOPs and checkpoint recomputation are not
counted, as usual); the peak is taken from a table of known GPUs by name.

Not guaranteed: random weights sample random text, so GRPO rewards are random
numbers; HF `generate` is far slower than a serving engine (vLLM) and measures
the reference path only. Unknown GPUs report `mfu: null`.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

# Dense bf16 tensor-core peaks (TFLOP/s), from the vendors' data sheets (SXM parts).
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "A10G": 70.0,
                    "L4": 121.0, "RTX 4090": 165.0, "B200": 2250.0}  # fmt: skip


@dataclass(frozen=True)
class Shape:
    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    batch: int  # SFT sequences per step
    seq: int  # SFT tokens per sequence
    prompts: int  # GRPO prompts per step
    group: int  # GRPO samples per prompt
    prompt_len: int
    new_tokens: int


GPU_SHAPES = [
    Shape("smollm2-135m-shape", 576, 1536, 30, 9, 3, 49152, 16, 1024, 16, 8, 128, 128),
    Shape("llama-1b-shape", 2048, 8192, 16, 32, 8, 128256, 8, 1024, 8, 4, 128, 128),
]
DRY_SHAPES = [
    Shape("smollm2-135m-shape", 48, 96, 2, 3, 1, 256, 2, 32, 2, 2, 8, 8),
    Shape("llama-1b-shape", 64, 128, 2, 4, 2, 256, 2, 32, 2, 2, 8, 8),
]


def build(shape: Shape, device: str) -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=shape.vocab, hidden_size=shape.hidden, intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads, max_position_embeddings=8192,
        rope_theta=100000.0, tie_word_embeddings=True, attn_implementation="sdpa",
    )  # fmt: skip
    torch.manual_seed(0)
    with torch.device(device):  # initialised in place: a 1B model on CPU first is slow
        return LlamaForCausalLM(config)


def token_logprobs(model: LlamaForCausalLM, ids: torch.Tensor) -> torch.Tensor:
    logits = model(input_ids=ids).logits[:, :-1].float()  # [B, T-1, V]
    return torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)


def sft_step(model: LlamaForCausalLM, opt: torch.optim.Optimizer, s: Shape, dev: str) -> int:
    ids = torch.randint(0, s.vocab, (s.batch, s.seq), device=dev)
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
        logits = model(input_ids=ids).logits[:, :-1]
    loss = F.cross_entropy(logits.float().reshape(-1, s.vocab), ids[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return s.batch * s.seq


def grpo_step(
    model: LlamaForCausalLM, opt: torch.optim.Optimizer, s: Shape, dev: str
) -> tuple[int, int, float]:
    """(trained tokens, sampled tokens, sampling seconds) of one GRPO step."""
    prompts = torch.randint(0, s.vocab, (s.prompts, s.prompt_len), device=dev)
    model.eval()
    start = _now(dev)
    with torch.no_grad(), torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
        seqs = model.generate(
            prompts, do_sample=True, num_return_sequences=s.group, max_new_tokens=s.new_tokens,
            min_new_tokens=s.new_tokens, pad_token_id=0, use_cache=True,
        )  # fmt: skip  # [P*G, prompt_len + new_tokens]
        sample_s = _now(dev) - start
        old = token_logprobs(model, seqs)
    model.train()
    mask = torch.zeros_like(old)
    mask[:, s.prompt_len - 1 :] = 1.0  # the sampled tokens
    rewards = torch.rand(s.prompts, s.group, device=dev)
    adv = (rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)
    adv = adv.reshape(-1, 1)  # [P*G, 1]
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
        new = token_logprobs(model, seqs)
    ratio = torch.exp(new - old)
    surrogate = torch.minimum(ratio * adv, ratio.clamp(0.8, 1.28) * adv)
    loss = -(surrogate * mask).sum() / mask.sum()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return int(seqs.numel()), s.prompts * s.group * s.new_tokens, sample_s


def measure(shape: Shape, stage: str, checkpointing: bool, dev: str, steps: int, warmup: int,
            peak_tflops: float | None) -> dict[str, Any]:  # fmt: skip
    model = build(shape, dev)
    model.config.use_cache = False
    if checkpointing:
        enable = getattr(model, "activation_checkpointing_enable", None)  # transformers >= 5.2x
        if enable is not None:
            enable({"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable({"use_reentrant": False})
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=dev == "cuda")
    if dev == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    trained, sampled, sample_s, train_s = 0, 0, 0.0, 0.0
    for i in range(warmup + steps):
        start = _now(dev)
        if stage == "sft":
            t, n, g = sft_step(model, opt, shape, dev), 0, 0.0
        else:
            t, n, g = grpo_step(model, opt, shape, dev)
        took = _now(dev) - start
        if i >= warmup:
            trained, sampled = trained + t, sampled + n
            sample_s, train_s = sample_s + g, train_s + took - g
    tps = trained / train_s
    row: dict[str, Any] = {
        "model": shape.name, "params": params, "stage": stage,
        "grad_checkpointing": checkpointing, "tokens_per_s": round(tps, 1),
        "mfu": round(6 * params * tps / (peak_tflops * 1e12), 4) if peak_tflops else None,
        "step_s": round((train_s + sample_s) / steps, 4),
        "peak_memory_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if dev == "cuda" else None,
    }  # fmt: skip
    if stage == "grpo":
        row["sample_tokens_per_s"] = round(sampled / sample_s, 1)
    del model, opt
    return row


def _now(dev: str) -> float:
    if dev == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def peak_for(name: str) -> tuple[float | None, str | None]:
    for key, tflops in PEAK_BF16_TFLOPS.items():
        if key in name:
            return tflops, key
    return None, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="tiny shapes, CPU, one step")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per configuration")
    args = parser.parse_args()
    if args.dry_run:
        dev, shapes, steps, warmup = "cpu", DRY_SHAPES, 1, 0
        torch.set_num_threads(1)
    elif torch.cuda.is_available():
        dev, shapes, steps, warmup = "cuda", GPU_SHAPES, args.steps, 1
        torch.backends.cuda.matmul.allow_tf32 = True
    else:
        raise SystemExit("bench/gpu.py needs a CUDA GPU (or --dry-run)")
    gpu = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    peak, matched = peak_for(gpu) if dev == "cuda" else (None, None)
    runs = [
        measure(shape, stage, ckpt, dev, steps, warmup, peak)
        for shape in shapes
        for stage in ("sft", "grpo")
        for ckpt in (False, True)
    ]
    print(json.dumps({
        "dry_run": args.dry_run, "device": gpu, "torch": torch.__version__,
        "peak_bf16_tflops": peak, "peak_from": matched, "precision": "bf16 autocast, fp32 "
        "weights" if dev == "cuda" else "fp32", "runs": runs,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
