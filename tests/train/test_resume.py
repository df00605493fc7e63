"""Full-state resume: a run killed with SIGKILL mid-GRPO (or mid-SFT) and resumed gives
the same per-step losses as the same run uninterrupted; finished stages are loaded,
not redone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from posttrain.config import ConfigError, SFTConfig, load_config
from posttrain.models.tiny import TinyModelSpec, build_tiny_model, build_tokenizer
from posttrain.store import COMPLETE_MARKER, atomic, is_complete
from posttrain.store.alerts import read_alerts
from posttrain.store.metrics import MetricsLogger, read_metrics
from posttrain.store.run_dir import RunDir
from posttrain.train import pipeline
from posttrain.train.monitor import TrainingMonitor
from posttrain.train.recipe import QuietReporter, RecipeResult, run_recipe
from posttrain.train.resume import (
    STAGES,
    GRPOState,
    forget_unfinished,
    load_grpo_state,
    load_sft_state,
    open_for_resume,
    prepare_resume,
    save_sft_state,
)
from posttrain.train.sft import SFTLoop, sft_optimizer

POSTTRAIN = str(Path(sys.executable).with_name("posttrain"))
SETTINGS = [
    "sft.max_steps=20", "sft.num_examples=64", "sft.eval_every=10", "sft.val_examples=16",
    "dpo.enabled=false", "control.enabled=false", "grpo.steps=8", "grpo.batch_size=16",
    "grpo.group_size=4", "grpo.minibatch_size=8", "grpo.save_every=3", "grpo.max_minutes=30",
    "eval.tasks_per_domain=4", "eval.every_steps=4", "eval.monitor_per_domain=2",
    "max_new_tokens=24",
]  # fmt: skip
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([POSTTRAIN, "run", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=ENV)  # fmt: skip


def _grpo_rows(run: Path) -> list[tuple[int, float, float]]:
    rows = [r for r in read_metrics(run / "metrics.jsonl") if r["stage"] == "grpo"]
    return [(r["step"], r["values"]["loss"], r["values"]["reward"]) for r in rows]


def _trace_ids(run: Path) -> list[str]:
    with sqlite3.connect(run / "traces.sqlite") as db:
        return [row[0] for row in db.execute("SELECT id FROM rollouts WHERE stage = 'grpo'")]


def _kill_when(proc: subprocess.Popen[str], metrics: Path, step: int, stage: str = "grpo") -> None:
    deadline = time.monotonic() + 540
    while time.monotonic() < deadline and proc.poll() is None:
        if metrics.is_file() and any(
            r["stage"] == stage and r["step"] >= step for r in read_metrics(metrics)
        ):
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            return
        time.sleep(0.05)
    raise AssertionError(f"the run never reached {stage} step {step} (exit code {proc.poll()})")


@pytest.mark.slow  # three runs, about 90 s
def test_a_run_killed_mid_grpo_and_resumed_matches_the_uninterrupted_run(tmp_path: Path) -> None:
    straight = _run(f"out_dir={tmp_path}", "name=straight", *SETTINGS, cwd=tmp_path)
    assert straight.returncode == 0, straight.stderr[-3000:]

    killed = tmp_path / "killed"
    proc = subprocess.Popen([POSTTRAIN, "run", f"out_dir={tmp_path}", "name=killed", *SETTINGS],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                            cwd=tmp_path, env=ENV)  # fmt: skip
    _kill_when(proc, killed / "metrics.jsonl", 4)
    assert proc.returncode == -signal.SIGKILL
    assert (killed / "checkpoints" / "sft" / COMPLETE_MARKER).is_file()
    assert not (killed / "checkpoints" / "grpo" / COMPLETE_MARKER).exists()
    saved = json.loads((killed / "checkpoints" / "grpo-state" / "state.json").read_text())
    assert saved["step"] in (3, 6) and saved["extra"]["trace_high_water_mark"] > 0

    recorded = _trace_ids(killed)
    assert recorded  # rollouts of the steps before the kill were stored

    resumed = _run(f"resume={killed}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected = _grpo_rows(tmp_path / "straight")
    got = _grpo_rows(killed)
    assert [s for s, _, _ in got] == list(range(1, 9))  # lost steps were dropped, then redone
    for (step, loss, reward), (_, loss2, reward2) in zip(expected, got, strict=True):
        assert reward2 == reward, step
        assert abs(loss2 - loss) <= 1e-6, (step, loss, loss2)
    for name in ("sft", "grpo"):
        assert (killed / "evals" / f"{name}.json").is_file()
    assert not (killed / "checkpoints" / "grpo-state").exists()  # removed once GRPO finished
    after = _trace_ids(killed)
    assert set(recorded) <= set(after)  # nothing recorded before the kill was lost
    assert len(after) == len(set(after))  # and no rollout id is stored twice
    straight_grpo = json.loads((tmp_path / "straight" / "evals" / "grpo.json").read_text())
    resumed_grpo = json.loads((killed / "evals" / "grpo.json").read_text())
    assert [t["passed"] for t in resumed_grpo["tasks"]] == [
        t["passed"] for t in straight_grpo["tasks"]
    ]


SFT_SETTINGS = [
    "sft.max_steps=40", "sft.num_examples=64", "sft.eval_every=5", "sft.val_examples=16",
    "sft.save_every=10", "sft.patience=100", "dpo.enabled=false", "grpo.enabled=false",
    "control.enabled=false", "eval.tasks_per_domain=4", "max_new_tokens=24",
]  # fmt: skip


def _sft_rows(run: Path) -> list[tuple[int, float, float]]:
    rows = [r for r in read_metrics(run / "metrics.jsonl") if r["stage"] == "sft"]
    return [(r["step"], r["values"]["loss"], r["values"]["val_loss"]) for r in rows]


@pytest.mark.slow  # three runs, about 60 s
def test_a_run_killed_mid_sft_and_resumed_matches_the_uninterrupted_run(tmp_path: Path) -> None:
    straight = _run(f"out_dir={tmp_path}", "name=straight", *SFT_SETTINGS, cwd=tmp_path)
    assert straight.returncode == 0, straight.stderr[-3000:]
    killed = tmp_path / "killed"
    proc = subprocess.Popen([POSTTRAIN, "run", f"out_dir={tmp_path}", "name=killed",
                             *SFT_SETTINGS], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True, cwd=tmp_path, env=ENV)  # fmt: skip
    _kill_when(proc, killed / "metrics.jsonl", 15, stage="sft")
    assert proc.returncode == -signal.SIGKILL
    assert not (killed / "checkpoints" / "sft" / COMPLETE_MARKER).exists()
    saved = json.loads((killed / "checkpoints" / "sft-state" / "state.json").read_text())
    assert saved["step"] in (10, 20, 30) and saved["elapsed_s"] > 0

    resumed = _run(f"resume={killed}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected, got = _sft_rows(tmp_path / "straight"), _sft_rows(killed)
    assert [s for s, _, _ in got] == list(range(5, 41, 5))  # lost rows dropped, then redone
    for (step, loss, val), (_, loss2, val2) in zip(expected, got, strict=True):
        assert abs(loss2 - loss) <= 1e-6 and abs(val2 - val) <= 1e-6, (step, loss, loss2)
    assert not (killed / "checkpoints" / "sft-state").exists()  # removed once SFT finished
    evals = [json.loads((run / "evals" / "sft.json").read_text()) for run in
             (tmp_path / "straight", killed)]  # fmt: skip
    assert [t["passed"] for t in evals[0]["tasks"]] == [t["passed"] for t in evals[1]["tasks"]]


def test_resume_with_other_settings_is_refused(tmp_path: Path) -> None:
    result = _run(f"resume={tmp_path}", "grpo.steps=3", cwd=tmp_path)
    assert result.returncode == 2
    assert "continues the run under its own config.yaml" in result.stderr
    assert "grpo" in result.stderr


def test_resume_of_a_missing_run_is_a_clear_error(tmp_path: Path) -> None:
    result = _run(f"resume={tmp_path / 'nope'}", cwd=tmp_path)
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_resume_of_a_folder_without_config_yaml_is_refused_writing_nothing(
    tmp_path: Path,
) -> None:
    """It made checkpoints/ in the folder (any folder, given by mistake) before refusing."""
    (tmp_path / "notes.txt").write_text("mine\n")
    with pytest.raises(ConfigError, match=rf"^resume: {tmp_path} has no config\.yaml; is it a run"):
        open_for_resume(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_resume_of_a_folder_with_a_foreign_config_yaml_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("model: gpt2\nlearning_rate: 3\n")
    with pytest.raises(ConfigError) as info:
        open_for_resume(tmp_path)
    assert str(info.value).startswith(f"resume: {tmp_path / 'config.yaml'}: ")
    assert "unknown key 'learning_rate'" in str(info.value)


@pytest.mark.parametrize("text", ["", "# nothing\n", "{}\n"])
def test_resume_with_an_empty_config_yaml_exits_2_naming_the_file(
    tmp_path: Path, text: str
) -> None:
    """It would otherwise resume the run under the defaults."""
    (tmp_path / "config.yaml").write_text(text)
    result = _run(f"resume={tmp_path}", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"resume: {tmp_path / 'config.yaml'}: it is empty" in result.stderr


def test_resume_with_a_config_yaml_that_is_not_a_mapping_exits_2_naming_the_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.yaml").write_text("- seed\n- 3\n")
    result = _run(f"resume={tmp_path}", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"resume: {tmp_path / 'config.yaml'}: " in result.stderr
    assert "must hold a mapping of settings" in result.stderr


def test_a_failed_sft_state_save_leaves_the_previous_state_loadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokenizer = build_tokenizer()
    spec = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    model = build_tiny_model(tokenizer, seed=0, spec=spec)
    optimizer = sft_optimizer(model, SFTConfig())
    path = tmp_path / "sft-state"
    save_sft_state(path, model, optimizer, SFTLoop(step=10), 1.0)
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        for param in model.parameters():
            param.add_(1.0)
    real_move = atomic._move_into_place

    def die_before_moving_in(src: Path, dst: Path) -> None:
        if src.name == ".sft-state.tmp":  # the move that would publish step 20
            raise OSError("killed")
        real_move(src, dst)

    # The move itself (a rename, or an exchange of the two directories) is the store's.
    monkeypatch.setattr(atomic, "_move_into_place", die_before_moving_in)
    with pytest.raises(OSError, match="killed"):
        save_sft_state(path, model, optimizer, SFTLoop(step=20), 2.0)
    monkeypatch.undo()

    assert is_complete(path)
    fresh = build_tiny_model(tokenizer, seed=1, spec=spec)
    loop, elapsed_s = load_sft_state(path, fresh, sft_optimizer(fresh, SFTConfig()))
    assert (loop.step, elapsed_s) == (10, 1.0)
    for name, tensor in fresh.state_dict().items():
        assert torch.equal(tensor, saved[name]), name


def test_a_resumed_lora_dropout_sft_run_matches_the_uninterrupted_run(tmp_path: Path) -> None:
    # LoRA dropout draws its masks from torch's global RNG, which the state must carry.
    from posttrain.config import LoraSettings, ModelConfig
    from posttrain.domains import get_domain
    from posttrain.rollout.episode import replay_references
    from posttrain.train.checkpoint import load_run_policy
    from posttrain.train.mixture import TaskSampler
    from posttrain.train.sft import train_sft

    cfg = SFTConfig(max_steps=8, eval_every=2, patience=100, batch_size=4, micro_batches=1,
                    warmup_steps=2)  # fmt: skip
    model_cfg = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64,
                            lora=LoraSettings(r=4, dropout=0.5))  # fmt: skip

    def fresh() -> Any:
        torch.manual_seed(0)  # as a new process starts
        return load_run_policy(model_cfg, 0)

    policy = fresh()
    tasks = TaskSampler([get_domain("arith/addition-v1")], "sft", range(1, 3), seed=0).sample(16)
    examples = replay_references(tasks, policy.tokenizer, get_domain)
    pad_id = policy.tokenizer.pad_token_id
    state = tmp_path / "sft-state"

    def save_at_4(loop: SFTLoop, optimizer: torch.optim.Optimizer) -> None:
        if loop.step == 4:
            save_sft_state(state, policy.model, optimizer, loop, 0.0)

    straight: list[tuple[int, float]] = []
    train_sft(policy.model, examples, [], cfg, pad_id, stop_on_plateau=False,
              log=lambda s, v: straight.append((s, v["loss"])), on_step=save_at_4)  # fmt: skip
    policy = fresh()
    torch.rand(7)  # the new life's global RNG has moved on differently
    optimizer = sft_optimizer(policy.model, cfg)
    loop, _ = load_sft_state(state, policy.model, optimizer)
    resumed: list[tuple[int, float]] = []
    train_sft(policy.model, examples, [], cfg, pad_id, stop_on_plateau=False,
              log=lambda s, v: resumed.append((s, v["loss"])), optimizer=optimizer,
              resume=loop)  # fmt: skip
    assert [s for s, _ in resumed] == [6, 8]
    assert resumed == [(s, loss) for s, loss in straight if s > 4]


TINY = [
    "model.hidden_size=32", "model.num_layers=1", "model.num_heads=2",
    "model.intermediate_size=64", "sft.max_steps=3", "sft.num_examples=8",
    "sft.eval_every=3", "sft.val_examples=4", "dpo.enabled=false", "control.enabled=false",
    "grpo.steps=2", "grpo.batch_size=4", "grpo.group_size=2", "grpo.minibatch_size=4",
    "eval.tasks_per_domain=1", "eval.every_steps=0", "max_new_tokens=8",
    "logging.tensorboard=false",
]  # fmt: skip


def _run_in_process(*settings: str) -> RecipeResult:
    return run_recipe(load_config(None, list(settings)), QuietReporter())


def test_a_stage_keeps_its_resume_state_until_its_checkpoint_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kill while the final checkpoint is written must leave the state to resume from.
    real = pipeline.save_checkpoint
    state_then: dict[str, bool] = {}

    def save_checkpoint(path: Path, policy: Any, stage: str, step: int, state: Any) -> Path:
        state_then[stage] = is_complete(path.parent / f"{stage}-state")
        return real(path, policy, stage, step, state)

    monkeypatch.setattr(pipeline, "save_checkpoint", save_checkpoint)
    _run_in_process(f"out_dir={tmp_path}", "name=run", *TINY, "sft.save_every=1",
                    "grpo.save_every=1")  # fmt: skip
    assert state_then == {"sft": True, "grpo": True}
    checkpoints = tmp_path / "run" / "checkpoints"
    assert not (checkpoints / "sft-state").exists() and not (checkpoints / "grpo-state").exists()


class _Killed(BaseException):
    """Stands in for SIGKILL: nothing in the run catches it."""


def test_a_resumed_grpo_stage_counts_the_seconds_of_its_earlier_life(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pipeline.save_grpo_state

    def save_then_die(path: Path, state: GRPOState) -> Path:
        state.elapsed_s += 100.0  # as if the first life had trained GRPO that much longer
        real(path, state)
        raise _Killed

    monkeypatch.setattr(pipeline, "save_grpo_state", save_then_die)
    with pytest.raises(_Killed):
        _run_in_process(f"out_dir={tmp_path}", "name=run", *TINY, "grpo.save_every=1")
    monkeypatch.undo()
    saved = load_grpo_state(tmp_path / "run" / "checkpoints" / "grpo-state")
    assert saved is not None and saved.step == 1 and saved.elapsed_s >= 100.0

    result = _run_in_process(f"resume={tmp_path / 'run'}")
    assert result.stages["grpo"]["steps"] == 2
    seconds = result.stages["grpo"]["seconds"]
    assert saved.elapsed_s < seconds < saved.elapsed_s + 60
    ckpt = json.loads((tmp_path / "run/checkpoints/grpo/trainer_state.json").read_text())
    assert ckpt["stats"]["seconds"] == seconds


def test_a_resume_removes_a_state_left_beside_its_stages_checkpoint(tmp_path: Path) -> None:
    # A kill after the final checkpoint is published but before the state is removed.
    _run_in_process(f"out_dir={tmp_path}", "name=run", *TINY)
    checkpoints = tmp_path / "run" / "checkpoints"
    for state in ("sft-state", "grpo-state"):
        (checkpoints / state).mkdir()
        (checkpoints / state / "state.json").write_text('{"step": 2}')
        (checkpoints / state / COMPLETE_MARKER).touch()
    result = _run_in_process(f"resume={tmp_path / 'run'}")
    assert result.stages["grpo"]["steps"] == 2  # loaded, not redone
    assert not (checkpoints / "sft-state").exists() and not (checkpoints / "grpo-state").exists()


def test_a_resume_forgets_the_alerts_of_the_steps_it_redoes(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "run")
    state = run.checkpoint_path("grpo-state")  # saved at step 3, killed at step 5
    state.mkdir()
    (state / "state.json").write_text('{"step": 3}')
    (state / COMPLETE_MARKER).touch()
    alert = {"time": 0.0, "kind": "reward_jump", "metric": "reward", "value": 0.9,
             "threshold": 0.5, "message": "reward jumped"}  # fmt: skip
    run.alerts_path.write_text("".join(
        json.dumps({**alert, "stage": "grpo", "step": s}) + "\n" for s in (2, 5)))  # fmt: skip
    forget_unfinished(run, ("sft", "grpo"))
    assert [a["step"] for a in read_alerts(run.alerts_path)] == [2]


def test_a_resumed_runs_alert_rules_continue_from_the_metrics_it_kept(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "run")
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("grpo", 1, {"skipped_updates": 1.0})  # alerted in the earlier life
        metrics.log("heldout", 1, {"skipped_updates": 9.0})  # not a row the rules saw
        monitor = TrainingMonitor(load_config(None, []), run, [], metrics)
    assert monitor.alerts is not None
    assert monitor.alerts.observe("grpo", 2, {"skipped_updates": 1.0}) == []  # no new skip
    assert [a.kind for a in monitor.alerts.observe("grpo", 3, {"skipped_updates": 2.0})] == [
        "skipped_updates"
    ]
    assert [a["step"] for a in read_alerts(run.alerts_path)] == [3]


def _state(path: Path, text: str | None) -> None:
    """A complete-looking mid-stage state; `text` its state.json (None: none left)."""
    path.mkdir()
    if text is not None:
        (path / "state.json").write_text(text)
    (path / COMPLETE_MARKER).touch()


def test_a_state_half_deleted_beside_its_finished_stage_is_ignored(tmp_path: Path) -> None:
    """A kill inside a plain rmtree of grpo-state left COMPLETE without state.json; every
    later resume died reading it (FileNotFoundError) before anything could clean it up."""
    run = RunDir.create(tmp_path, "run")
    for stage in ("sft", "grpo"):
        run.checkpoint_path(stage).mkdir()
        (run.checkpoint_path(stage) / COMPLETE_MARKER).touch()
        _state(run.checkpoint_path(f"{stage}-state"), None)
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("grpo", 1, {"loss": 1.0})
    assert forget_unfinished(run, STAGES) == 0  # both stages finished: nothing to redo


@pytest.mark.parametrize("text", [None, "{not json", '{"steps": 3}'])
def test_an_unreadable_state_of_an_unfinished_stage_counts_as_none(
    tmp_path: Path, text: str | None
) -> None:
    run = RunDir.create(tmp_path, "run")
    _state(run.checkpoint_path("grpo-state"), text)
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("grpo", 1, {"loss": 1.0})
    assert forget_unfinished(run, STAGES) == 1  # the stage starts over
    prepare_resume(run)  # and no loader reads the state: load_grpo_state had raised on it
    assert not run.checkpoint_path("grpo-state").exists()


def test_a_resume_forgets_evaluation_rows_without_a_results_file(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "run")
    run.evals_dir.mkdir()
    (run.evals_dir / "untrained.json").write_text("{}")
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("eval/untrained", 0, {"completion": 0.5})
        metrics.log("eval/sft", 0, {"completion": 0.5})  # killed before sft.json was saved
    forget_unfinished(run, STAGES)
    assert [r["stage"] for r in read_metrics(run.metrics_path)] == ["eval/untrained"]


def test_a_kill_while_a_finished_stages_state_is_deleted_leaves_the_run_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_rmtree = shutil.rmtree

    def killed_midway(path: Any, *args: Any, **kwargs: Any) -> None:
        name = Path(path).name
        if name == "grpo-state" or name.startswith(".grpo-state.trash-"):
            (Path(path) / "state.json").unlink()  # the first file rmtree happens to take
            raise _Killed
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", killed_midway)
    with pytest.raises(_Killed):
        _run_in_process(f"out_dir={tmp_path}", "name=run", *TINY, "grpo.save_every=1")
    monkeypatch.undo()
    checkpoints = tmp_path / "run" / "checkpoints"
    assert is_complete(checkpoints / "grpo")  # killed in finish("grpo"), after the save
    result = _run_in_process(f"resume={tmp_path / 'run'}")
    assert result.stages["grpo"]["steps"] == 2  # loaded, not redone
    assert sorted(p.name for p in checkpoints.iterdir()) == ["grpo", "sft"]


def test_a_kill_right_after_an_evaluation_is_saved_keeps_its_metrics_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pipeline.save_results

    def save_then_die(path: Path, document: Any) -> None:
        real(path, document)
        if path.name == "sft.json":
            raise _Killed

    monkeypatch.setattr(pipeline, "save_results", save_then_die)
    with pytest.raises(_Killed):
        _run_in_process(f"out_dir={tmp_path}", "name=run", *TINY)
    monkeypatch.undo()
    _run_in_process(f"resume={tmp_path / 'run'}")
    stages = [r["stage"] for r in read_metrics(tmp_path / "run" / "metrics.jsonl")]
    assert [s for s in stages if s.startswith("eval/")] == [
        "eval/untrained",
        "eval/sft",
        "eval/grpo",
    ]
