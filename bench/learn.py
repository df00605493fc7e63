"""SmolLM2-135M-Instruct learns two-digit arithmetic on a CPU: our recipe against TRL's
GRPOTrainer + LoRA, with the same model, task, held-out set and wall-clock budget.

    OMP_NUM_THREADS=2 python bench/learn.py     # the defaults: about 95 minutes on 2 cores
    flags: --minutes 35 --sft-share 0.7 --eval-tasks 200 --threads 2 --arms ours,trl
           --trl-lr 1e-5 --model smollm2-135m --seed 0 --out-dir runs/learn --name NAME
           --set KEY=VALUE (repeatable: an override of our recipe)

The task is `num/add-multiply-v1` at difficulty 3: `Compute a + b.` or `Compute a * b.`
(even odds) with two-digit operands, and the instruction to reply with the integer
only. Both arms start from the same base weights, train for `--minutes` of wall clock
with `--threads` torch threads, and are scored on the same held-out tasks (greedy,
`max_new_tokens` = 64 tokens, the recipe's held-out seeds, disjoint from every
training prompt) by the same evaluation code (`posttrain.eval.evaluate`).

- ours: `recipes/smollm2-arith.yaml` (LoRA r = 16 on the seven projections) aimed at
  this task: SFT on references of difficulties 1..3 for `--sft-share` of the budget
  (the strict answer format and the arithmetic), then GRPO at difficulty 3 with the
  domain's strict reward (1 only when the whole reply is the right integer) for the
  rest, with DAPO dynamic sampling (`grpo.refill_rounds=2`) and no resumable saves or
  monitor evaluations inside the budget. The recipe's own `untrained` evaluation is the base model's score.
- trl: `trl.GRPOTrainer` with a peft `LoraConfig` of the same rank, alpha and target
  modules, on prompts of the same domain and difficulty (training seeds, held-out
  prompts removed); reward = the last integer of the reply equals the answer (the
  lenient rule TRL was first measured with); TRL's defaults otherwise (8 completions
  per prompt, batch 8, temperature 1, β = 0, the `dapo` loss), except a constant
  learning rate (`--trl-lr`; 1e-5 = TRL's full fine-tuning default 1e-6 times the
  10x that TRL's LoRA guide gives for LoRA), completions capped at 64 tokens, and no
  activation checkpointing (as ours). The callback stops it when the budget is spent;
  the adapters are then merged and the model evaluated like ours.

Scored per checkpoint (base, ours after SFT, ours final, TRL final): `correct` = the
last integer in the reply is the answer (lenient, the accuracy the comparison is on),
`format` = the reply is exactly one integer, `completed` = both. Paired exact McNemar
tests on `correct`: ours vs base, trl vs base, ours vs trl; `gain` = final - base.

Output: progress lines, a table, and as the last line one JSON object (also saved as
OUT_DIR/NAME/learn.json): `rates` (checkpoint → completed/format/correct, plus
`correct_by_op`), `tests`, `gains`, `training` (per arm: wall and CPU seconds, steps),
`peak_rss_gib` (per arm: the peak resident memory of this process and all its
descendants while that arm trained and was scored, `bench/peak_memory.py`'s
`TreePeak`; the second arm's includes what the first left resident), `settings` (both
arms'), `heldout_tasks`, `heldout_ids_sha256` (every checkpoint is checked to have
been scored on exactly these tasks, in order), `correct_per_task` (checkpoint → one
`0`/`1` character per held-out task, in order: pairs runs with the same held-out set),
`out_dir`, `wall_s`.

Not guaranteed: one seed per arm; the tests are paired over tasks, not over training
runs. A wall-clock budget depends on the machine's load: run nothing else beside it.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_trl, transfer beside this file

from peak_memory import TreePeak  # noqa: E402
from transfer import PrintReporter, comparison_doc, rate_doc  # noqa: E402

from posttrain.config import RunConfig, load_config  # noqa: E402
from posttrain.domains import get_domain  # noqa: E402
from posttrain.eval.evaluate import EvalResult, evaluate  # noqa: E402
from posttrain.eval.stats import paired_compare, rate  # noqa: E402
from posttrain.train.mixture import heldout_tasks, prompt_key  # noqa: E402
from posttrain.types import Task  # noqa: E402

DOMAIN = "num/add-multiply-v1"
DIFFICULTY = 3  # two-digit by two-digit
MAX_TOKENS = 64
RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "smollm2-arith.yaml"
CHECKPOINTS = ("base", "ours_sft", "ours", "trl")
COMPARISONS = (("base", "ours"), ("base", "trl"), ("trl", "ours"))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=35.0, help="training budget of each arm")
    p.add_argument("--sft-share", type=float, default=0.7,
                   help="ours: the part of the budget SFT gets; GRPO the rest")  # fmt: skip
    p.add_argument("--eval-tasks", type=int, default=200, help="held-out tasks")
    p.add_argument("--threads", type=int, default=2, help="torch threads, both arms")
    p.add_argument("--arms", default="ours,trl", help="comma-separated: ours, trl")
    p.add_argument("--trl-lr", type=float, default=1e-5, help="TRL's constant learning rate")
    p.add_argument("--model", default="smollm2-135m", help="a model name both arms start from")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", default="runs/learn")
    p.add_argument("--name", default=None, help="output directory name (default: UTC time)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="an override of our recipe (repeatable)")  # fmt: skip
    args = p.parse_args(argv)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if not arms or set(arms) - {"ours", "trl"}:
        p.error(f"--arms takes ours and/or trl, got {args.arms!r}")
    if not 0 < args.sft_share < 1:
        p.error(f"--sft-share must lie strictly between 0 and 1, got {args.sft_share}")
    args.arms = arms
    return args


def our_config(args: argparse.Namespace, root: Path) -> RunConfig:
    """The SmolLM2 recipe aimed at the bench's task, budget and held-out set."""
    sft_minutes = args.minutes * args.sft_share
    overrides = [
        f"domains=[{DOMAIN}]",
        f"model.name={args.model}",
        f"model.threads={args.threads}",
        f"max_new_tokens={MAX_TOKENS}",
        f"seed={args.seed}",
        f"sft.max_difficulty={DIFFICULTY}",
        f"sft.max_minutes={sft_minutes}",
        f"grpo.difficulties=[{DIFFICULTY}]",
        f"grpo.max_minutes={args.minutes - sft_minutes}",
        f"eval.difficulties=[{DIFFICULTY}]",
        f"eval.tasks_per_domain={args.eval_tasks}",
        "eval.every_steps=0",  # no monitor evaluations inside the budget
        "grpo.save_every=0",  # nor resumable saves (about 0.5 GB each)
        "grpo.refill_rounds=2",  # DAPO dynamic sampling: short replies make refills cheap
        f"out_dir={root}",
        "name=ours",
        *args.set,
    ]
    return load_config(str(RECIPE), overrides)


