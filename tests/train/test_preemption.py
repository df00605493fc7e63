"""SIGTERM / SIGUSR1 stop a run cleanly: the stage saves its state at the next step
boundary, the run exits with 128 + the signal, and a resume matches the run that was
never stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from posttrain.config import DPOConfig, GRPOConfig, SFTConfig, load_config
from posttrain.domains import get_domain
from posttrain.rollout.episode import replay_references
from posttrain.store import is_complete
from posttrain.store.metrics import read_metrics
from posttrain.train import pipeline
from posttrain.train.dpo import train_dpo
from posttrain.train.preemption import Preempted, StopSignals
from posttrain.train.recipe import QuietReporter, RecipeResult, run_recipe
from posttrain.train.resume import GRPOState, load_grpo_state
from posttrain.train.sft import train_sft
from tests.train.test_dpo import starter_tasks, synthetic_pairs
from tests.train.test_grpo import run_grpo
from tests.train.test_resume import TINY


def test_the_first_signal_is_latched_and_the_handlers_are_restored() -> None:
    stops = StopSignals()
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    with stops.installed():
        assert not stops.poll()
        os.kill(os.getpid(), signal.SIGUSR1)
        assert stops.signum == signal.SIGUSR1 and stops.poll()
        os.kill(os.getpid(), signal.SIGTERM)  # later signals change nothing (torchrun
        os.kill(os.getpid(), signal.SIGTERM)  # forwards the one a scheduler also sent)
        assert stops.signum == signal.SIGUSR1 and stops.poll()
    assert {s: signal.getsignal(s) for s in before} == before


def test_the_message_says_where_it_stopped_and_how_to_go_on() -> None:
    saved = Preempted("grpo", 7, signal.SIGTERM, saved=True)
    saved.run_dir = "runs/x"
    assert str(saved) == (
        "stopped by SIGTERM in grpo after step 7 (its full state is saved); continue with "
        "`posttrain run resume=runs/x`"
    )
    assert saved.exit_code == 143
    between = Preempted("the evaluation of sft", None, signal.SIGUSR1)
    assert "before the evaluation of sft (the finished stages are kept)" in str(between)
    assert between.exit_code == 138
    assert "the stage restarts on resume" in str(Preempted("dpo", 2, signal.SIGTERM))


def _signal_at(stops: StopSignals, step: int) -> Any:
    def hook(at: int, *_: Any) -> None:
        if at == step:
            stops.signum = signal.SIGTERM  # what the handler records

    return hook


def test_grpo_saves_the_state_after_the_last_step_then_raises(
    tiny_model: Any, tokenizer: Any
) -> None:
    stops, saved = StopSignals(), []
    cfg = GRPOConfig(steps=5, batch_size=4, group_size=2, minibatch_size=4, save_every=0)
    with pytest.raises(Preempted) as stopped:  # signalled in step 2's monitor hook
        run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg, after_step=_signal_at(stops, 2),
                 save_state=saved.append, stop=stops)  # fmt: skip
    assert (stopped.value.stage, stopped.value.step, stopped.value.saved) == ("grpo", 2, True)
    assert [s.step for s in saved] == [2]  # save_every=0: saved for the signal alone
    assert isinstance(saved[0], GRPOState) and len(saved[0].rewards_seen) == 2


def test_a_grpo_step_saved_by_save_every_is_not_saved_again(
    tiny_model: Any, tokenizer: Any
) -> None:
    stops, saved, after, recorded = StopSignals(), [], [], []

    def record(rollouts: list[Any]) -> None:  # mid-step, before the step's end
        recorded.append(len(rollouts))
        _signal_at(stops, 2)(len(recorded))

    cfg = GRPOConfig(steps=5, batch_size=4, group_size=2, minibatch_size=4, save_every=2)
    with pytest.raises(Preempted) as stopped:
        run_grpo(tiny_model, tokenizer, ["yes", "no"], cfg, after_step=after.append,
                 record=record, save_state=saved.append, stop=stops)  # fmt: skip
    assert stopped.value.step == 2
    assert [s.step for s in saved] == [2]  # once, though save_every says 2 as well
    assert after == [1]  # the stopping step skips its monitor hook


def test_sft_raises_with_the_loop_state_for_its_caller_to_save(
    tiny_model: Any, tokenizer: Any
) -> None:
    examples = replay_references(starter_tasks(range(4)), tokenizer, get_domain)
    stops = StopSignals()
    cfg = SFTConfig(batch_size=4, micro_batches=1, max_steps=10, eval_every=1)
    with pytest.raises(Preempted) as stopped:
        train_sft(tiny_model, examples, [], cfg, tokenizer.pad_token_id,
                  log=_signal_at(stops, 3), stop=stops)  # fmt: skip
    assert (stopped.value.stage, stopped.value.step) == ("sft", 3)
    assert stopped.value.state.step == 3 and not stopped.value.saved


def test_dpo_stops_at_its_next_step(tiny_model: Any, tokenizer: Any) -> None:
    pairs = synthetic_pairs(starter_tasks(range(4)), tokenizer)
    stops = StopSignals()
    cfg = DPOConfig(batch_size=4, epochs=1)
    with pytest.raises(Preempted) as stopped:
        train_dpo(tiny_model, pairs, pairs, cfg, tokenizer.pad_token_id,
                  log=_signal_at(stops, 1), stop=stops)  # fmt: skip
    assert (stopped.value.stage, stopped.value.step, stopped.value.saved) == ("dpo", 1, False)


def _run_in_process(*settings: str) -> RecipeResult:
    return run_recipe(load_config(None, list(settings)), QuietReporter())


def _rows(run: Path, stage: str) -> list[dict[str, Any]]:
    return [r for r in read_metrics(run / "metrics.jsonl") if r["stage"] == stage]


def _losses(run: Path, stage: str, metric: str = "loss") -> list[tuple[int, float]]:
    return [(r["step"], r["values"][metric]) for r in _rows(run, stage)]


def _signal_when_logged(monkeypatch: pytest.MonkeyPatch, stage: str, step: int) -> None:
    """Make the recipe send this process SIGTERM (which its handler latches) once
    `stage` has logged `step`."""
    real_log = pipeline.Pipeline.logger

    def logger(self: Any, name: str) -> Any:
        log = real_log(self, name)

        def signalled(at: int, values: dict[str, float]) -> None:
            log(at, values)
            if name == stage and at == step:
                os.kill(os.getpid(), signal.SIGTERM)

        return signalled

    monkeypatch.setattr(pipeline.Pipeline, "logger", logger)


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_a_run_stopped_by_sigterm_resumes_to_the_same_losses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    # the warm-up, the guard's counts and the monitor rows resume exactly too
    settings = [*TINY, "sft.max_steps=6", "sft.eval_every=1", "grpo.steps=4", "grpo.warmup_steps=3",
                "eval.every_steps=1"]  # fmt: skip
    _run_in_process(f"out_dir={tmp_path}", "name=straight", *settings)
    _signal_when_logged(monkeypatch, stage, 2)
    with pytest.raises(Preempted) as stopped:
        _run_in_process(f"out_dir={tmp_path}", "name=stopped", *settings)
    monkeypatch.undo()
    assert (stopped.value.stage, stopped.value.step, stopped.value.saved) == (stage, 2, True)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler was removed
    state = tmp_path / "stopped" / "checkpoints" / f"{stage}-state"
    assert is_complete(state)
    assert json.loads((state / "state.json").read_text())["step"] == 2

    result = _run_in_process(f"resume={tmp_path / 'stopped'}")
    assert result.stages[stage]["steps"] == (6 if stage == "sft" else 4)
    for name in ("sft", "grpo"):
        for metric in ("loss", "grad_norm", "skipped_updates"):
            expected = _losses(tmp_path / "straight", name, metric)
            got = _losses(tmp_path / "stopped", name, metric)
            assert [s for s, _ in got] == [s for s, _ in expected]
            for (step, a), (_, b) in zip(expected, got, strict=True):
                assert abs(a - b) <= 1e-6, (name, metric, step, a, b)
    # the monitor evaluation of the stopped GRPO step, skipped by the stop, is run first
    monitor = [_rows(tmp_path / run, "heldout") for run in ("straight", "stopped")]
    assert [r["step"] for r in monitor[1]] == [r["step"] for r in monitor[0]] == [1, 2, 3, 4]
    assert [r["values"] for r in monitor[1]] == [r["values"] for r in monitor[0]]


def test_a_signal_between_stages_stops_before_the_next_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = [*TINY, "sft.max_steps=4", "grpo.steps=2"]
    _run_in_process(f"out_dir={tmp_path}", "name=straight", *settings)
    real_save = pipeline.save_checkpoint

    def save_then_signal(path: Path, *args: Any) -> Path:
        done = real_save(path, *args)
        if path.name == "sft":
            os.kill(os.getpid(), signal.SIGTERM)  # SFT's checkpoint is already whole
        return done

    monkeypatch.setattr(pipeline, "save_checkpoint", save_then_signal)
    with pytest.raises(Preempted) as stopped:
        _run_in_process(f"out_dir={tmp_path}", "name=stopped", *settings)
    monkeypatch.undo()
    assert (stopped.value.stage, stopped.value.step) == ("the evaluation of sft", None)
    assert stopped.value.run_dir == str(tmp_path / "stopped")
    evals = tmp_path / "stopped" / "evals"
    assert not (evals / "sft.json").exists() and (evals / "untrained.json").exists()

    _run_in_process(f"resume={tmp_path / 'stopped'}")
    assert (evals / "sft.json").exists() and (evals / "grpo.json").exists()
    assert _losses(tmp_path / "stopped", "grpo") == _losses(tmp_path / "straight", "grpo")


@pytest.mark.slow  # a `posttrain run` process, about 5 s
def test_posttrain_run_exits_143_on_sigterm_and_says_how_to_resume(tmp_path: Path) -> None:
    metrics = tmp_path / "run" / "metrics.jsonl"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    posttrain = str(Path(sys.executable).with_name("posttrain"))
    log = tmp_path / "out.txt"
    with log.open("w") as out_file:
        proc = subprocess.Popen([posttrain, "run", f"out_dir={tmp_path}", "name=run", *TINY,
                                 "grpo.steps=200", "grpo.max_minutes=10"],
                                stdout=out_file, stderr=subprocess.STDOUT, env=env)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if metrics.is_file() and any(r["stage"] == "grpo" for r in read_metrics(metrics)):
                proc.send_signal(signal.SIGTERM)
                break
            time.sleep(0.05)
        proc.wait(timeout=300)
    finally:
        proc.kill()
    out = log.read_text()
    assert proc.returncode == 143, out[-3000:]
    flat = out.replace("\n", "")  # the console wraps long lines
    assert "stopped by SIGTERM in grpo after step" in flat
    assert f"resume={tmp_path / 'run'}`" in flat
    saved = load_grpo_state(tmp_path / "run" / "checkpoints" / "grpo-state")
    assert saved is not None and saved.step >= 1
    assert not (tmp_path / "run" / "checkpoints" / "sft-state").exists()  # SFT had finished


def _signal_after(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Wrap `owner.name` so that its first call sends this process SIGTERM once it has
    returned; returns the list its calls are counted in."""
    real, calls = getattr(owner, name), []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    monkeypatch.setattr(owner, name, wrapped)
    return calls


