"""What `report.html` reads from a run directory: config, metrics, evaluations, alerts,
GRPO's traces and each stage's trainer state, with a note for every source that is
missing or unreadable (a report of a half-finished run says what it lacks).

    files = load_run(RunDir(path))     # files.notes: source -> why it is missing
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from posttrain.eval.results import ResultsFileError, load_results
from posttrain.store.metrics import read_metrics
from posttrain.store.run_dir import RunDir, load_yaml

CHECKPOINTS = ("untrained", "sft", "dpo", "grpo", "control")


@dataclass
class RunFiles:
    path: Path
    notes: dict[str, str] = field(default_factory=dict)  # source -> why it is missing
    config: dict[str, Any] = field(default_factory=dict)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    evals: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> results doc
    eval_errors: list[str] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    rewards: list[tuple[int, float]] = field(default_factory=list)  # GRPO (step, reward)
    failures: dict[str, tuple[int, int]] = field(default_factory=dict)  # GRPO failed, total

    def rows(self, stage: str) -> list[dict[str, Any]]:
        return [r for r in self.metrics if r.get("stage") == stage]


def load_run(run: RunDir) -> RunFiles:
    r = RunFiles(run.path)
    if not run.config_path.is_file():
        r.notes["config"] = "config.yaml is missing"
    else:
        try:
            data = load_yaml(run.config_path.read_text(encoding="utf-8"))
            r.config = data if isinstance(data, dict) else {}
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
            r.notes["config"] = f"config.yaml cannot be read: {exc}"
    if not run.metrics_path.is_file():
        r.notes["metrics"] = "metrics.jsonl is missing"
    else:
        try:
            r.metrics = [m for m in read_metrics(run.metrics_path) if isinstance(m, dict)]
        except (OSError, ValueError) as exc:
            r.notes["metrics"] = f"metrics.jsonl cannot be read: {exc}"
        if not r.metrics and "metrics" not in r.notes:
            r.notes["metrics"] = "metrics.jsonl is empty"
    files = sorted(run.evals_dir.glob("*.json")) if run.evals_dir.is_dir() else []
    rank = {label: i for i, label in enumerate(CHECKPOINTS)}
    for file in sorted(files, key=lambda f: (rank.get(f.stem, len(rank)), f.stem)):
        try:
            r.evals[file.stem] = load_results(file)
        except ResultsFileError as exc:
            r.eval_errors.append(str(exc))
    r.alerts = _read_alerts(run.alerts_path, r.notes)
    _read_traces(run.traces_path, r)
    return r


def _read_alerts(path: Path, notes: dict[str, str]) -> list[dict[str, Any]]:
    if not path.is_file():
        notes["alerts"] = "no alerts.jsonl: no alert fired (the file is written by the first)"
        return []
    alerts, bad = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.strip():
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                item = None
            if isinstance(item, dict):
                alerts.append(item)
            else:
                bad += 1
    if bad:
        notes["alerts"] = f"{bad} line(s) of alerts.jsonl are not JSON objects and were skipped"
    return alerts


def _read_traces(path: Path, r: RunFiles) -> None:
    if not path.is_file():
        r.notes["traces"] = "traces.sqlite is missing"
        return
    try:
        # quoted: a `#`, `?` or `%` in the run's path would change the URI's meaning
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
        try:
            r.rewards = [
                (int(step), float(reward))
                for step, reward in conn.execute(
                    "SELECT policy_version, reward FROM rollouts WHERE stage = 'grpo'"
                )
            ]
            for domain, failed, total in conn.execute(
                "SELECT domain, SUM(passed = 0), COUNT(*) FROM rollouts"
                " WHERE stage = 'grpo' GROUP BY domain ORDER BY domain"
            ):
                r.failures[str(domain)] = (int(failed), int(total))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        r.notes["traces"] = f"traces.sqlite cannot be read: {exc}"


def stage_steps_seconds(
    run: RunDir, stage: str, rows: list[dict[str, Any]]
) -> tuple[int, float | None, str]:
    """A stage's steps and seconds: from its checkpoint's trainer state, else from the
    metrics it logged (the last logged step, which trails the last step taken when a
    stage logs every k steps)."""
    state = run.checkpoint_path(stage) / "trainer_state.json"
    try:
        saved = json.loads(state.read_text(encoding="utf-8"))
        seconds = float(saved["stats"]["seconds"])
        return int(saved["step"]), seconds, f"checkpoints/{stage}/trainer_state.json"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    steps = max((int(row.get("step", 0)) for row in rows), default=0)
    times = [row["time"] for row in rows if isinstance(row.get("time"), int | float)]
    if len(times) < 2:
        return steps, None, ""
    return steps, max(times) - min(times), "metrics.jsonl (first to last logged step)"
