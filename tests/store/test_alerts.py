"""Alerts: each condition fires once when it starts, lands in alerts.jsonl and warns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from posttrain.store.alerts import AlertMonitor, AlertThresholds, read_alerts

CALM = {"entropy": 1.0, "completion_tokens": 10.0, "reward": 0.3, "verifier_error_rate": 0.0,
        "sandbox_error_rate": 0.0, "logprob_mismatch": 0.01}  # fmt: skip


def _monitor(tmp_path: Path, warned: list[str]) -> AlertMonitor:
    return AlertMonitor(tmp_path / "alerts.jsonl", AlertThresholds(window=3), warned.append)


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("entropy_collapse", {"entropy": 0.001}),
        ("length_jump", {"completion_tokens": 35.0}),
        ("reward_jump", {"reward": 0.9}),
        ("verifier_errors", {"verifier_error_rate": 0.5}),
        ("sandbox_errors", {"sandbox_error_rate": 0.25}),
        ("logprob_mismatch", {"logprob_mismatch": 2.0}),
        ("skipped_updates", {"skipped_updates": 1.0}),
    ],
)
def test_each_condition_raises_its_alert(tmp_path: Path, kind: str, change: dict) -> None:
    warned: list[str] = []
    monitor = _monitor(tmp_path, warned)
    for step in range(1, 5):
        assert monitor.observe("grpo", step, dict(CALM)) == []
    fired = monitor.observe("grpo", 5, {**CALM, **change})
    assert [a.kind for a in fired] == [kind]
    rows = read_alerts(tmp_path / "alerts.jsonl")
    assert [(r["kind"], r["step"], r["stage"]) for r in rows] == [(kind, 5, "grpo")]
    assert rows[0]["value"] == pytest.approx(next(iter(change.values())))
    assert warned == [rows[0]["message"]] and "step 5" in warned[0]


def test_a_lasting_condition_warns_once_and_again_after_it_clears(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path, [])
    bad = {**CALM, "verifier_error_rate": 0.3}
    kinds = [len(monitor.observe("grpo", s, v)) for s, v in enumerate([bad, bad, bad, CALM, bad])]
    assert kinds == [1, 0, 0, 0, 1]


def test_skipped_updates_fire_when_the_count_grows_in_the_same_stage(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path, [])
    counts = [0.0, 1.0, 2.0, 2.0, 3.0]  # skips at steps 1, 2 (still firing) and 4
    fired = [len(monitor.observe("sft", s, {"skipped_updates": n})) for s, n in enumerate(counts)]
    assert fired == [0, 1, 0, 0, 1]
    assert monitor.observe("dpo", 0, {"skipped_updates": 0.0}) == []  # a stage of its own
    assert "1 optimizer update(s) skipped" in monitor.raised[-1].message


def test_jumps_wait_for_a_full_window_of_history(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path, [])
    assert monitor.observe("grpo", 1, {"completion_tokens": 1.0}) == []
    assert monitor.observe("grpo", 2, {"completion_tokens": 50.0}) == []


def step_of(families: dict[str, tuple[float, float]]) -> dict[str, float]:
    """A mixture step's metrics: per family (tokens, reward), and their overall means."""
    values = {f"by_family/{f}/{k}": v for f, pair in families.items()
              for k, v in zip(("tokens", "reward"), pair, strict=True)}  # fmt: skip
    values["completion_tokens"] = sum(t for t, _ in families.values()) / len(families)
    values["reward"] = sum(r for _, r in families.values()) / len(families)
    return values


def test_on_a_mixture_each_family_is_compared_with_its_own_past(tmp_path: Path) -> None:
    """Drawing a family with long episodes or high reward is no jump; a family whose
    own length doubles is, and the alert names it."""
    monitor = _monitor(tmp_path, [])
    for step in range(1, 5):
        assert monitor.observe("grpo", step, step_of({"arith": (5.0, 0.3)})) == []
        assert monitor.observe("grpo", 10 + step, step_of({"tools": (60.0, 1.0)})) == []
    assert monitor.observe("grpo", 20, step_of({"arith": (5.0, 0.3), "tools": (60.0, 1.0)})) == []
    fired = monitor.observe("grpo", 21, step_of({"arith": (12.0, 0.3), "tools": (61.0, 1.0)}))
    assert [(a.kind, a.metric) for a in fired] == [("length_jump", "by_family/arith/tokens")]
    assert "family arith: completion length jumped to 12 tokens" in fired[0].message