def test_a_signal_during_pair_mining_stops_before_dpo_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = [*TINY, "dpo.enabled=true", "dpo.num_tasks=8", "dpo.val_tasks=4",
                "dpo.batch_size=4", "dpo.epochs=1"]  # fmt: skip
    _signal_after(monkeypatch, pipeline, "mine_pairs")
    with pytest.raises(Preempted) as stopped:
        _run_in_process(f"out_dir={tmp_path}", "name=run", *settings)
    monkeypatch.undo()
    assert (stopped.value.stage, stopped.value.step) == ("dpo", None)
    assert "before dpo (the finished stages are kept)" in str(stopped.value)
    assert not any(r["stage"] == "dpo" for r in read_metrics(tmp_path / "run" / "metrics.jsonl"))
    result = _run_in_process(f"resume={tmp_path / 'run'}")
    assert result.stages["dpo"]["steps"] > 0 and result.stages["grpo"]["steps"] == 2


def test_a_signal_just_after_an_sft_resume_keeps_the_state_it_resumed_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = [*TINY, "sft.max_steps=6", "sft.eval_every=1", "sft.save_every=2"]
    _run_in_process(f"out_dir={tmp_path}", "name=straight", *settings)
    _signal_when_logged(monkeypatch, "sft", 4)
    with pytest.raises(Preempted):  # at step 4, which save_every=2 saved already
        _run_in_process(f"out_dir={tmp_path}", "name=stopped", *settings)
    monkeypatch.undo()
    state = tmp_path / "stopped" / "checkpoints" / "sft-state"
    assert json.loads((state / "state.json").read_text())["step"] == 4

    _signal_after(monkeypatch, pipeline, "load_sft_state")  # before a step of the new life
    with pytest.raises(Preempted) as again:
        _run_in_process(f"resume={tmp_path / 'stopped'}")
    monkeypatch.undo()
    assert (again.value.stage, again.value.step, again.value.saved) == ("sft", 4, True)
    assert json.loads((state / "state.json").read_text())["step"] == 4

    _run_in_process(f"resume={tmp_path / 'stopped'}")
    for name in ("sft", "grpo"):
        expected, got = _losses(tmp_path / "straight", name), _losses(tmp_path / "stopped", name)
        assert [s for s, _ in got] == [s for s, _ in expected]
        assert [v for _, v in got] == pytest.approx([v for _, v in expected], abs=1e-6)


@pytest.mark.slow  # the control arm is a spawned process: about 20 s
def test_a_signal_while_waiting_for_the_control_arm_stops_it_and_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = [*TINY, "control.enabled=true"]
    real_stop = pipeline.ControlArm.stop

    def stop_signalled(self: Any, *args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGTERM)  # as the wait begins
        return real_stop(self, *args, **kwargs)

    monkeypatch.setattr(pipeline.ControlArm, "stop", stop_signalled)
    with pytest.raises(Preempted) as stopped:
        _run_in_process(f"out_dir={tmp_path}", "name=run", *settings)
    monkeypatch.undo()
    assert (stopped.value.stage, stopped.value.step) == ("the control arm's end", None)
    checkpoints = tmp_path / "run" / "checkpoints"
    assert is_complete(checkpoints / "grpo") and not is_complete(checkpoints / "control")
    result = _run_in_process(f"resume={tmp_path / 'run'}")  # a fresh control arm
    assert result.stages["control"]["steps"] > 0 and "control" in result.evals
