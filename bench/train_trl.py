"""The TRL side of `bench/train.py`: one `GRPOTrainer` and one `SFTTrainer` run, timed.

    from train_trl import GRPOBench, trl_grpo
    side = trl_grpo(model, tokenizer, tasks, domain, GRPOBench(...), out_dir)
    side.step_s, side.tokens_per_s

Also holds what both sides share: the settings (`GRPOBench`, `SFTBench`), the
reward domain (`GradedAddition`), and the timed result (`SideResult`, built by
`side_result` from step-end clock marks and the non-pad tokens of each step). TRL
is configured from the same settings as ours: one optimizer step per generation,
fp32 on CPU, no activation checkpointing (TRL's default is on), no logging, saving
or evaluation.

Not guaranteed: TRL's internals (its per-step metric gathering, fused lm-head
forward) change between versions; the mapping of our settings onto TRL's is the
one TRL 1.16 documents, checked by hand, not by a parity test.
"""

from __future__ import annotations

import difflib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from datasets import Dataset
from transformers import PreTrainedModel, PrinterCallback, TrainerCallback
from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

from posttrain.domains import get_domain
from posttrain.domains.base import Domain, Session
from posttrain.rollout.episode import prompt_ids
from posttrain.types import Reference, Rollout, Task, Turn, Verdict


@dataclass(frozen=True)
class GRPOBench:
    """One GRPO comparison; every field applies to both sides."""

    model: str  # "tiny" or "smollm2-135m"
    prompts: int  # tasks per step
    group: int  # samples per task (TRL num_generations)
    max_tokens: int  # completion budget (TRL max_completion_length)
    lr: float
    steps: int  # timed steps, after one warm-up step
    threads: int
    beta: float = 0.0  # KL coefficient (ours kl_coef)
    epochs: int = 1  # optimizer passes per generation (TRL num_iterations)
    clip_eps: float = 0.2
    clip_eps_high: float = 0.28
    weight_decay: float = 0.01  # torch AdamW's default, which our GRPO uses
    betas: tuple[float, float] = (0.9, 0.99)

    @property
    def batch(self) -> int:
        return self.prompts * self.group


@dataclass(frozen=True)
class SFTBench:
    """One SFT comparison; every field applies to both sides."""

    model: str
    batch: int  # sequences per optimizer step
    micro_batches: int  # gradient accumulation (TRL per-device batch = batch / this)
    lr: float
    warmup_steps: int
    steps: int
    threads: int
    examples: int  # size of the demonstration set both sides draw batches from
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.95)


Mark = tuple[float, float]  # (wall-clock seconds, this process's CPU seconds)


def clock() -> Mark:
    return time.perf_counter(), time.process_time()


@dataclass
class SideResult:
    """Timed steps of one side (warm-up dropped), in wall and CPU seconds and non-pad tokens."""

    steps_s: list[float]
    steps_cpu_s: list[float]  # CPU time of this process: less sensitive to other jobs
    steps_tokens: list[int]
    steps_rollout_s: list[float] = field(default_factory=list)  # GRPO: the rollout phase
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def step_s(self) -> float:
        return statistics.median(self.steps_s)

    @property
    def cpu_step_s(self) -> float:
        return statistics.median(self.steps_cpu_s)

    @property
    def tokens_per_s(self) -> float:
        return sum(self.steps_tokens) / sum(self.steps_s)

    @property
    def tokens_per_step(self) -> float:
        return sum(self.steps_tokens) / len(self.steps_tokens)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step_s": self.step_s,
            "cpu_step_s": self.cpu_step_s,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_step": self.tokens_per_step,
        }
        if self.steps_rollout_s:
            out["rollout_s"] = statistics.median(self.steps_rollout_s)
            out["update_s"] = out["step_s"] - out["rollout_s"]  # the rest of a median step
        out = {k: round(v, 4) for k, v in out.items()}
        out["steps_s"] = [round(x, 3) for x in self.steps_s]
        out["steps_cpu_s"] = [round(x, 3) for x in self.steps_cpu_s]
        out["steps_tokens"] = self.steps_tokens
        return out | self.extra


def side_result(
    start: Mark, marks: Sequence[Mark], tokens: Sequence[int], rollout_s: Sequence[float] = ()
) -> SideResult:
    """From the clock at training start and at each step's end, each step's tokens
    and (GRPO) rollout seconds: the first step is the warm-up and is dropped."""
    if len(marks) < 2 or len(tokens) != len(marks):
        raise RuntimeError(f"expected one token count per step, got {len(tokens)} for {len(marks)}")
    pairs = list(zip(marks[:-1], marks[1:], strict=True))
    return SideResult(
        steps_s=[b[0] - a[0] for a, b in pairs],
        steps_cpu_s=[b[1] - a[1] for a, b in pairs],
        steps_tokens=list(tokens[1:]),
        steps_rollout_s=list(rollout_s[1:]),
        extra={"warmup_s": round(marks[0][0] - start[0], 3)},
    )


