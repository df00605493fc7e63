"""A GRPO run whose rollouts the trace store can only store degraded: each stage's
metrics count them (`traces/escaped`, `traces/placeholder`, by step) and the run's
summary says so; a clean run's summary does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import posttrain.train.recipe as recipe
from posttrain.config import load_config
from posttrain.domains import registry
from posttrain.domains.arithmetic import AdditionDomain
from posttrain.store.metrics import read_metrics
from posttrain.types import Rollout, Task, Verdict


def nested(depth: int = 100_000) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


class UnstorableAddition(AdditionDomain):
    """Addition whose GRPO rollouts cannot be stored as they are: step 1's verdicts carry
    a lone surrogate (stored escaped), step 2's rollouts a value nested too deep to
    serialize (stored as placeholders). Evaluation rollouts (version 0) stay clean."""

    id = "test-traces/unstorable-v1"

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        verdict = super().verify(task, rollout, session)
        if rollout.policy_version == 1:
            verdict.reason += " \ud800"
        if rollout.policy_version == 2:
            rollout.timings["note"] = nested()
        return verdict


@pytest.fixture
def unstorable(monkeypatch: pytest.MonkeyPatch) -> None:
    # Registered for this test only: the registry is process-wide.
    domain = UnstorableAddition()
    monkeypatch.setitem(registry._REGISTRY._domains, domain.id, domain)


def tiny_run(tmp_path: Path, domain: str) -> Path:
    config = load_config(None, [
        f"out_dir={tmp_path}", "name=degraded", f"domains=[{domain}]",
        "sft.enabled=false", "dpo.enabled=false", "control.enabled=false",
        "grpo.steps=2", "grpo.batch_size=4", "grpo.group_size=2", "grpo.minibatch_size=4",
        "grpo.adaptive_difficulty=false", "grpo.refill_rounds=0", "max_new_tokens=8",
        "eval.tasks_per_domain=2", "model.threads=1",
    ])  # fmt: skip
    return recipe.run_recipe(config).run_dir


def test_rollouts_stored_degraded_are_logged_per_step_and_named_in_the_summary(
    tmp_path: Path, unstorable: None
) -> None:
    run = tiny_run(tmp_path, UnstorableAddition.id)
    rows = read_metrics(run / "metrics.jsonl")
    grpo = {r["step"]: r["values"] for r in rows if r["stage"] == "grpo"}
    assert [(grpo[s]["traces/escaped"], grpo[s]["traces/placeholder"]) for s in (1, 2)] == [
        (4.0, 0.0),
        (0.0, 4.0),
    ]
    untrained = next(r["values"] for r in rows if r["stage"] == "eval/untrained")
    assert (untrained["traces/escaped"], untrained["traces/placeholder"]) == (0.0, 0.0)
    summary = (run / "summary.md").read_text()
    assert "**8 rollouts stored degraded** in traces.sqlite: 4 escaped" in summary
    assert "4 placeholder (no trajectory kept" in summary


def test_a_clean_runs_summary_has_no_traces_line(tmp_path: Path) -> None:
    run = tiny_run(tmp_path, "arith/addition-v1")
    summary = (run / "summary.md").read_text()
    assert "## Traces" not in summary and "stored degraded" not in summary
    grpo = [r["values"] for r in read_metrics(run / "metrics.jsonl") if r["stage"] == "grpo"]
    assert [v["traces/placeholder"] for v in grpo] == [0.0, 0.0]
