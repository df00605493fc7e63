"""The control arm trains as many seconds as DPO + GRPO: the clock the parent shares,
the pacer that holds the child to it, the spawned arm, and a recipe's arms."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from posttrain.config import ModelConfig, SFTConfig, load_config
from posttrain.domains import get_domain
from posttrain.rollout.episode import replay_references
from posttrain.train.checkpoint import load_run_policy, save_checkpoint
from posttrain.train.control import (
    CAP_MARGIN_S,
    ControlArm,
    TrainingPacer,
    TreatmentClock,
    control_cap_s,
)
from posttrain.train.mixture import TaskSampler
from posttrain.train.recipe import QuietReporter, run_recipe
from posttrain.types import Rollout


def test_a_running_clock_grows_with_the_wall_clock_and_a_held_one_stands_still() -> None:
    clock = TreatmentClock()
    clock.run(5.0)
    time.sleep(0.2)
    assert 5.2 <= clock.read() < 5.6
    clock.hold(7.0)
    time.sleep(0.1)
    assert clock.read() == 7.0


def test_a_paused_clock_stands_still_in_the_block_and_runs_on_after_it() -> None:
    clock = TreatmentClock()
    clock.run(1.0)
    with clock.paused():
        inside = clock.read()
        time.sleep(0.3)
        assert clock.read() == inside
    time.sleep(0.1)
    assert inside + 0.1 <= clock.read() < inside + 0.3  # the pause did not count


def _step(seconds: float) -> None:
    time.sleep(seconds)  # a training step, as far as the pacer can tell


def test_the_pacer_does_not_count_its_wait_for_the_treatment_as_training() -> None:
    clock = TreatmentClock()
    clock.hold(0.1)
    pacer = TrainingPacer(clock, final=lambda: False, cap_s=60.0)
    assert pacer() is False  # 0 s trained < 0.1 s: a step
    _step(0.2)
    threading.Timer(0.5, clock.hold, args=(1.0,)).start()  # the treatment trains on
    began = time.perf_counter()
    assert pacer() is False  # waited for the figure to grow past 0.2 s, then a step
    assert time.perf_counter() - began >= 0.45
    assert 0.2 <= pacer.trained < 0.3


def _run_until_stopped(pacer: TrainingPacer, step_s: float) -> int:
    """Steps of `step_s` seconds taken until the pacer says stop."""
    steps = 0
    while not pacer():
        _step(step_s)
        steps += 1
    return steps


def test_the_pacer_stops_after_the_step_that_reaches_the_final_figure() -> None:
    clock = TreatmentClock()
    clock.hold(0.25)
    pacer = TrainingPacer(clock, final=lambda: True, cap_s=60.0)
    steps = _run_until_stopped(pacer, step_s=0.1)
    assert steps == 3  # 0.2 s < 0.25 s: one more step; 0.3 s: done
    assert 0.3 <= pacer.trained < 0.35 and not pacer.capped


def test_the_pacer_stops_at_its_cap_short_of_the_figure() -> None:
    clock = TreatmentClock()
    clock.hold(10.0)
    pacer = TrainingPacer(clock, final=lambda: False, cap_s=0.15)
    steps = _run_until_stopped(pacer, step_s=0.1)
    assert steps == 2 and pacer.capped


def test_the_pacer_stops_when_the_parent_is_gone() -> None:
    clock = TreatmentClock()
    clock.run(0.0)  # a parent killed mid-stage leaves its clock running
    pacer = TrainingPacer(clock, final=lambda: False, cap_s=60.0, parent_alive=lambda: False)
    assert pacer() is True and pacer.orphaned


def test_the_cap_follows_the_treatment_stages_max_minutes() -> None:
    long = load_config(None, ["dpo.max_minutes=30", "grpo.max_minutes=120"])
    assert control_cap_s(long) >= 150 * 60 + CAP_MARGIN_S  # not an hour
    no_dpo = load_config(None, ["dpo.enabled=false", "grpo.max_minutes=120"])
    assert 120 * 60 < control_cap_s(no_dpo) < control_cap_s(long)


def _sft_checkpoint(tmp_path: Path) -> tuple[Path, list[Rollout]]:
    spec = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "intermediate_size": 64}
    policy = load_run_policy(ModelConfig(**spec), 0)
    save_checkpoint(tmp_path / "sft", policy, "sft", 1)
    tasks = TaskSampler([get_domain("arith/addition-v1")], "sft", range(1, 3), seed=0).sample(16)
    return tmp_path / "sft", replay_references(tasks, policy.tokenizer, get_domain)


def test_a_short_treatment_gets_a_control_arm_of_as_many_training_seconds(
    tmp_path: Path,
) -> None:
    # The child starts up for seconds; its clock starts at its first step, so a
    # treatment over before then still gets its seconds of control training.
    sft, examples = _sft_checkpoint(tmp_path)
    clock = TreatmentClock()
    cfg = SFTConfig(batch_size=4, micro_batches=1, eval_every=5)
    arm = ControlArm.start(sft, tmp_path / "control", examples, examples[:4], cfg, 1e-3, 0, 1,
                           clock, cap_s=60.0)  # fmt: skip
    outcome = arm.stop(1.0)
    assert outcome.steps > 0 and outcome.budget_s == 1.0
    step_s = outcome.seconds / outcome.steps
    assert 1.0 <= outcome.seconds < 1.0 + max(2 * step_s, 0.2)  # past it by under a step
    state = json.loads((tmp_path / "control" / "trainer_state.json").read_text())
    assert state["stats"]["seconds"] == outcome.seconds and state["stats"]["budget_s"] == 1.0
    assert state["log"] == [[step, values] for step, values in outcome.log]  # see below


@pytest.mark.slow  # a recipe with every stage, about 40 s
def test_a_recipes_control_arm_trains_as_long_as_dpo_and_grpo(tmp_path: Path) -> None:
    config = load_config(None, [
        f"out_dir={tmp_path}", "name=run", "sft.max_steps=10", "sft.num_examples=32",
        "sft.eval_every=5", "sft.val_examples=8", "dpo.num_tasks=8", "dpo.val_tasks=4",
        "dpo.batch_size=8", "dpo.epochs=1", "grpo.steps=2", "grpo.batch_size=8",
        "grpo.group_size=4", "grpo.minibatch_size=8", "eval.tasks_per_domain=20",
        "eval.every_steps=1", "eval.monitor_per_domain=10", "max_new_tokens=24",
        "logging.tensorboard=false",
    ])  # fmt: skip
    result = run_recipe(config, QuietReporter())
    control = result.stages["control"]
    treatment = result.stages["dpo"]["seconds"] + result.stages["grpo"]["seconds"]
    assert control["budget_s"] == pytest.approx(treatment, abs=1e-9)
    assert control["steps"] > 0
    step_s = control["seconds"] / control["steps"]
    # Neither the child's start-up nor the parent's evaluations and saves count.
    assert treatment <= control["seconds"] < treatment + max(2 * step_s, 0.2)
    # A kill after the arm saved its checkpoint, before the run logged its rows: the
    # resume takes the finished arm and logs the rows from its checkpoint.
    metrics = tmp_path / "run" / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    control_rows = [(r["step"], r["values"]) for r in rows if r["stage"] == "control"]
    kept = [json.dumps(r) + "\n" for r in rows if r["stage"] != "control" or r["step"] < 5]
    metrics.write_text("".join(kept))
    run_recipe(load_config(None, [f"resume={tmp_path / 'run'}"]), QuietReporter())
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert sorted((r["step"], r["values"]) for r in rows if r["stage"] == "control") == sorted(
        control_rows
    )


def test_waiting_for_the_arm_ends_at_once_when_the_run_is_stopping(tmp_path: Path) -> None:
    # A signalled run (`train/preemption.py`) must not sit out the arm's budget.
    sft, examples = _sft_checkpoint(tmp_path)
    cfg = SFTConfig(batch_size=4, micro_batches=1, eval_every=5)
    arm = ControlArm.start(sft, tmp_path / "control", examples, examples[:4], cfg, 1e-3, 0, 1,
                           TreatmentClock(), cap_s=600.0)  # fmt: skip
    began = time.monotonic()
    with pytest.raises(RuntimeError, match="the run is stopping"):
        arm.stop(300.0, abort=lambda: True)
    assert time.monotonic() - began < 30
    assert not (tmp_path / "control" / "trainer_state.json").exists()  # no checkpoint
