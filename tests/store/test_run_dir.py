"""The run directory: naming, layout, clear errors, atomic config and summary."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
import yaml

from posttrain.store import run_dir as run_dir_module
from posttrain.store.run_dir import RunDir, RunDirError


def test_create_names_run_by_utc_timestamp(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "runs")
    assert re.fullmatch(r"\d{8}-\d{6}", run.name)
    assert run.path.is_dir()
    assert run.path.parent == tmp_path / "runs"


def test_create_adds_suffix_when_timestamp_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_dir_module, "_utc_stamp", lambda: "20260101-000000")
    names = [RunDir.create(tmp_path).name for _ in range(3)]
    assert names == ["20260101-000000", "20260101-000000-2", "20260101-000000-3"]


def test_create_uses_explicit_name(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, name="baseline")
    assert run.path == tmp_path / "baseline"


def test_create_refuses_existing_explicit_name(tmp_path: Path) -> None:
    RunDir.create(tmp_path, name="baseline")
    with pytest.raises(RunDirError, match=r"baseline already exists; use RunDir\.open"):
        RunDir.create(tmp_path, name="baseline")


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b"])
def test_create_rejects_names_that_are_not_plain(tmp_path: Path, bad: str) -> None:
    with pytest.raises(RunDirError, match="plain folder name"):
        RunDir.create(tmp_path, name=bad)


def test_unwritable_root_raises_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory")
    root = blocker / "runs"
    with pytest.raises(RunDirError) as info:
        RunDir.create(root)
    message = str(info.value)
    assert str(root) in message
    assert "cannot be created: Not a directory" in message


def test_root_that_is_a_file_raises_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.write_text("oops")
    with pytest.raises(RunDirError, match=f"{re.escape(str(root))} cannot be created: it exists"):
        RunDir.create(root)


def test_a_name_too_long_is_blamed_on_the_name_not_the_root(tmp_path: Path) -> None:
    name = "x" * 300
    with pytest.raises(RunDirError) as info:
        RunDir.create(tmp_path, name)
    assert (
        str(info.value) == f"run directory {tmp_path / name} cannot be created: File name too long"
    )


def test_run_dir_error_is_a_value_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError):
        RunDir.create(tmp_path / "f" / "runs")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_read_only_root_raises_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    root.chmod(0o555)
    try:
        with pytest.raises(RunDirError) as info:
            RunDir.create(root)
    finally:
        root.chmod(0o755)
    assert str(info.value) == f"run directory {root} is not writable: Permission denied"


def test_permission_denied_names_root_and_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a non-root user meets in a read-only root, reproduced for runs as root.
    root = tmp_path / "runs"
    root.mkdir()
    real_mkdir = Path.mkdir

    def mkdir_denied_under_root(self: Path, *args: object, **kwargs: object) -> None:
        if self.parent == root:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "mkdir", mkdir_denied_under_root)
    with pytest.raises(RunDirError) as info:
        RunDir.create(root)
    assert str(info.value) == f"run directory {root} is not writable: Permission denied"


def test_paths_follow_the_layout(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, name="r")
    base = tmp_path / "r"
    assert run.config_path == base / "config.yaml"
    assert run.metrics_path == base / "metrics.jsonl"
    assert run.checkpoints == base / "checkpoints"
    assert run.tb_dir == base / "tb"
    assert run.summary_path == base / "summary.md"
    assert run.traces_path == base / "traces.sqlite"
    assert run.checkpoint_path("grpo") == base / "checkpoints" / "grpo"
    assert os.fspath(run) == str(base)


def test_create_makes_checkpoints_folder(tmp_path: Path) -> None:
    assert RunDir.create(tmp_path).checkpoints.is_dir()


def test_checkpoint_path_rejects_escaping_stage(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    with pytest.raises(RunDirError, match="stage"):
        run.checkpoint_path("../elsewhere")


def test_write_config_writes_yaml_in_given_order(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    config = {"model": "tiny", "train": {"lr": 1e-4, "steps": 10}, "domains": ["a", "b"]}
    run.write_config(config)
    text = run.config_path.read_text()
    assert yaml.safe_load(text) == config
    assert text.index("model") < text.index("train") < text.index("domains")
    assert run.read_config() == config


def test_write_config_replaces_previous_config(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    run.write_config({"a": 1})
    run.write_config({"b": 2})
    assert run.read_config() == {"b": 2}


def test_write_summary_writes_markdown(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path)
    run.write_summary("# Run\n\npass@1: 0.625\n")
    assert run.summary_path.read_text() == "# Run\n\npass@1: 0.625\n"


def test_open_returns_existing_run(tmp_path: Path) -> None:
    created = RunDir.create(tmp_path, name="r")
    created.write_config({"seed": 0})
    assert RunDir.open(tmp_path / "r") == created


def test_open_refuses_a_folder_without_config_yaml_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match=r"has no config\.yaml; is it a run directory\?"):
        RunDir.open(tmp_path)
    assert not any(tmp_path.iterdir())  # no checkpoints/ left behind


def test_open_missing_run_raises_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="does not exist"):
        RunDir.open(tmp_path / "nope")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "cannot be read"),
        ("a: [1,\n", "is not valid YAML"),
        ("a: " + "[" * 20000, "is not valid YAML: it nests .* too deeply"),  # a RecursionError
    ],
)
def test_read_config_names_a_missing_or_broken_file(
    tmp_path: Path, text: str | None, message: str
) -> None:
    run = RunDir.create(tmp_path, "run")
    if text is not None:
        run.config_path.write_text(text)
    with pytest.raises(RunDirError, match=f"{re.escape(str(run.config_path))} {message}"):
        run.read_config()


def test_a_run_locked_by_one_holder_is_refused_to_another_naming_the_pid(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "run")
    run.write_config({"seed": 0})
    in_use = rf"^run {re.escape(str(run.path))} is in use \(pid {os.getpid()}\)$"
    with run.lock():
        assert run.lock_path.read_text() == f"{os.getpid()}\n"
        other = RunDir.open(run.path)  # another open file of .lock: as another process
        with pytest.raises(RunDirError, match=in_use), other.lock():
            pass
    with run.lock():  # released at the end of the block
        pass