def merge(results: Sequence[SideResult]) -> SideResult:
    """One side's rounds pooled: every timed step counts once; extras become per-round lists."""
    extra: dict[str, Any] = {}
    for r in results:
        for key, value in r.extra.items():
            extra.setdefault(key, []).append(value)
    return SideResult(
        steps_s=[x for r in results for x in r.steps_s],
        steps_cpu_s=[x for r in results for x in r.steps_cpu_s],
        steps_tokens=[x for r in results for x in r.steps_tokens],
        steps_rollout_s=[x for r in results for x in r.steps_rollout_s],
        extra=extra,
    )


class StepClock(TrainerCallback):
    """Clock marks at training start and at each optimizer step's end, with the torch
    thread count then and, when `read_total` is set, a running token total read then."""

    def __init__(self) -> None:
        self.start: Mark = (0.0, 0.0)
        self.marks: list[Mark] = []
        self.threads: list[int] = []
        self.read_total: Callable[[], int] | None = None
        self.totals: list[int] = []

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.start = clock()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.marks.append(clock())
        self.threads.append(torch.get_num_threads())
        if self.read_total is not None:
            self.totals.append(self.read_total())


def _common_args(out_dir: str, lr: float, steps: int, weight_decay: float, betas: Any) -> dict:
    """Trainer arguments both TRL runs share: fp32 CPU, AdamW as ours, nothing written."""
    return {
        "output_dir": out_dir,
        "learning_rate": lr,
        "max_steps": steps + 1,  # the first is the warm-up
        "optim": "adamw_torch",  # torch.optim.AdamW, as ours (not the fused variant)
        "adam_beta1": betas[0],
        "adam_beta2": betas[1],
        "weight_decay": weight_decay,
        "max_grad_norm": 1.0,
        "use_cpu": True,
        "bf16": False,
        "fp16": False,
        "report_to": [],
        "logging_strategy": "no",
        "save_strategy": "no",
        "eval_strategy": "no",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "seed": 0,
        # TRL defaults to recomputing activations in backward; ours never does.
        "gradient_checkpointing": False,
    }


def trl_grpo(
    model: PreTrainedModel,
    tokenizer: Any,
    tasks: Sequence[Task],
    domain: Domain,
    s: GRPOBench,
    out_dir: str,
) -> SideResult:
    """`s.steps + 1` GRPOTrainer steps on `tasks` in order (`s.prompts` per step), the
    reward being `domain.verify` on each completion."""
    prompt_lengths = [len(prompt_ids(tokenizer, t)) for t in tasks]
    step_tokens: list[int] = []

    def verifier_reward(
        completions: list[Any], completion_ids: list[list[int]], task_index: list[int], **_: Any
    ) -> list[float | None]:
        rewards: list[float | None] = []
        for completion, ids, i in zip(completions, completion_ids, task_index, strict=True):
            text = completion[0]["content"] if isinstance(completion, list) else str(completion)
            rewards.append(domain.verify(tasks[i], _rollout(tasks[i], text, ids), None).reward)
        pairs = zip(completion_ids, task_index, strict=True)
        step_tokens.append(sum(prompt_lengths[i] + len(ids) for ids, i in pairs))
        return rewards

    rows = {
        "prompt": [[{"role": m.role, "content": m.content} for m in t.prompt] for t in tasks],
        "task_index": list(range(len(tasks))),
    }
    args = GRPOConfig(
        **_common_args(out_dir, s.lr, s.steps, s.weight_decay, s.betas),
        per_device_train_batch_size=s.batch,
        gradient_accumulation_steps=1,
        num_generations=s.group,
        max_completion_length=s.max_tokens,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        beta=s.beta,
        num_iterations=s.epochs,
        epsilon=s.clip_eps,
        epsilon_high=s.clip_eps_high,
        loss_type="dapo",  # token mean over the batch's completion tokens: our "grpo"/"token"
        scale_rewards="group",
        shuffle_dataset=False,  # tasks in the same order as ours
        lr_scheduler_type="constant",
        warmup_steps=0,
        remove_unused_columns=False,
    )
    timer = StepClock()
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=verifier_reward,
        args=args,
        train_dataset=Dataset.from_dict(rows),
        processing_class=tokenizer,
        callbacks=[timer],
    )
    trainer.remove_callback(PrinterCallback)  # TRL's end-of-run metrics print
    rollout_s: list[float] = []
    generate_and_score = trainer._generate_and_score_completions

    def timed(*a: Any, **kw: Any) -> Any:  # the rollout phase: generate, reward, advantages
        t0 = time.perf_counter()
        out = generate_and_score(*a, **kw)
        rollout_s.append(time.perf_counter() - t0)
        return out

    trainer._generate_and_score_completions = timed  # type: ignore[method-assign]
    trainer.train()
    result = side_result(timer.start, timer.marks, step_tokens, rollout_s)
    result.extra["threads_seen"] = sorted(set(timer.threads))
    return result