def run_ours(config: RunConfig) -> tuple[dict[str, EvalResult], dict[str, Any]]:
    from posttrain.train.recipe import run_recipe

    t0, c0 = time.perf_counter(), time.process_time()
    result = run_recipe(config, PrintReporter("ours"))
    stages = {s: {k: round(v, 4) for k, v in result.stages[s].items()}
              for s in ("sft", "grpo") if s in result.stages}  # fmt: skip
    training = {
        "train_s": round(sum(s.get("seconds", 0.0) for s in stages.values()), 1),
        "arm_wall_s": round(time.perf_counter() - t0, 1),  # evaluations included
        "arm_cpu_s": round(time.process_time() - c0, 1),
        "stages": stages,
        "run_dir": str(result.run_dir),
    }
    evals = {"base": result.evals["untrained"], "ours": result.evals["grpo"]}
    if "sft" in result.evals:
        evals["ours_sft"] = result.evals["sft"]
    return evals, training


def training_tasks(count: int, heldout: list[Task]) -> list[Task]:
    """`count` tasks of the bench's domain and difficulty from training seeds 0, 1, ...,
    skipping any prompt of the held-out set."""
    domain, banned = get_domain(DOMAIN), {prompt_key(t) for t in heldout}
    tasks: list[Task] = []
    seed = 0
    while len(tasks) < count:
        task = domain.generate(seed, DIFFICULTY)
        seed += 1
        if prompt_key(task) not in banned:
            tasks.append(task)
    return tasks


