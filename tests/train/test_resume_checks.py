"""What `posttrain run resume=RUN` checks and tidies before the stages start: the run's
lock, leftovers of crashed saves, the lost attempt's TensorBoard steps, malformed
metrics lines, changed data files and settings given beside `resume=`. The pipeline is
a tripwire here: all of it happens before it is built."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from posttrain.cli import app
from posttrain.config import ConfigError, RunConfig, load_config
from posttrain.store import COMPLETE_MARKER, RunDirError
from posttrain.store.metrics import MetricsLogger
from posttrain.store.run_dir import RunDir
from posttrain.train import pipeline
from posttrain.train.recipe import run_recipe
from posttrain.train.resume import unlogged_rows
from tests.store.test_metrics import _tensorboard_scalars


class PipelineReached(Exception):
    pass


@pytest.fixture(autouse=True)
def tripwire(monkeypatch: pytest.MonkeyPatch) -> None:
    def reached(*args: object, **kwargs: object) -> None:
        raise PipelineReached

    monkeypatch.setattr(pipeline.Pipeline, "__init__", reached)


def _new_run(root: Path, *settings: str) -> Path:
    """A run directory as `posttrain run` leaves it just before its first stage."""
    with pytest.raises(PipelineReached):
        run_recipe(load_config(None, [f"out_dir={root}", "name=run", *settings]))
    return root / "run"


def _resume(run: Path, *settings: str) -> None:
    run_recipe(load_config(None, [f"resume={run}", *settings]))


def _complete(path: Path, state: dict[str, int] | None = None) -> None:
    path.mkdir()
    if state is not None:
        (path / "state.json").write_text(json.dumps(state))
    (path / COMPLETE_MARKER).touch()


def test_a_resume_of_a_run_in_use_is_refused_naming_its_pid(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    with open(run / ".lock", "w") as held:  # the process running it
        held.write("4242\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(RunDirError, match=rf"^run {run} is in use \(pid 4242\)$"):
            _resume(run)
    with pytest.raises(PipelineReached):  # once it has ended
        _resume(run)


def test_a_run_in_use_exits_2_with_one_line(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    with RunDir(run).lock():
        result = CliRunner().invoke(app, ["run", f"resume={run}"])
    assert result.exit_code == 2, result.output
    assert "is in use (pid" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_resume_sweeps_leftovers_of_crashed_saves(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    checkpoints = run / "checkpoints"
    _complete(checkpoints / "sft")
    for name in (".sft.old-123", ".grpo-state.tmp-k2j3h4x1", ".grpo-state.trash-ab12cd34",
                 ".dpo.old-77"):  # fmt: skip
        _complete(checkpoints / name)
    (run / ".summary.md.x1y2z3ab.tmp").write_text("half")
    with pytest.raises(PipelineReached):
        _resume(run)
    assert sorted(p.name for p in checkpoints.iterdir()) == ["dpo", "sft"]  # dpo: put back
    assert not (run / ".summary.md.x1y2z3ab.tmp").exists()


def test_a_resume_drops_the_lost_steps_from_tensorboard_too(tmp_path: Path) -> None:
    run = _new_run(tmp_path, "logging.tensorboard=true")
    with MetricsLogger(RunDir(run)) as metrics:
        for step in range(1, 5):
            metrics.log("sft", step, {"loss": 1.0})
        for step in range(1, 4):
            metrics.log("grpo", step, {"loss": 0.5})
    _complete(run / "checkpoints" / "sft")
    _complete(run / "checkpoints" / "grpo-state", {"step": 2})  # killed in step 3
    with pytest.raises(PipelineReached):
        _resume(run)
    scalars = _tensorboard_scalars(run / "tb")
    assert [s for s, _ in scalars["grpo/loss"]] == [1, 2]  # step 3 is redone
    assert [s for s, _ in scalars["sft/loss"]] == [1, 2, 3, 4]  # a finished stage's, all kept


def test_a_malformed_metrics_line_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    row = '{"stage": "sft", "step": 1, "time": 0.0, "values": {}}\n'
    (run / "metrics.jsonl").write_text(row + '{"stage": "sft", "st\n' + row)
    result = CliRunner().invoke(app, ["run", f"resume={run}"])
    assert result.exit_code == 2, result.output
    assert f"resume: {run / 'metrics.jsonl'}:2: not a JSON line" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_relative_data_file_is_stored_absolute_and_checked_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data" / "sft.jsonl"
    data.parent.mkdir()
    data.write_text('{"messages": []}\n')
    monkeypatch.chdir(data.parent)
    run = _new_run(tmp_path, "sft.data_file=sft.jsonl")
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["sft"]["data_file"] == str(data)
    monkeypatch.chdir(tmp_path)  # another directory, the same file: it resumes
    with pytest.raises(PipelineReached):
        _resume(run)
    data.write_text('{"messages": {}}\n')  # the same size, other content
    with pytest.raises(ConfigError, match=rf"^resume: sft.data_file {data} has changed since"):
        _resume(run)


def test_a_resume_refuses_a_setting_given_at_its_default(tmp_path: Path) -> None:
    run = _new_run(tmp_path)
    default = RunConfig().grpo.steps
    with pytest.raises(ConfigError, match=r"drop the other settings \(grpo\.steps\)"):
        _resume(run, f"grpo.steps={default}")


def test_rows_a_kill_left_unlogged_are_those_metrics_jsonl_lacks(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "run")
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("control", 5, {"loss": 1.0})
        metrics.log("sft", 10, {"loss": 2.0})
    saved = [(5, {"loss": 1.0}), (10, {"loss": 0.5})]
    assert unlogged_rows(run, "control", saved) == [(10, {"loss": 0.5})]
    assert unlogged_rows(run, "grpo", []) == []


def test_a_datasets_relative_path_is_stored_absolute_and_checked_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data" / "caps.jsonl"
    data.parent.mkdir()
    rows = [{"prompt": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(400)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.chdir(data.parent)
    spec = "datasets=[{id: mine/plus-one-v1, path: caps.jsonl, verifier: exact}]"
    run = _new_run(tmp_path, spec, "domains=[mine/plus-one-v1]", "eval.tasks_per_domain=4")
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["datasets"][0]["path"] == str(data)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PipelineReached):
        _resume(run)
    data.write_text(data.read_text().replace('"1"', '"7"'))
    with pytest.raises(
        ConfigError, match=r"datasets\[0\]\.path \(mine/plus-one-v1\) .* has changed"
    ):
        _resume(run)