def trl_sft(
    model: PreTrainedModel, tokenizer: Any, examples: Sequence[Rollout], s: SFTBench, out_dir: str
) -> SideResult:
    """`s.steps + 1` SFTTrainer steps on pre-tokenized `examples`, loss on the tokens
    our loss mask marks (TRL `completion_mask`), padded per micro-batch (no packing)."""
    rows = {
        "input_ids": [r.prompt_ids + r.completion_ids for r in examples],
        "completion_mask": [[0] * len(r.prompt_ids) + list(r.loss_mask) for r in examples],
    }
    args = SFTConfig(
        **_common_args(out_dir, s.lr, s.steps, s.weight_decay, s.betas),
        per_device_train_batch_size=s.batch // s.micro_batches,
        gradient_accumulation_steps=s.micro_batches,
        lr_scheduler_type="linear",
        warmup_steps=s.warmup_steps,
        max_length=None,
        packing=False,
        padding_free=False,
        completion_only_loss=True,
    )
    timer = StepClock()
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict(rows),
        processing_class=tokenizer,
        callbacks=[timer],
    )
    trainer.remove_callback(PrinterCallback)
    # TRL adds each micro-batch's attention-mask sum (its non-pad tokens) to this total.
    timer.read_total = lambda: int(trainer._total_train_tokens)
    collate, positions = trainer.data_collator, list[int]()

    def counting_collate(rows: list[dict[str, Any]]) -> dict[str, Any]:
        batch = collate(rows)
        positions.append(batch["input_ids"].numel())  # padded positions the model computes
        return batch

    trainer.data_collator = counting_collate
    trainer.train()
    per_step = [b - a for a, b in zip([0, *timer.totals[:-1]], timer.totals, strict=True)]
    result = side_result(timer.start, timer.marks, per_step)
    micro = positions[s.micro_batches : (s.steps + 1) * s.micro_batches]  # timed steps
    result.extra["padded_positions_per_step"] = round(sum(micro) / s.steps, 1)
    result.extra["threads_seen"] = sorted(set(timer.threads))
    return result


class GradedAddition:
    """`arith/addition-v1` with a graded reward: 1 for the correct sum, else the
    difflib similarity of the stripped final text to the sum's digits (in [0, 1)).
    Deterministic and verifiable; graded so that groups of an untrained model differ."""

    def __init__(self) -> None:
        self.base = get_domain("arith/addition-v1")
        self.id = self.base.id
        self.axes = self.base.axes
        self.max_turns = 1

    def generate(self, seed: int, difficulty: int) -> Task:
        return self.base.generate(seed, difficulty)

    def reference(self, task: Task) -> Reference:
        return self.base.reference(task)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        verdict = self.base.verify(task, rollout, session)
        if verdict.passed:
            return verdict
        similarity = difflib.SequenceMatcher(None, rollout.final_text.strip(), str(task.answer))
        return Verdict(
            min(similarity.ratio(), 0.99), False, verdict.reason, dict(verdict.components)
        )


def prompts_identical(tokenizer: Any, tasks: Sequence[Task]) -> bool:
    """Whether TRL's chat-template tokenization of each prompt equals ours."""
    for task in tasks:
        messages = [{"role": m.role, "content": m.content} for m in task.prompt]
        theirs = tokenizer.apply_chat_template(
            [messages], add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"][0]
        if list(theirs) != prompt_ids(tokenizer, task):
            return False
    return True


def _rollout(task: Task, text: str, ids: list[int]) -> Rollout:
    """A one-turn rollout around a TRL completion, so the domain's verifier can read it."""
    return Rollout(
        id="trl",
        task_id=task.id,
        domain=task.domain,
        difficulty=task.difficulty,
        prompt_ids=[],
        completion_ids=list(ids),
        loss_mask=[1] * len(ids),
        logprobs=[0.0] * len(ids),
        messages=list(task.prompt),
        turns=[Turn(text=text, token_ids=list(ids), logprobs=[], finish_reason="stop")],
        verdict=Verdict(0.0, False, "not verified"),
    )
