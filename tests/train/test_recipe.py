"""run_recipe's start-up checks: what the config alone cannot see (an uninstalled
package, a held-out set the domains cannot fill) exits 2 through `posttrain run`,
naming the field, before the run directory exists or the pipeline is built."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from posttrain.cli import app
from posttrain.config import ConfigError
from posttrain.train.recipe import check_ray_address

Invoke = Callable[..., Result]


class PipelineReached(Exception):
    pass


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Invoke:
    """`posttrain run ... out_dir=tmp/runs` in-process, the pipeline replaced by a tripwire."""
    from posttrain.train import pipeline

    def tripwire(*args: object, **kwargs: object) -> None:
        raise PipelineReached

    monkeypatch.setattr(pipeline.Pipeline, "__init__", tripwire)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(app, ["run", f"out_dir={tmp_path / 'runs'}", *args])

    return invoke


def test_the_ray_backend_without_ray_installed_exits_2_before_the_run_directory(
    run: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if posttrain[ray] was not installed
    result = run("rollout.backend=ray")
    assert result.exit_code == 2, result.output
    assert "rollout.backend=ray" in result.output and "pip install" in result.output
    assert not (tmp_path / "runs").exists()


def test_the_ray_backend_is_not_needed_when_grpo_is_off(
    run: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    result = run("rollout.backend=ray", "grpo.enabled=false")
    assert isinstance(result.exception, PipelineReached), result.output


def test_a_heldout_set_the_domains_cannot_fill_exits_2_before_the_run_directory(
    run: Invoke, tmp_path: Path
) -> None:
    result = run("eval.difficulties=[1]", "eval.tasks_per_domain=200")
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())  # rich wraps long lines
    assert "eval.tasks_per_domain=200 with eval.difficulties=[1]" in output
    assert "arith/addition-v1" in output
    assert not (tmp_path / "runs").exists()


def test_a_heldout_set_that_fits_reaches_the_pipeline(run: Invoke) -> None:
    result = run("eval.difficulties=[1]", "eval.tasks_per_domain=2")
    assert isinstance(result.exception, PipelineReached), result.output


def test_a_reward_component_no_verdict_has_exits_2_before_the_run_directory(
    run: Invoke, tmp_path: Path
) -> None:
    result = run("grpo.reward_component=digitz")
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    assert "grpo.reward_component='digitz'" in output and "digits" in output
    assert not (tmp_path / "runs").exists()


def test_a_reward_component_a_verdict_has_reaches_the_pipeline(run: Invoke) -> None:
    result = run("grpo.reward_component=digits")
    assert isinstance(result.exception, PipelineReached), result.output


def _closed_port() -> int:
    with socket.socket() as probe:  # bound, never listening: nothing answers there
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_ray_address_nobody_answers_exits_2_before_the_run_directory(
    run: Invoke, tmp_path: Path
) -> None:
    # It had evaluated and trained SFT, then hung where GRPO joined the cluster.
    result = run("rollout.backend=ray", f"rollout.ray_address=127.0.0.1:{_closed_port()}")
    assert result.exit_code == 2, result.output
    assert "no Ray cluster answers" in " ".join(result.output.split())
    assert not (tmp_path / "runs").exists()


def test_a_ray_address_that_answers_passes_and_a_malformed_one_is_named() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_ray_address(f"127.0.0.1:{server.getsockname()[1]}")
        check_ray_address(f"ray://127.0.0.1:{server.getsockname()[1]}")
    check_ray_address("auto")  # Ray's own lookup
    with pytest.raises(ConfigError, match="expected host:port"):
        check_ray_address("cluster-without-port")


def test_a_turn_budget_the_models_window_cannot_hold_exits_2(tmp_path: Path) -> None:
    # Every episode had failed before its first token and the run finished "trained".
    result = CliRunner().invoke(
        app, ["run", f"out_dir={tmp_path}", "model.max_positions=128", "max_new_tokens=200"]
    )
    assert result.exit_code == 2, result.output
    assert "max_new_tokens=200" in result.output and "window of 128" in result.output
