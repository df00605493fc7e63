"""A GRPO run driven into every alert condition: each lands in alerts.jsonl, is warned,
and shows in report.html; the monitor set's curve lands in metrics.jsonl.

The run moves through phases by GRPO step (read from the metrics the monitor sees):
steps 1-3 are calm with completions cut to 4 tokens; from step 4 completions run to
the budget (a length jump) and a hacked verifier passes everything (a reward jump);
steps 6-7 the verifier raises; steps 8-9 the session's sandbox fails to close; from step 10 the engine
reports logprobs 2 nats off. Sampling at temperature 0.02 collapses the entropy.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

import posttrain.train.pipeline as pipeline
import posttrain.train.recipe as recipe
from posttrain.config import load_config
from posttrain.domains import registry
from posttrain.domains.calculator import CalculatorDomain, CalculatorSession
from posttrain.engines.hf import HFEngine
from posttrain.eval.model_eval import EvalSpec, run_eval
from posttrain.store.alerts import read_alerts
from posttrain.store.metrics import read_metrics
from posttrain.train.monitor import TrainingMonitor
from posttrain.types import Rollout, Task, Verdict

STEP = {"n": 1}  # the GRPO step being rolled out


class _Session(CalculatorSession):
    def close(self) -> None:
        if STEP["n"] in (8, 9):
            raise OSError("sandbox died")
        super().close()


class DriftDomain(CalculatorDomain):
    id = "test-alerts/drift-v1"

    def open(self, task: Task, sandbox: object | None = None) -> CalculatorSession:
        return _Session(task)

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        step = rollout.policy_version
        if step in (6, 7):
            raise RuntimeError("verifier broke")
        if step >= 4:
            return Verdict(1.0, True, "hacked")
        return super().verify(task, rollout, session)


class DriftEngine(HFEngine):
    def generate(self, requests: list) -> list:
        out = super().generate(requests)
        for completions in out:
            for c in completions:
                if STEP["n"] < 4:
                    c.token_ids, c.logprobs, c.finish_reason = (
                        c.token_ids[:4],
                        c.logprobs[:4],
                        "length",
                    )
                    c.text = self.tokenizer.decode(c.token_ids, skip_special_tokens=True)
                if STEP["n"] >= 10:
                    c.logprobs = [lp - 2.0 for lp in c.logprobs]
        return out


@pytest.fixture
def drift(monkeypatch: pytest.MonkeyPatch) -> None:
    # Registered for this test only: the registry is process-wide.
    monkeypatch.setitem(registry._REGISTRY._domains, DriftDomain.id, DriftDomain())
    STEP["n"] = 1
    check = TrainingMonitor.check

    def watching(self: TrainingMonitor, stage: str, step: int, values: dict) -> None:
        check(self, stage, step, values)
        if stage == "grpo":
            STEP["n"] = step + 1

    monkeypatch.setattr(TrainingMonitor, "check", watching)
    monkeypatch.setattr(pipeline, "HFEngine", DriftEngine)


def test_a_run_driven_into_each_condition_records_every_alert(
    tmp_path: Path, drift: None, caplog: pytest.LogCaptureFixture
) -> None:
    config = load_config(None, [
        f"out_dir={tmp_path}", "name=drift", "domains=[test-alerts/drift-v1]",
        "sft.enabled=false", "dpo.enabled=false", "control.enabled=false",
        "grpo.steps=11", "grpo.batch_size=8", "grpo.group_size=4", "grpo.minibatch_size=8",
        "grpo.temperature=0.02", "grpo.adaptive_difficulty=false", "grpo.refill_rounds=0",
        "max_new_tokens=24",
        "eval.tasks_per_domain=4", "eval.every_steps=5", "eval.monitor_per_domain=2",
        "alerts.window=2", "model.threads=1",
    ])  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="posttrain"):
        result = recipe.run_recipe(config)
    run = result.run_dir

    alerts = read_alerts(run / "alerts.jsonl")
    first = {}
    for a in alerts:
        first.setdefault(a["kind"], a["step"])
    assert first.pop("entropy_collapse") <= 3  # sampling at T=0.02 from the start
    assert first == {"length_jump": 4, "reward_jump": 4, "verifier_errors": 6,
                     "sandbox_errors": 8, "logprob_mismatch": 10}  # fmt: skip
    warned = [r.getMessage() for r in caplog.records]
    assert all(a["message"] in warned for a in alerts)

    report = (run / "report.html").read_text()
    for kind in (*first, "entropy_collapse"):
        assert kind in report

    heldout = [r for r in read_metrics(run / "metrics.jsonl") if r["stage"] == "heldout"]
    assert [r["step"] for r in heldout] == [5, 10]
    assert all(r["values"]["n"] == 2 and "test-alerts/drift-v1/completion" in r["values"]
               for r in heldout)  # fmt: skip
    grpo = [r["values"] for r in read_metrics(run / "metrics.jsonl") if r["stage"] == "grpo"]
    assert grpo[-1]["logprob_mismatch"] == pytest.approx(2.0, abs=0.05)
    assert grpo[-1]["entropy"] < 0.1 and "by_family/test-alerts/reward" in grpo[0]
    saved = json.loads((run / "evals" / "grpo.json").read_text())
    assert saved["label"] == "grpo"

    # `posttrain eval RUN` re-evaluates the run's final checkpoint on the run's own tasks.
    again = run_eval(EvalSpec(str(run)))
    assert again["model"] == str(run / "checkpoints" / "grpo")
    assert [(t["id"], t["passed"], t["tokens"]) for t in again["tasks"]] == [
        (t["id"], t["passed"], t["tokens"]) for t in saved["tasks"]
    ]
