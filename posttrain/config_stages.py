"""The training stages' configs: `sft`, `dpo` and `grpo` of the run config
(`posttrain.config.RunConfig`, which re-exports them)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from posttrain.config_base import _Strict, check_levels


class SFTConfig(_Strict):
    enabled: bool = Field(True, description="run this stage")
    num_examples: int = Field(4000, ge=1, description="size of the fixed demonstration set")
    max_difficulty: int = Field(10, ge=1, le=10, description="demonstrations come from 1..this")
    domain_weights: dict[str, float] = Field(
        default_factory=dict, description="share of demonstrations per domain id (default 1)"
    )
    batch_size: int = Field(32, ge=1, description="sequences per optimizer step")
    lr: float = Field(1e-3, gt=0, description="peak AdamW learning rate")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay")
    warmup_steps: int = Field(30, ge=0, description="linear warm-up steps")
    max_steps: int = Field(2000, ge=1, description="optimizer steps; the LR decays over them")
    max_minutes: float = Field(10.0, gt=0, description="wall-clock cap (a safety stop)")
    eval_every: int = Field(100, ge=1, description="steps between validation-loss checks")
    patience: int = Field(3, ge=1, description="stop after this many checks without improvement")
    val_examples: int = Field(256, ge=1, description="held-out demonstrations for the stop rule")
    micro_batches: int = Field(
        4, ge=1, description="gradient accumulation: each batch runs as this many micro-batches"
    )
    data_file: str | None = Field(
        None,
        description="JSONL/Parquet of {messages: [...]} to train on instead of references "
        "(a run stores it absolute, with its size and sha256)",
    )
    save_every: int = Field(
        0, ge=0, description="steps between resumable full-state saves (0 = none)"
    )
    pack_tokens: int | None = Field(
        None,
        ge=16,
        description="pack each micro-batch's sequences into rows of at most this many "
        "tokens, attention kept within each sequence (None = one padded row each)",
    )


class DPOConfig(_Strict):
    enabled: bool = Field(True, description="run this stage")
    num_tasks: int = Field(384, ge=1, description="training tasks to mine pairs from")
    val_tasks: int = Field(512, ge=1, description="held-out tasks for preference accuracy")
    samples_per_task: int = Field(4, ge=2, description="answers sampled per task to mine pairs")
    temperature: float = Field(
        0.7, gt=0, description="sampling temperature for mining (the pairs' rejected answers)"
    )
    beta: float = Field(0.1, gt=0, description="DPO inverse temperature")
    loss: Literal["sigmoid", "ipo", "robust"] = Field(
        "sigmoid", description="DPO (sigmoid), IPO, or rDPO (robust to label noise)"
    )
    label_smoothing: float = Field(
        0.0, ge=0, lt=0.5, description="assumed label-flip rate (cDPO with sigmoid, rDPO)"
    )
    reference_free: bool = Field(False, description="drop the reference model (logprobs 0)")
    positive_lambda: float = Field(
        0.0, ge=0, description="DPO-Positive: penalty weight on chosen answers below the reference"
    )
    data_file: str | None = Field(
        None,
        description="JSONL/Parquet of {prompt, chosen, rejected} instead of mined pairs "
        "(a run stores it absolute, with its size and sha256)",
    )
    sft_weight: float = Field(1.0, ge=0, description="NLL on chosen answers added to the loss")
    lr: float = Field(5e-5, gt=0, description="AdamW learning rate")
    batch_size: int = Field(32, ge=1, description="pairs per optimizer step")
    micro_batch_tokens: int | None = Field(
        4096,
        ge=2,
        description="forward/backward passes of at most this many padded tokens (chosen and "
        "rejected rows), gradients accumulated over the batch (None = the whole batch at once)",
    )
    epochs: int = Field(4, ge=1, description="passes over the mined pairs")
    max_minutes: float = Field(1.5, gt=0, description="wall-clock cap for the stage")

    @model_validator(mode="after")
    def _positive(self) -> DPOConfig:
        clash = [
            *(["dpo.reference_free=true"] if self.reference_free else []),
            *(["dpo.loss=ipo"] if self.loss == "ipo" else []),
            *([f"dpo.label_smoothing={self.label_smoothing}"] if self.label_smoothing else []),
        ]
        if self.loss == "ipo" and self.label_smoothing:
            raise ValueError(
                f"dpo.label_smoothing={self.label_smoothing} is for the sigmoid and robust "
                "losses; dpo.loss=ipo has none"
            )
        if self.positive_lambda > 0 and clash:
            raise ValueError(
                f"dpo.positive_lambda={self.positive_lambda} (DPOP) needs a reference, the "
                f"sigmoid or robust loss and no label smoothing, got {', '.join(clash)}"
            )
        return self


class GRPOConfig(_Strict):
    enabled: bool = Field(True, description="run this stage")
    steps: int = Field(3000, ge=1, description="policy updates (max_minutes may stop it first)")
    batch_size: int = Field(128, ge=1, description="rollouts per step (prompts × group_size)")
    group_size: int = Field(8, ge=2, description="samples per prompt")
    lr: float = Field(3e-5, gt=0, description="AdamW learning rate")
    warmup_steps: int = Field(
        0, ge=0, description="linear warm-up of the learning rate over the first steps (0: none)"
    )
    # Below 1e-5 the engines sample greedily (`SamplingParams.greedy`) and report logprobs
    # at temperature 1, while the trainer's forward would divide by this: the two disagree.
    temperature: float = Field(0.7, ge=1e-5, description="sampling temperature")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling")
    clip_eps: float = Field(0.2, gt=0, description="PPO clip range (low side)")
    clip_eps_high: float = Field(0.28, gt=0, description="PPO clip range (high side, DAPO)")
    kl_coef: float = Field(0.0, ge=0, description="k3 KL penalty to the stage's start policy")
    scale_rewards: bool = Field(True, description="divide advantages by the group std")
    aggregation: Literal["token", "sequence"] = Field(
        "token", description="loss averaging (grpo, rloo, reinforce_pp; the others fix it)"
    )
    loss: Literal["grpo", "dr_grpo", "dapo", "rloo", "gspo", "reinforce_pp"] = Field(
        "grpo",
        description="grpo: group-normalized advantages, `aggregation`; dr_grpo: unscaled, "
        "sum / (B × max_tokens); dapo: token mean; rloo: leave-one-out baseline; gspo: "
        "sequence-level ratio and mean (set clip_eps ~3e-4); reinforce_pp: batch-normalized",
    )
    tis_cap: float | None = Field(
        None,
        gt=0,
        description="truncated importance sampling: weight tokens by min(π_train/π_rollout, "
        "this) against the rollout engine's logprobs (None = off)",
    )
    adaptive_difficulty: bool = Field(
        True, description="draw (domain, difficulty) cells by their recent p(1-p)"
    )
    adaptive_floor: float = Field(
        0.01,
        gt=0,
        le=1,
        description="the least weight of a cell under adaptive_difficulty (cells always or "
        "never solved; they are still drawn now and then to keep their pass rate current); "
        "adaptive_cost scales it with the cell's length too",
    )
    adaptive_cost: bool = Field(
        True,
        description="under adaptive_difficulty, also divide a cell's weight by its episodes' "
        "mean length in tokens (signal per token sampled: long episodes set a step's time)",
    )
    ramp_from: int | None = Field(
        None,
        ge=1,
        le=10,
        description="length curriculum: draw from a 3-level window whose top rises from "
        "this difficulty to 10 by 80% of the stage (steps or minutes)",
    )
    difficulties: list[int] = Field(
        default_factory=lambda: list(range(1, 11)),
        description="GRPO's tasks are drawn at these difficulties (e.g. [8, 9, 10])",
    )
    refill_rounds: int = Field(
        2,
        ge=0,
        description="DAPO dynamic sampling: up to this many extra draws per step to replace "
        "groups whose rewards are all equal (0 = off)",
    )
    overlong_filter: bool = Field(
        False, description="DAPO: rollouts cut by the token budget are left out of the loss"
    )
    guidance: bool = Field(
        False,
        description="off-policy guidance (LUFFY): in a group whose samples all failed, the "
        "task's verified reference replaces one sample (an unscored one first), so the group "
        "has a gradient",
    )
    reward_component: str | None = Field(
        None,
        description="advantages from this verdict component (in [0, 1]) where a verdict has "
        "it, else the reward: dense shaping, e.g. addition's `digits` (checked at start-up "
        "against the domains' verdicts); the curriculum, the logs and evaluation keep the reward",
    )
    epochs: int = Field(1, ge=1, description="optimizer passes over each batch")
    minibatch_size: int = Field(64, ge=1, description="rollouts per optimizer step")
    micro_batch_tokens: int | None = Field(
        4096,
        ge=1,
        description="forward/backward passes of at most this many padded tokens, gradients "
        "accumulated over the minibatch (None = the whole minibatch at once)",
    )
    share_prompts: bool = Field(
        True,
        description="training forward: run each group's shared prompt once and its "
        "completions on top of its K/V (False: every rollout's prompt again)",
    )
    max_minutes: float = Field(5.0, gt=0, description="wall-clock cap for the stage")
    save_every: int = Field(
        0, ge=0, description="steps between resumable full-state saves (0 = none)"
    )

    @model_validator(mode="after")
    def _levels(self) -> GRPOConfig:
        check_levels(self.difficulties, "grpo.difficulties")
        return self
