"""Starting-line pass rates of a model on a sample of each domain family, greedy.

    python bench/domain_baselines.py --model smollm2-135m --family agent --family coding \
        --per-domain 3 [--max-tokens 256] [--markdown docs/domains/agents.md]

For every registered domain of the named families, `--per-domain` held-out tasks
(seeds from 10**9, the evaluation's range; difficulties spread over 1..10) run through
the real episode loop with greedy decoding (`posttrain.eval.evaluate`), sessions and
sandboxes included. Prints per-domain and per-family completion rates with Wilson 95%
intervals, n, the wall-clock, and the settings; `--markdown` appends the table to a file.
`--model` is "tiny" (untrained), "smollm2-135m", or a checkpoint directory such as
`runs/<run>/checkpoints/grpo` (the tiny model after the demo recipe).

An episode that outgrows the model's window (`max_position_embeddings`) ends as a
failure with the error recorded, as in the recipe; the count is printed.

Not guaranteed: small n gives wide intervals — these are baselines to beat, not
model comparisons; the tiny model's 80-token default budget is raised to
`--max-tokens` for every model alike.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from posttrain.domains import all_domains, get_domain
from posttrain.domains.matrix import family_of
from posttrain.engines import HFEngine
from posttrain.eval.evaluate import evaluate
from posttrain.eval.stats import rate
from posttrain.models.loading import load_policy

HELDOUT_SEED = 10**9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--family", action="append", required=True)
    parser.add_argument("--per-domain", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    domains = [d for d in all_domains() if family_of(d.id) in args.family]
    if not domains:
        raise SystemExit(f"no registered domains in families {args.family}")
    tasks = [
        d.generate(HELDOUT_SEED + i, 1 + (i * 10) // args.per_domain)
        for d in domains
        for i in range(args.per_domain)
    ]
    policy = load_policy(args.model)
    policy.model.eval()
    engine = HFEngine(policy.model, policy.tokenizer)
    # As the recipe does: an episode that outgrows the model's window ends with an error.
    max_context = int(getattr(policy.model.config, "max_position_embeddings", 0)) or None
    started = time.perf_counter()
    result = evaluate(args.model, tasks, engine, policy.tokenizer, get_domain, args.max_tokens,
                      max_context=max_context)  # fmt: skip
    seconds = time.perf_counter() - started

    lines = [
        f"model `{args.model}`, greedy, {args.per_domain} held-out tasks per domain "
        f"(difficulties spread over 1..10), max {args.max_tokens} tokens per turn, "
        f"{args.threads} threads, {seconds:.0f} s",
        "",
        "| domain | passed (Wilson 95%) |",
        "|---|---|",
    ]
    for name, score in result.per_domain.items():
        lines.append(f"| {name} | {score.completed} |")
    for family in args.family:
        ids = [d.id for d in domains if family_of(d.id) == family]
        passed = sum(result.per_domain[i].completed.successes for i in ids)
        n = sum(result.per_domain[i].completed.n for i in ids)
        lines.append(f"| **{family}/\\* (all)** | **{rate(passed, n)}** |")
    full = sum("context full" in (r.error or "") for r in result.rollouts)
    errors = sum(bool(r.error or r.verdict.error) for r in result.rollouts) - full
    lines.append("")
    lines.append(
        f"episodes that outgrew the {max_context}-token window (scored 0): {full} of "
        f"{len(tasks)}; other infrastructure or verifier errors: {errors}"
    )
    text = "\n".join(lines)
    print(text)
    if args.markdown is not None:
        with args.markdown.open("a") as out:
            out.write("\n" + text + "\n")


if __name__ == "__main__":
    main()