def run_trl(args: argparse.Namespace, config: RunConfig, heldout: list[Task],
            out: Path) -> tuple[EvalResult, dict[str, Any]]:  # fmt: skip
    """TRL's GRPOTrainer + LoRA for `args.minutes`, then the merged model evaluated."""
    from datasets import Dataset
    from peft import LoraConfig
    from train_trl import StepClock, _common_args, _rollout, prompts_identical
    from trl import GRPOConfig, GRPOTrainer

    from posttrain.engines.hf import HFEngine
    from posttrain.models.loading import context_window, load_policy

    torch.manual_seed(args.seed)
    policy = load_policy(args.model, seed=args.seed)
    tok = policy.tokenizer
    tasks = training_tasks(4000, heldout)
    if not prompts_identical(tok, tasks[:16]):
        raise RuntimeError("TRL's chat template tokenizes the prompts differently from ours")
    domain = get_domain(DOMAIN)

    def last_integer_reward(completions: list[Any], task_index: list[int],
                            completion_ids: list[list[int]], **_: Any) -> list[float]:  # fmt: skip
        rewards = []
        for completion, ids, i in zip(completions, completion_ids, task_index, strict=True):
            text = completion[0]["content"] if isinstance(completion, list) else str(completion)
            verdict = domain.verify(tasks[i], _rollout(tasks[i], text, ids), None)
            rewards.append(verdict.components["correct"])
        return rewards

    budget_s = args.minutes * 60

    class Budget(StepClock):
        def on_step_end(self, a: Any, state: Any, control: Any, **kw: Any) -> None:
            super().on_step_end(a, state, control, **kw)
            if self.marks[-1][0] - self.start[0] >= budget_s:
                control.should_training_stop = True

    lora = config.model.lora
    r = lora.r or 16
    peft_config = LoraConfig(r=r, lora_alpha=lora.alpha or 2 * r, lora_dropout=lora.dropout,
                             target_modules=list(lora.target_modules),
                             task_type="CAUSAL_LM")  # fmt: skip
    # TRL's defaults, written out so that the JSON records them; the LR held constant.
    trl_settings: dict[str, Any] = {
        "learning_rate": args.trl_lr,
        "lr_scheduler_type": "constant",
        "per_device_train_batch_size": 8,
        "num_generations": 8,
        "max_completion_length": MAX_TOKENS,
        "temperature": 1.0,
        "beta": 0.0,
        "loss_type": "dapo",
    }
    common = _common_args(str(out / "trl"), args.trl_lr, 100_000, 0.0, (0.9, 0.999))
    common["seed"] = args.seed
    grpo_args = GRPOConfig(**{**common, **trl_settings}, remove_unused_columns=False)
    settings = {**trl_settings, "gradient_checkpointing": common["gradient_checkpointing"],
                "lora": {"r": r, "alpha": peft_config.lora_alpha,
                         "targets": sorted(peft_config.target_modules)}}  # fmt: skip
    rows = {
        "prompt": [[{"role": m.role, "content": m.content} for m in t.prompt] for t in tasks],
        "task_index": list(range(len(tasks))),
    }
    clock = Budget()
    trainer = GRPOTrainer(model=policy.model, reward_funcs=last_integer_reward, args=grpo_args,
                          train_dataset=Dataset.from_dict(rows), processing_class=tok,
                          callbacks=[clock], peft_config=peft_config)  # fmt: skip
    t0, c0 = time.perf_counter(), time.process_time()
    trainer.train()
    train_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    model = trainer.model.merge_and_unload().eval()  # type: ignore[union-attr,operator]
    print(f"[trl] {len(clock.marks)} steps in {train_s:.0f} s", flush=True)
    engine = HFEngine(model, tok, seed=args.seed)
    result = evaluate("trl", heldout, engine, tok, get_domain, MAX_TOKENS,
                      max_context=context_window(model))  # fmt: skip
    print(f"[trl] eval: {result.overall} ({result.seconds:.0f} s)", flush=True)
    training = {"train_s": round(train_s, 1), "train_cpu_s": round(cpu_s, 1),
                "steps": len(clock.marks), "settings": settings}  # fmt: skip
    return result, training


def lenient(result: EvalResult) -> dict[str, bool]:
    """Task id -> the reply's last integer is the answer."""
    return {r.task_id: r.verdict.components.get("correct", 0.0) >= 1.0 for r in result.rollouts}


def scores(result: EvalResult, ops: dict[str, str]) -> dict[str, Any]:
    rollouts = result.rollouts
    n = len(rollouts)
    correct = lenient(result)
    by_op = {}
    for op in sorted(set(ops.values())):
        ids = [i for i, o in ops.items() if o == op]
        by_op[op] = rate_doc(rate(sum(correct[i] for i in ids), len(ids)))
    return {
        "completed": rate_doc(result.overall),
        "format": rate_doc(rate(sum(r.verdict.components.get("format", 0.0) >= 1.0
                                    for r in rollouts), n)),
        "correct": rate_doc(rate(sum(correct.values()), n)),
        "correct_by_op": by_op,
    }  # fmt: skip