def test_missing_metrics_and_non_finite_jump_metrics_are_not_checked(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path, [])
    for step in range(1, 5):
        monitor.observe("grpo", step, {"reward": 0.3, "completion_tokens": 10.0})
    nan, inf = float("nan"), float("inf")
    assert monitor.observe("grpo", 5, {"reward": inf, "completion_tokens": nan}) == []
    assert not (tmp_path / "alerts.jsonl").exists()


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("entropy_collapse", {"entropy": float("nan")}),
        ("entropy_collapse", {"entropy": float("inf")}),
        ("sandbox_errors", {"sandbox_error_rate": float("-inf")}),
        ("logprob_mismatch", {"logprob_mismatch": float("nan")}),
        ("logprob_mismatch", {"logprob_mismatch": float("inf")}),
        ("verifier_errors", {"verifier_error_rate": float("nan")}),
    ],
)
def test_a_threshold_metric_that_is_not_finite_fires_with_a_null_value(
    tmp_path: Path, kind: str, change: dict
) -> None:
    # NaN weights give a NaN entropy and mismatch: the run is broken, and no alert fired.
    warned: list[str] = []
    fired = _monitor(tmp_path, warned).observe("grpo", 1, {**CALM, **change})
    assert [a.kind for a in fired] == [kind]
    assert "not finite" in warned[0]
    line = (tmp_path / "alerts.jsonl").read_text().splitlines()[0]
    assert json.loads(line, parse_constant=lambda name: pytest.fail(name))["value"] is None


def test_alert_lines_are_strict_json(tmp_path: Path) -> None:
    monitor = _monitor(tmp_path, [])
    monitor.observe("grpo", 1, {"entropy": 0.0})
    line = (tmp_path / "alerts.jsonl").read_text().splitlines()[0]
    assert set(json.loads(line)) == {"time", "stage", "step", "kind", "metric", "value",
                                     "threshold", "message"}  # fmt: skip


def _tear_last_line(path: Path) -> None:
    """Leave `path` as a `kill -9` halfway through writing its last line would."""
    text = path.read_text()
    last = text.splitlines(keepends=True)[-1]
    path.write_text(text + last[: len(last) // 2])


def test_an_alert_after_a_torn_last_line_is_kept_whole(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    _monitor(tmp_path, []).observe("grpo", 1, {"entropy": 0.001})
    _tear_last_line(path)
    _monitor(tmp_path, []).observe("grpo", 7, {"entropy": 0.001})  # the resumed run
    assert [r["step"] for r in read_alerts(path)] == [1, 7]
    assert len(path.read_text().splitlines()) == 2


def test_read_alerts_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    _monitor(tmp_path, []).observe("grpo", 1, {"entropy": 0.001})
    _tear_last_line(path)
    assert [r["step"] for r in read_alerts(path)] == [1]


def test_read_alerts_names_a_bad_line_before_the_last(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    monitor = _monitor(tmp_path, [])
    monitor.observe("grpo", 1, {"entropy": 0.001})
    path.write_text(path.read_text() + "not json\n")
    monitor.observe("sft", 2, {"entropy": 0.001})
    with pytest.raises(ValueError, match=re.escape(f"{path}:2: not a JSON line")):
        read_alerts(path)


def test_a_monitor_that_replays_the_kept_rows_raises_what_the_uninterrupted_one_would(
    tmp_path: Path,
) -> None:
    nan = float("nan")
    steps = [CALM, CALM, CALM, {**CALM, "entropy": nan}, {**CALM, "entropy": nan},
             {**CALM, "completion_tokens": 35.0, "skipped_updates": 1.0},
             {**CALM, "skipped_updates": 1.0}, {**CALM, "reward": 0.9}]  # fmt: skip
    straight = AlertMonitor(tmp_path / "a.jsonl", AlertThresholds(window=3))
    expected = [[a.kind for a in straight.observe("grpo", s, v)] for s, v in enumerate(steps)]
    assert expected[3:6] == [["entropy_collapse"], [], ["skipped_updates", "length_jump"]]
    for cut in range(len(steps)):  # rows as metrics.jsonl keeps them: NaN written as null
        kept = [{"stage": "grpo", "step": s, "time": 0.0,
                 "values": {k: (None if x != x else x) for k, x in v.items()}}
                for s, v in enumerate(steps[:cut])]  # fmt: skip
        resumed = AlertMonitor(tmp_path / f"b{cut}.jsonl", AlertThresholds(window=3))
        resumed.replay(kept)
        assert resumed.raised == [] and not (tmp_path / f"b{cut}.jsonl").exists()
        got = [
            [a.kind for a in resumed.observe("grpo", s, steps[s])] for s in range(cut, len(steps))
        ]
        assert got == expected[cut:], cut
