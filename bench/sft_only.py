"""SFT alone, then the recipe's held-out evaluation: for tuning the SFT stage quickly.

    python bench/sft_only.py NAME [key=value ...]      e.g. sft.lr=1e-3 sft.max_steps=1000

Builds the recipe's demonstrations and validation set exactly as `posttrain run` does
(same sampler streams, held-out prompts excluded), trains SFT with the given
overrides (one thread), and prints the validation loss as it goes, then the held-out
completion per domain and per domain x difficulty (greedy, 400 tasks by default).
Every line starts with NAME, so two runs can share a log.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from collections import defaultdict

import torch

from posttrain.config import load_config
from posttrain.domains import get_domain
from posttrain.engines.hf import HFEngine
from posttrain.eval.evaluate import evaluate
from posttrain.models.loading import load_policy
from posttrain.models.tiny import TinyModelSpec
from posttrain.rollout.episode import replay_references
from posttrain.train.mixture import TaskSampler, heldout_tasks, prompt_key
from posttrain.train.recipe_inputs import resolve_domains
from posttrain.train.sft import train_sft


def main() -> None:
    name, overrides = sys.argv[1], sys.argv[2:]
    cfg = load_config(None, overrides)
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    domains = resolve_domains(cfg)
    m = cfg.model
    spec = TinyModelSpec(m.hidden_size, m.num_layers, m.num_heads, m.intermediate_size)
    if m.max_positions is not None:
        spec = dataclasses.replace(spec, max_positions=m.max_positions)
    policy = load_policy(m.name, seed=cfg.seed, spec=spec)
    if m.max_positions is not None:
        policy.model.config.max_position_embeddings = m.max_positions
    tok = policy.tokenizer
    e = cfg.eval
    heldout = heldout_tasks(domains, e.tasks_per_domain, e.seed_offset, e.difficulties)
    exclude = {prompt_key(t) for t in heldout}
    c = cfg.sft
    levels = range(1, c.max_difficulty + 1)
    weights = [c.domain_weights.get(d.id, 1.0) for d in domains]
    start = time.perf_counter()
    train = TaskSampler(domains, "sft", levels, weights, exclude=exclude, seed=cfg.seed)
    val = TaskSampler(domains, "sft-val", levels, exclude=exclude, seed=cfg.seed)
    examples = replay_references(train.sample(c.num_examples), tok, get_domain)
    val_examples = replay_references(val.sample(c.val_examples), tok, get_domain)
    length = statistics.mean(len(e.prompt_ids) + len(e.completion_ids) for e in examples)
    print(name, f"data {time.perf_counter() - start:.1f} s; mean length {length:.1f}", flush=True)

    def log(step: int, values: dict[str, float]) -> None:
        shown = {k: round(v, 4) for k, v in values.items()}
        print(name, step, shown, f"{time.perf_counter() - start:.0f} s", flush=True)

    res = train_sft(policy.model, examples, val_examples, c, tok.pad_token_id, cfg.seed, log=log)
    print(name, "sft", res, flush=True)
    engine = HFEngine(policy.model, tok, seed=cfg.seed)
    window = int(getattr(policy.model.config, "max_position_embeddings", 0)) or None
    result = evaluate("sft", heldout, engine, tok, get_domain, cfg.max_new_tokens, window)
    cells: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for r in result.rollouts:
        cells[(r.domain, r.difficulty)].append(r.verdict.passed)
    for domain in sorted({d for d, _ in cells}):
        rates = [cells[(domain, k)] for k in range(1, 11)]
        print(name, f"{domain:24}", " ".join(f"{sum(v) / max(1, len(v)):.1f}" for v in rates))
    per_domain = {k: round(v.completed.rate, 2) for k, v in result.per_domain.items()}
    print(name, "RESULT", round(result.overall.rate, 3), per_domain, flush=True)


if __name__ == "__main__":
    main()