def figures(evals: dict[str, EvalResult], heldout: list[Task]) -> dict[str, Any]:
    order = [t.id for t in heldout]
    for name, e in evals.items():
        if [r.task_id for r in e.rollouts] != order:
            raise RuntimeError(f"{name} was scored on other tasks than the held-out set")
    ops = {t.id: str(t.meta["op"]) for t in heldout}
    rates = {name: scores(e, ops) for name, e in evals.items()}
    tests, gains = {}, {}
    for a, b in COMPARISONS:
        if a in evals and b in evals:
            x, y = lenient(evals[a]), lenient(evals[b])
            tests[f"{b}_vs_{a}"] = comparison_doc(
                paired_compare([x[i] for i in order], [y[i] for i in order])
            )
    for name in evals:
        if name != "base" and "base" in evals:
            gains[name] = round(
                rates[name]["correct"]["rate"] - rates["base"]["correct"]["rate"], 4
            )
    digest = hashlib.sha256("\n".join(order).encode()).hexdigest()
    outcomes = {name: lenient(e) for name, e in evals.items()}
    correct = {name: "".join("1" if got[i] else "0" for i in order)
               for name, got in outcomes.items()}  # fmt: skip
    return {"rates": rates, "tests": tests, "gains": gains, "heldout_ids_sha256": digest,
            "correct_per_task": correct}  # fmt: skip


def print_table(doc: dict[str, Any]) -> None:
    print()
    print(f"{'checkpoint':10} {'correct (lenient)':>28} {'format':>8} {'completed':>10} "
          f"{'correct +':>10} {'correct *':>10}")  # fmt: skip
    for name, r in doc["rates"].items():
        c = r["correct"]
        ops = r["correct_by_op"]
        print(
            f"{name:10} {c['rate']:.3f} [{c['low']:.3f}, {c['high']:.3f}] n={c['n']:<5} "
            f"{r['format']['rate']:8.3f} {r['completed']['rate']:10.3f} "
            f"{ops.get('+', {}).get('rate', 0):10.3f} {ops.get('*', {}).get('rate', 0):10.3f}"
        )
    print()
    for key, t in doc["tests"].items():
        print(f"{key:14} {t['a_rate']:.3f} -> {t['b_rate']:.3f}  only a/b {t['only_a']}/"
              f"{t['only_b']}  p = {t['p']:.3g}")  # fmt: skip
    print()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.perf_counter()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    torch.set_num_threads(args.threads)
    root = Path(args.out_dir) / (args.name or datetime.now(UTC).strftime("%Y%m%d-%H%M%S"))
    root.mkdir(parents=True, exist_ok=True)
    config = our_config(args, root)
    e = config.eval
    heldout = heldout_tasks([get_domain(DOMAIN)], e.tasks_per_domain, e.seed_offset,
                            e.difficulties)  # fmt: skip
    print(
        f"task {DOMAIN} at d{DIFFICULTY}; {len(heldout)} held-out tasks; "
        f"{args.minutes} min per arm, {args.threads} threads; output {root}",
        flush=True,
    )
    evals: dict[str, EvalResult] = {}
    training: dict[str, Any] = {}
    peaks: dict[str, float] = {}
    if "ours" in args.arms:
        with TreePeak() as peak:
            ours, training["ours"] = run_ours(config)
        evals.update(ours)
        peaks["ours"] = peak.gib
    if "trl" in args.arms:
        gc.collect()  # what ours left behind should not count as TRL's
        with TreePeak() as peak:
            evals["trl"], training["trl"] = run_trl(args, config, heldout, root)
        peaks["trl"] = peak.gib
    if "base" not in evals:  # TRL alone: score the base model too, on the same tasks
        from posttrain.engines.hf import HFEngine
        from posttrain.models.loading import context_window, load_policy

        policy = load_policy(args.model, seed=args.seed)
        evals["base"] = evaluate("base", heldout, HFEngine(policy.model, policy.tokenizer,
                                 seed=args.seed), policy.tokenizer, get_domain, MAX_TOKENS,
                                 max_context=context_window(policy.model))  # fmt: skip
    evals = {name: evals[name] for name in CHECKPOINTS if name in evals}
    doc = {
        "task": {"domain": DOMAIN, "difficulty": DIFFICULTY, "max_new_tokens": MAX_TOKENS},
        "heldout_tasks": len(heldout),
        **figures(evals, heldout),
        "training": training,
        "peak_rss_gib": peaks,
        "settings": {
            "minutes": args.minutes,
            "sft_share": args.sft_share,
            "threads": args.threads,
            "model": args.model,
            "seed": args.seed,
            "ours": config.model_dump(mode="json", include={"model", "sft", "grpo"}),
            "extra_overrides": args.set,
        },  # fmt: skip
        "out_dir": str(root),
        "wall_s": round(time.perf_counter() - started, 1),
    }
    print_table(doc)
    line = json.dumps(doc)
    (root / "learn.json").write_text(line + "\n", encoding="utf-8")
    print(line, flush=True)
    return doc


if __name__ == "__main__":
    main()
