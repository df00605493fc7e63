"""The recipe's stages: SFT → DPO → GRPO on one domain mix, held-out evaluation after
every stage, and a control arm, all written to one run directory (`train/recipe.py`
starts it).

Stages and what each trains on:
- SFT: a fixed set of demonstrations (domain references replayed through the
  episode loop) from difficulties 1..`sft.max_difficulty`; stops on a validation
  plateau.
- DPO: pairs mined from the SFT policy's own samples on tasks of every difficulty.
- GRPO: verifier rewards on fresh tasks of every difficulty.
- Control: the SFT checkpoint trained further on the same demonstrations for the
  seconds DPO + GRPO trained (pair mining and rollouts in, evaluations and saves
  out), so "more SFT" and "DPO + GRPO" get equal time (`train/control.py`).
Evaluation: the same held-out tasks (difficulties 1..10) for every checkpoint, greedy,
checkpoints paired by an exact McNemar test.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from posttrain.config import ConfigError, RunConfig
from posttrain.domains import get_domain
from posttrain.domains.base import Domain
from posttrain.engines.hf import HFEngine
from posttrain.eval.evaluate import EvalResult, compare, evaluate
from posttrain.eval.results import (
    eval_result_from_document,
    load_results,
    results_document,
    save_results,
)
from posttrain.eval.stats import PairedComparison
from posttrain.models.loading import Policy, context_window
from posttrain.ranks import any_rank, is_main
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.store import MetricsLogger, RunDir, TraceStore, degraded_metrics, is_complete
from posttrain.store.atomic import remove_directory
from posttrain.train import recipe_inputs as inputs
from posttrain.train.checkpoint import (
    base_model_record,
    load_checkpoint,
    load_run_policy,
    save_checkpoint,
)
from posttrain.train.control import ControlArm, ControlOutcome, TreatmentClock, control_cap_s
from posttrain.train.data_files import preference_pairs, sft_examples
from posttrain.train.distributed import (
    DistributedError,
    PolicyReplica,
    rank_seed,
)
from posttrain.train.dpo import PreferencePair, mine_pairs, train_dpo
from posttrain.train.grpo import train_grpo
from posttrain.train.mixture import heldout_tasks, prompt_key
from posttrain.train.monitor import TrainingMonitor
from posttrain.train.preemption import Preempted, StopSignals
from posttrain.train.reporter import Reporter
from posttrain.train.resume import (
    GRPO_STATE,
    MID_STAGE_STATES,
    SFT_STATE,
    GRPOState,
    load_grpo_state,
    load_sft_state,
    save_grpo_state,
    save_sft_state,
    unlogged_rows,
)
from posttrain.train.sft import SFTLoop, sft_optimizer, train_sft
from posttrain.types import Rollout, Task

# Pairs (baseline, candidate) compared on the held-out tasks.
COMPARISONS = [
    ("untrained", "sft"),
    ("sft", "dpo"),
    ("sft", "grpo"),
    ("untrained", "grpo"),  # the start checkpoint, when the run begins from one
    ("control", "grpo"),
]


@dataclass
class RecipeResult:
    run_dir: Path
    evals: dict[str, EvalResult] = field(default_factory=dict)
    comparisons: dict[str, PairedComparison] = field(default_factory=dict)
    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    degraded_traces: dict[str, int] = field(default_factory=dict)  # TraceStore.degraded


class Pipeline:
    def __init__(
        self,
        config: RunConfig,
        domains: list[Domain],
        run: RunDir,
        metrics: MetricsLogger,
        traces: TraceStore,
        report: Reporter,
        result: RecipeResult,
        mixture: list[float] | None = None,
    ) -> None:
        self.cfg, self.domains, self.run_dir = config, domains, run
        self.mixture = mixture  # DPO and GRPO task weights, one per domain
        self.metrics, self.traces, self.report, self.result = metrics, traces, report, result
        self.policy: Policy = load_run_policy(config.model, config.seed)  # LoRA: adapters only
        # The stages train `replica.trained`; the engine, evaluation and checkpoints use
        # `policy.model`, the same weights (synced after each update under FSDP).
        try:
            self.replica = PolicyReplica(self.policy.model, config.train)
        except DistributedError as exc:
            raise ConfigError(f"train.strategy: {exc}") from None
        self.tok = self.policy.tokenizer
        self.pad_id: int = self.tok.pad_token_id  # type: ignore[attr-defined]
        self.engine = HFEngine(self.policy.model, self.tok, seed=rank_seed(config.seed))
        self.max_context = context_window(self.policy.model)
        inputs.check_window(config.max_new_tokens, self.max_context)
        x = config.context
        self.over_long = OverLongPolicy(x.over_long, x.retriever, x.order, x.chunk_tokens)
        # Users' data files are read now: a malformed row fails the run at start-up.
        s, d = config.sft, config.dpo
        self.sft_file = sft_examples(s.data_file, self.tok, self.max_context) if (
            s.enabled and s.data_file) else None  # fmt: skip
        self.dpo_file = preference_pairs(d.data_file, self.tok, self.max_context) if (
            d.enabled and d.data_file) else None  # fmt: skip
        e = config.eval
        self.heldout = heldout_tasks(domains, e.tasks_per_domain, e.seed_offset, e.difficulties)
        self.exclude = {prompt_key(t) for t in self.heldout}
        self.monitor = TrainingMonitor(config, run, self.heldout, metrics, report.warn)
        self.resuming = False  # finished stages and evaluations are loaded, not redone
        # DPO's and GRPO's training seconds so far, which the control arm trains up to.
        self.clock = TreatmentClock()
        self.stops = StopSignals()  # SIGTERM / SIGUSR1 latched (installed by run_recipe)

    def run(self) -> None:
        cfg = self.cfg
        self.evaluate("untrained")
        control: ControlArm | None = None
        if cfg.sft.enabled:
            if self.done("sft"):
                final_lr = self.restore("sft").get("final_lr", cfg.sft.lr)
                needs_control = cfg.control.enabled and not self.done("control")
                examples, val = self.sft_data() if needs_control else ([], [])
            else:
                examples, val = self.sft_data()
                final_lr = self.stage_sft(examples, val)
            if (cfg.control.enabled and (cfg.dpo.enabled or cfg.grpo.enabled)
                    and not self.done("control") and is_main()):  # fmt: skip
                control = ControlArm.start(
                    self.run_dir.checkpoint_path("sft"),
                    self.run_dir.checkpoint_path("control"),
                    examples,
                    val,
                    cfg.sft,
                    final_lr,
                    cfg.seed,
                    cfg.model.threads,
                    self.clock,
                    control_cap_s(cfg),
                )
        try:
            for stage, train in (("dpo", self.stage_dpo), ("grpo", self.stage_grpo)):
                if not getattr(cfg, stage).enabled:
                    continue
                if self.done(stage):
                    self.restore(stage)
                    self.clock.hold(self.treatment_seconds())
                else:
                    train()
        except BaseException:
            if control is not None:  # no checkpoint: a resume starts a fresh control arm
                control.cancel()
            raise
        outcome = None
        if control is not None:
            try:  # rank 0 alone waits here: its own signal ends the wait (no collective)
                outcome = control.stop(self.treatment_seconds(), abort=self.signalled)
            except RuntimeError:  # the child killed by the signal too, or given up on
                if not self.signalled():
                    raise
        if self.stops.poll():  # every rank, before the collective below
            raise self.stops.preempted("the control arm's end", None)
        # Rank 0 ran the arm; every rank evaluates its checkpoint (after this collective,
        # which rank 0 reaches once the checkpoint is saved).
        if any_rank(outcome is not None):
            self.stage_control(outcome)
        elif self.done("control"):
            self.restore("control")
        for base, cand in COMPARISONS:
            if base in self.result.evals and cand in self.result.evals:
                self.result.comparisons[f"{cand} vs {base}"] = compare(
                    self.result.evals[base], self.result.evals[cand]
                )

    # ---- stages --------------------------------------------------------------------

    def sft_data(self) -> tuple[list[Rollout], list[Rollout]]:
        if self.sft_file is not None:  # the user's conversations instead of domain references
            return inputs.split_off(self.sft_file, self.cfg.sft.val_examples, self.cfg.seed)
        return inputs.sft_demonstrations(self.cfg, self.domains, self.exclude, self.tok,
                                  self.max_context, self.report.warn)  # fmt: skip

    def stage_sft(self, examples: list[Rollout], val: list[Rollout]) -> float:
        c = self.cfg.sft
        self.report.stage("sft", c.max_steps)
        model = self.replica.trained
        optimizer = sft_optimizer(model, c)
        state_dir = self.run_dir.checkpoint_path(SFT_STATE)
        loop, before = None, 0.0  # a resumed stage: where it stood, seconds it had run
        if self.resuming and is_complete(state_dir):
            loop, before = load_sft_state(state_dir, model, optimizer)
            self.replica.sync()
        start = time.perf_counter()
        saved_at = [loop.step if loop is not None else 0]  # the state on disk (0: none)

        def save(state: SFTLoop, opt: torch.optim.Optimizer) -> None:
            if state.step != saved_at[0]:
                save_sft_state(state_dir, model, opt, state, before + time.perf_counter() - start)
                saved_at[0] = state.step

        def every(state: SFTLoop, opt: torch.optim.Optimizer) -> None:
            if c.save_every and state.step % c.save_every == 0 and state.step < c.max_steps:
                save(state, opt)

        try:
            res = train_sft(
                model,  # type: ignore[arg-type]
                examples,
                val,
                c,
                self.pad_id,
                seed=self.cfg.seed,
                max_seconds=c.max_minutes * 60 - before,
                log=self.logger("sft"),
                optimizer=optimizer,
                resume=loop,
                on_step=every,
                stop=self.stops,
            )
        except Preempted as exc:  # save the state it stopped at, unless already there
            save(exc.state, optimizer)
            exc.saved = is_complete(state_dir)
            raise
        self.replica.sync()
        self.finish(
            "sft",
            res.steps,
            {
                "seconds": before + res.seconds,
                "val_loss": res.best_val_loss,
                "steps": res.steps,
                "stopped_on_plateau": float(res.stop_reason == "plateau"),
                "final_lr": res.final_lr,
            },
            state_dir,
        )
        return res.final_lr

    def stage_dpo(self) -> float:
        c = self.cfg.dpo
        before = self.treatment_seconds()
        start = time.perf_counter()
        self.clock.run(before)
        self.report.stage("dpo: mining pairs", 1)
        seed = self.cfg.seed

        def mine(tasks: list[Task]) -> list[PreferencePair]:
            return mine_pairs(
                tasks,
                self.engine,
                self.tok,
                get_domain,
                samples=c.samples_per_task,
                temperature=c.temperature,
                max_tokens=self.cfg.max_new_tokens,
                max_context=self.max_context,
                over_long=self.over_long,
            )

        if self.dpo_file is not None:  # the user's pairs instead of mined ones
            pairs, val_pairs = inputs.split_off(self.dpo_file, c.val_tasks, seed)
        else:
            tasks, val_tasks = inputs.dpo_tasks(self.cfg, self.domains, self.mixture,
                                                self.exclude, self.report.warn)  # fmt: skip
            pairs, val_pairs = mine(tasks), mine(val_tasks)
        if self.stops.poll():  # signalled while mining (minutes, on a big model)
            raise self.stops.preempted("dpo", None)
        self.report.stage("dpo", max(1, -(-len(pairs) // c.batch_size) * c.epochs))
        res = train_dpo(
            self.replica.trained, pairs, val_pairs, c, self.pad_id, seed=seed,  # type: ignore[arg-type]
            log=self.logger("dpo"), stop=self.stops,
        )  # fmt: skip
        self.replica.sync()
        seconds = time.perf_counter() - start
        self.clock.hold(before + seconds)
        self.finish(
            "dpo",
            res.steps,
            {
                "seconds": seconds,
                "pairs": res.pairs,
                "val_pairs": len(val_pairs),
                "steps": res.steps,
                "preference_accuracy_before": res.preference_accuracy_before,
                "preference_accuracy_after": res.preference_accuracy_after,
            },
        )
        return seconds

    def stage_grpo(self) -> float:
        c = self.cfg.grpo
        self.report.stage("grpo", c.steps)
        resume = load_grpo_state(self.state_path) if self.resuming else None
        before = self.treatment_seconds()
        self.clock.run(before + (resume.elapsed_s if resume is not None else 0.0))
        sampler = inputs.grpo_sampler(self.cfg, self.domains, self.mixture, self.exclude)
        res = train_grpo(
            self.replica.trained,  # type: ignore[arg-type]
            self.tok,
            self.engine,
            sampler,
            get_domain,
            c,
            max_tokens=self.cfg.max_new_tokens,
            max_context=self.max_context,
            over_long=self.over_long,
            log=self.logger("grpo"),
            record=lambda rollouts: self.record(rollouts, "grpo"),
            after_step=self.monitor_grpo,
            resume=resume,
            save_state=self.save_grpo,
            rollout=self.cfg.rollout,
            replica=self.replica,
            stop=self.stops,
        )
        # The stage's own clock: an earlier life's seconds in, monitor evaluations and
        # state saves out.
        self.clock.hold(before + res.seconds)
        self.finish(
            "grpo",
            res.steps,
            {
                "seconds": res.seconds,
                "steps": res.steps,
                "reward_first": res.mean_reward_first,
                "reward_last": res.mean_reward_last,
            },
            self.state_path,
        )
        return res.seconds

    def stage_control(self, outcome: ControlOutcome | None) -> None:
        """Log the control arm's run (on rank 0, which ran it) and evaluate its
        checkpoint (it saved it itself) on every rank."""
        if outcome is not None:
            self.report.stage("control (more SFT)", outcome.steps)
            for step, values in outcome.log:
                self.metrics.log("control", step, values)
                self.monitor.check("control", step, values)
            self.result.stages["control"] = {
                "seconds": outcome.seconds, "budget_s": outcome.budget_s,
                "steps": outcome.steps, "val_loss": outcome.val_loss,
            }  # fmt: skip
            if outcome.capped:
                self.report.warn(
                    f"control arm stopped at its cap after {outcome.seconds:.0f} s of the "
                    f"{outcome.budget_s:.0f} s DPO + GRPO trained; the arms had unequal time"
                )
        policy, _ = load_checkpoint(self.run_dir.checkpoint_path("control"), restore_rng=False)
        self.replica.load(policy.model.state_dict())
        self.evaluate("control")

    # ---- shared plumbing -----------------------------------------------------------

    def record(self, rollouts: list[Rollout], stage: str) -> dict[str, float]:
        """Store `rollouts`; how many the store had to degrade (`traces/<kind>`)."""
        before = dict(self.traces.degraded)
        self.traces.record(rollouts, stage)
        return degraded_metrics(before, self.traces.degraded)

    @property
    def state_path(self) -> Path:
        return self.run_dir.checkpoint_path(GRPO_STATE)

    def signalled(self) -> bool:  # this rank's SIGTERM / SIGUSR1, no collective (`poll`)
        return self.stops.signum is not None

    def save_grpo(self, state: GRPOState) -> None:
        with self.clock.paused():
            state.extra["trace_high_water_mark"] = self.traces.high_water_mark()
            save_grpo_state(self.state_path, state)

    def treatment_seconds(self) -> float:
        """DPO's and GRPO's `seconds` of the stages finished (or loaded) so far."""
        return sum(self.result.stages.get(s, {}).get("seconds", 0.0) for s in ("dpo", "grpo"))

    def done(self, stage: str) -> bool:
        """Whether `stage` finished in an earlier life of this run (resume only)."""
        return self.resuming and is_complete(self.run_dir.checkpoint_path(stage))

    def restore(self, stage: str) -> dict[str, float]:
        """Take a finished stage's weights and evaluation instead of redoing them."""
        policy, state = load_checkpoint(self.run_dir.checkpoint_path(stage), restore_rng=False)
        self.replica.load(policy.model.state_dict())
        if is_main() and stage in MID_STAGE_STATES:  # left by a kill right after the save
            remove_directory(self.run_dir.checkpoint_path(MID_STAGE_STATES[stage]))
        stats = {k: float(v) for k, v in state.get("stats", {}).items()}
        self.result.stages[stage] = stats
        for step, values in unlogged_rows(self.run_dir, stage, state.get("log", [])):
            self.metrics.log(stage, step, values)  # the control arm's, if a kill lost them
            self.monitor.check(stage, step, values)
        self.evaluate(stage)
        return stats

    def monitor_grpo(self, step: int) -> None:
        if self.monitor.due(step):
            with self.clock.paused():  # no training time: the control arm waits too
                self.monitor.evaluate(step, self.engine, self.tok, self.cfg.max_new_tokens,
                                      self.max_context, self.over_long)  # fmt: skip

    def logger(self, stage: str) -> Callable[[int, dict[str, float]], None]:
        def log(step: int, values: dict[str, float]) -> None:
            self.metrics.log(stage, step, values)
            self.monitor.check(stage, step, values)
            self.report.update(step, values)

        return log

    def finish(
        self, stage: str, step: int, stats: dict[str, float], state_dir: Path | None = None
    ) -> None:
        """Save the stage's checkpoint, then remove its mid-stage `state_dir` (only
        once the checkpoint is published: a kill in between leaves one or the other),
        then evaluate it."""
        self.result.stages[stage] = stats
        if is_main():
            save_checkpoint(
                self.run_dir.checkpoint_path(stage),
                self.policy,
                stage,
                step,
                {
                    "stats": stats,
                    "trace_high_water_mark": self.traces.high_water_mark(),
                    "base_model": base_model_record(self.cfg.model, self.cfg.seed),
                },
            )
            if state_dir is not None:  # renamed aside first: a kill leaves it whole or gone
                remove_directory(state_dir)
        self.evaluate(stage)

    def evaluate(self, label: str) -> EvalResult:
        if self.stops.poll():  # a signal outside a training loop: stop between stages
            raise self.stops.preempted(f"the evaluation of {label}", None)
        saved = self.run_dir.eval_path(label)
        if self.resuming and saved.is_file():  # evaluated in an earlier life of the run
            res = eval_result_from_document(load_results(saved))
            self.report.stage(f"eval: {label} (saved)", 1)
            self.result.evals[label] = res
            self.report.evaluated(res)
            return res
        self.report.stage(f"eval: {label}", 1)
        res = evaluate(
            label,
            self.heldout,
            self.engine,
            self.tok,
            get_domain,
            self.cfg.max_new_tokens,
            max_context=self.max_context,
            over_long=self.over_long,
        )
        recorded = self.record(res.rollouts, f"eval/{label}")
        settings = {"greedy": True, "max_tokens": self.cfg.max_new_tokens, "seed": self.cfg.seed,
                    "tasks_per_domain": self.cfg.eval.tasks_per_domain,
                    "seed_offset": self.cfg.eval.seed_offset,
                    "difficulties": self.cfg.eval.difficulties}  # fmt: skip
        model = self.cfg.model.name if label == "untrained" else f"checkpoints/{label}"
        values = {"completion": res.overall.rate, "mean": res.mean, **recorded}
        for name, score in res.per_domain.items():
            values[f"{name}/completion"] = score.completed.rate
            if score.format is not None:  # None: the domain's verifier does not report it
                values[f"{name}/format"] = score.format.rate
            if score.correct is not None:
                values[f"{name}/correct"] = score.correct.rate
        # The row first: a kill before the results file leaves a row a resume redoes.
        self.metrics.log(f"eval/{label}", 0, values)
        if is_main():
            save_results(self.run_dir.eval_path(label), results_document(res, model, settings))
        self.result.evals[label] = res
        self.report.evaluated(res)
        return res
