"""HFEngine sampling throughput against `transformers` `generate` on the same work.

    python bench/engine_sampling.py [--prompts 16 --n 8 --max-tokens 32 --threads 1]

Both sides sample `n` completions for each of `prompts` chat prompts from the same
tiny model (fixed size, float32, same thread count, same token budget, no early
stop: eos is suppressed by min_new_tokens on the baseline and by a budget-length
check on ours), at temperature 1 over the whole vocabulary (the baseline passes
`top_k=0`: `generate` would otherwise cut every step to the top 50 tokens). The
baseline is `model.generate(num_return_sequences=n, do_sample=True, top_k=0,
output_scores=True)`, which repeats every prompt n times before prefill; the engine
prefills each prompt once and shares the cache. Prints tokens/s for each and the ratio.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch

from posttrain.domains import get_domain
from posttrain.engines import GenerationRequest, HFEngine, SamplingParams
from posttrain.models import TinyModelSpec, build_tiny_model, build_tokenizer
from posttrain.rollout.episode import prompt_ids


def baseline(model: Any, tok: Any, prompts: list[list[int]], n: int, max_tokens: int) -> int:
    """`generate` sampling `n` completions of `max_tokens` for each prompt (left-padded,
    no early stop, full-vocabulary sampling, scores kept); the tokens it generated."""
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in prompts])
    mask = (
        torch.arange(width)[None, :] >= torch.tensor([width - len(p) for p in prompts])[:, None]
    ).long()
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=True,
            top_k=0,  # generate()'s default is top-k 50; ours samples the full softmax
            num_return_sequences=n,
            max_new_tokens=max_tokens,
            min_new_tokens=max_tokens,  # the baseline may not stop before the budget
            output_scores=True,
            return_dict_in_generate=True,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    return int((out.sequences.shape[1] - width) * out.sequences.shape[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tok = build_tokenizer()
    model = build_tiny_model(tok, seed=0, spec=TinyModelSpec()).eval()
    domain = get_domain("list/sort-v1")
    prompts = [prompt_ids(tok, domain.generate(i, 10)) for i in range(args.prompts)]
    engine = HFEngine(model, tok, max_batch_rows=args.prompts * args.n, seed=0)
    engine.stop_ids = [-1]  # no early stop on our side either
    params = SamplingParams(max_tokens=args.max_tokens, temperature=1.0, n=args.n)

    def ours() -> int:
        out = engine.generate([GenerationRequest(p, params) for p in prompts])
        return sum(len(c.token_ids) for group in out for c in group)

    results = {}
    for name, fn in (
        ("baseline generate()", lambda: baseline(model, tok, prompts, args.n, args.max_tokens)),
        ("HFEngine", ours),
    ):
        fn()  # warm-up
        best = float("inf")
        tokens = 0
        for _ in range(args.repeats):
            start = time.perf_counter()
            tokens = fn()
            best = min(best, time.perf_counter() - start)
        results[name] = tokens / best
        print(f"{name:<20} {tokens} tokens in {best:.3f} s = {tokens / best:,.0f} tok/s")
    ratio = results["HFEngine"] / results["baseline generate()"]
    print(
        f"settings: prompts={args.prompts} n={args.n} max_tokens={args.max_tokens} "
        f"threads={args.threads} float32 tiny model\nratio HFEngine / generate(): {ratio:.2f}x"
    )


if __name__ == "__main__":
    main()
