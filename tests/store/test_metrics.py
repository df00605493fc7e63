"""Metrics logging: JSON lines flushed per call, TensorBoard scalars, crash-torn lines."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from posttrain.store.metrics import MetricsLogger, read_metrics, rewrite_tensorboard
from posttrain.store.run_dir import RunDir


def _tensorboard_scalars(tb_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Read every scalar from the TFRecord event files under `tb_dir`."""
    from tensorboardX.proto.event_pb2 import Event

    scalars: dict[str, list[tuple[int, float]]] = {}
    for events_file in sorted(tb_dir.glob("events.out.tfevents.*")):
        data = events_file.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            record = data[pos + 12 : pos + 12 + length]  # skip length and its crc
            pos += 12 + length + 4  # and the record's crc
            event = Event.FromString(record)
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


@pytest.fixture
def run(tmp_path: Path) -> RunDir:
    return RunDir.create(tmp_path, name="run")


def test_metrics_jsonl_and_tensorboard_written(run: RunDir) -> None:
    with MetricsLogger(run) as metrics:
        metrics.log("sft", 1, {"loss": 2.5})
        metrics.log("sft", 2, {"loss": 1.5, "lr": 1e-4})
    rows = read_metrics(run.metrics_path)
    assert [(r["stage"], r["step"], r["values"]) for r in rows] == [
        ("sft", 1, {"loss": 2.5}),
        ("sft", 2, {"loss": 1.5, "lr": 1e-4}),
    ]
    assert all(isinstance(r["time"], float) for r in rows)
    scalars = _tensorboard_scalars(run.tb_dir)
    assert scalars["sft/loss"] == [(1, 2.5), (2, 1.5)]
    assert scalars["sft/lr"] == [(2, pytest.approx(1e-4))]


def test_each_log_is_flushed_before_close(run: RunDir) -> None:
    metrics = MetricsLogger(run, tensorboard=False)
    metrics.log("grpo", 7, {"reward/mean": 0.25})
    assert json.loads(run.metrics_path.read_text())["values"] == {"reward/mean": 0.25}
    metrics.close()


def test_non_finite_values_written_as_null(run: RunDir) -> None:
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("dpo", 0, {"nan": math.nan, "inf": math.inf, "ok": 1.0})
    line = run.metrics_path.read_text()
    assert "NaN" not in line and "Infinity" not in line
    assert json.loads(line)["values"] == {"nan": None, "inf": None, "ok": 1.0}


def test_integer_and_numpy_values_are_logged_as_floats(run: RunDir) -> None:
    import numpy as np

    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("sft", 3, {"tokens": 512, "loss": np.float32(0.5)})  # type: ignore[dict-item]
    assert read_metrics(run.metrics_path)[0]["values"] == {"tokens": 512.0, "loss": 0.5}


def test_non_numeric_value_raises_type_error(run: RunDir) -> None:
    with (
        MetricsLogger(run, tensorboard=False) as metrics,
        pytest.raises(TypeError, match="sft/name must be a number"),
    ):
        metrics.log("sft", 0, {"name": "tiny"})  # type: ignore[dict-item]


def test_log_after_close_raises(run: RunDir) -> None:
    metrics = MetricsLogger(run, tensorboard=False)
    metrics.close()
    metrics.close()
    with pytest.raises(RuntimeError, match="after close"):
        metrics.log("sft", 0, {"loss": 1.0})


def test_tensorboard_off_writes_no_event_files(run: RunDir) -> None:
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("sft", 0, {"loss": 1.0})
    assert not run.tb_dir.exists()


def test_second_logger_appends_to_same_file(run: RunDir) -> None:
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("sft", 0, {"loss": 1.0})
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("sft", 1, {"loss": 0.5})
    assert [r["step"] for r in read_metrics(run.metrics_path)] == [0, 1]


def test_reopened_logger_cuts_torn_last_line(run: RunDir) -> None:
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("sft", 0, {"loss": 1.0})
    with open(run.metrics_path, "a") as f:
        f.write('{"stage": "sft", "step": 1, "val')  # a write cut short by kill -9
    with MetricsLogger(run, tensorboard=False) as metrics:
        metrics.log("sft", 1, {"loss": 0.5})
    assert [r["step"] for r in read_metrics(run.metrics_path)] == [0, 1]
    assert len(run.metrics_path.read_text().splitlines()) == 2


def test_read_metrics_skips_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"stage": "sft", "step": 0, "time": 0.0, "values": {}}\n{"stage": "s')
    assert [r["step"] for r in read_metrics(path)] == [0]


def test_read_metrics_rejects_malformed_interior_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('not json\n{"stage": "sft", "step": 0, "time": 0.0, "values": {}}\n')
    with pytest.raises(ValueError, match=r"metrics\.jsonl:1"):
        read_metrics(path)


def test_rewrite_tensorboard_keeps_exactly_the_rows_of_metrics_jsonl(run: RunDir) -> None:
    with MetricsLogger(run) as metrics:
        for step in (1, 2, 3):
            metrics.log("grpo", step, {"loss": float(step)})
        metrics.log("sft", 9, {"loss": math.nan})
    lines = run.metrics_path.read_text().splitlines()
    run.metrics_path.write_text("\n".join(lines[:1] + lines[3:]) + "\n")  # steps 2, 3 dropped
    rewrite_tensorboard(run)
    scalars = _tensorboard_scalars(run.tb_dir)
    assert scalars["grpo/loss"] == [(1, 1.0)]
    assert scalars["sft/loss"][0][0] == 9 and math.isnan(scalars["sft/loss"][0][1])


class _FakeRun:
    def __init__(self, calls: list) -> None:
        self.calls = calls

    def log(self, row: dict) -> None:
        self.calls.append(("log", row))

    def finish(self) -> None:
        self.calls.append(("finish",))


def test_wandb_mirrors_every_row_in_offline_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    calls: list = []
    fake = types.ModuleType("wandb")
    fake.init = lambda **kw: calls.append(("init", kw)) or _FakeRun(calls)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", fake)
    run = RunDir.create(tmp_path)
    with MetricsLogger(run, tensorboard=False, wandb=True, wandb_config={"seed": 0}) as m:
        m.log("grpo", 3, {"reward": 0.5})
    assert calls[0][0] == "init" and calls[0][1]["mode"] == "offline"
    assert calls[0][1]["dir"] == str(run.path) and calls[0][1]["config"] == {"seed": 0}
    assert calls[1] == ("log", {"grpo/reward": 0.5, "grpo/step": 3})
    assert calls[-1] == ("finish",)


def test_wandb_without_the_package_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from posttrain.store.metrics import WandbMissing

    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    with pytest.raises(WandbMissing, match="pip install wandb"):
        MetricsLogger(RunDir.create(tmp_path), tensorboard=False, wandb=True)


@pytest.mark.parametrize(
    "line", ['{"stage": "grpo", "step": 0, "time": 1.0}', "42", '{"stage": 1, "step": 0}']
)
def test_a_record_without_the_logged_shape_is_named_by_its_line(tmp_path: Path, line: str) -> None:
    # JSON of another shape had gone through, and a resume then died on KeyError 'values'.
    path = tmp_path / "metrics.jsonl"
    good = '{"stage": "sft", "step": 1, "time": 1.0, "values": {"loss": 1.0}}'
    path.write_text(f"{good}\n{line}\n{good}\n")
    with pytest.raises(ValueError, match=r"metrics.jsonl:2: not a metrics record"):
        read_metrics(path)
