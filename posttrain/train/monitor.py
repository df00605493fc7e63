"""Watching a run while it trains: a fixed monitor set evaluated every K GRPO steps, and
alerts on each step's metrics.

    monitor = TrainingMonitor(config, run, heldout_tasks, metrics, warn=print)
    monitor.check("grpo", step, values)            # alerts.jsonl + a warning when tripped
    if monitor.due(step):
        monitor.evaluate(step, engine, tokenizer, max_tokens, max_context, over_long)

The monitor set is the first `eval.monitor_per_domain` held-out tasks of each domain:
the same tasks every time, so the curve moves only when the policy does. Its rows
go to `metrics.jsonl` under stage "heldout" (step = the GRPO step): `completion`,
`mean` and `{domain}/completion`; its rollouts are not recorded in the trace store
(the full held-out evaluations after each stage are).

Not guaranteed: a monitor set of a few tasks per domain is noisy (n is in the row as
`n`); the stage-end evaluations on the whole held-out set are the numbers to quote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from posttrain.config import RunConfig
from posttrain.domains import get_domain
from posttrain.engines.base import Engine
from posttrain.eval.evaluate import evaluate
from posttrain.rollout.context_strategy import OverLongPolicy
from posttrain.store import MetricsLogger, RunDir
from posttrain.store.alerts import AlertMonitor, AlertThresholds
from posttrain.store.metrics import read_metrics
from posttrain.train.resume import STAGES
from posttrain.types import Task


class TrainingMonitor:
    def __init__(
        self,
        config: RunConfig,
        run: RunDir,
        heldout: Sequence[Task],
        metrics: MetricsLogger,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        a = config.alerts
        thresholds = AlertThresholds(
            a.entropy_min, a.length_ratio, a.reward_rise, a.verifier_error_rate,
            a.sandbox_error_rate, a.logprob_mismatch, a.window,
        )  # fmt: skip
        self.alerts = AlertMonitor(run.alerts_path, thresholds, warn) if a.enabled else None
        if self.alerts is not None and run.metrics_path.is_file():  # a resume: carry on
            self.alerts.replay(r for r in read_metrics(run.metrics_path) if r["stage"] in STAGES)
        self.every = config.eval.every_steps
        per_domain: dict[str, int] = {}
        self.tasks: list[Task] = []
        for task in heldout:
            if per_domain.get(task.domain, 0) < config.eval.monitor_per_domain:
                per_domain[task.domain] = per_domain.get(task.domain, 0) + 1
                self.tasks.append(task)
        self.metrics = metrics

    def check(self, stage: str, step: int, values: dict[str, float]) -> None:
        if self.alerts is not None:  # every stage: a rule checks only metrics it finds
            self.alerts.observe(stage, step, values)

    def due(self, step: int) -> bool:
        return self.every > 0 and step % self.every == 0

    def evaluate(
        self,
        step: int,
        engine: Engine,
        tokenizer: Any,
        max_tokens: int,
        max_context: int | None,
        over_long: OverLongPolicy | None,
    ) -> dict[str, float]:
        res = evaluate("heldout", self.tasks, engine, tokenizer, get_domain, max_tokens,
                       max_context=max_context, over_long=over_long)  # fmt: skip
        values = {"completion": res.overall.rate, "mean": res.mean, "n": float(res.overall.n)}
        for name, score in res.per_domain.items():
            values[f"{name}/completion"] = score.completed.rate
        self.metrics.log("heldout", step, values)
        return values
