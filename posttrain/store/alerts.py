"""Alerts: training metrics that cross a threshold become warnings and `alerts.jsonl` lines.

    monitor = AlertMonitor(run.alerts_path, AlertThresholds(entropy_min=0.05), warn=print)
    for alert in monitor.observe("grpo", step, values):   # values: one step's metrics
        ...                                               # already written and warned

Kinds, each read from the step's metric of that name:

    entropy_collapse   "entropy" (mean sampled-token entropy, nats) below `entropy_min`
    length_jump        "completion_tokens" above `length_ratio` × the mean of the last
                       `window` steps (a sudden rise in length: a reward-hacking sign)
    reward_jump        "reward" above the mean of the last `window` steps by `reward_rise`
    verifier_errors    "verifier_error_rate" (verdicts whose verifier raised) above
                       `verifier_error_rate`
    sandbox_errors     "sandbox_error_rate" (episodes whose session or sandbox failed)
                       above `sandbox_error_rate`
    logprob_mismatch   "logprob_mismatch" (mean |train − rollout| token logprob) above
                       `logprob_mismatch`
    skipped_updates    "skipped_updates" (a stage's optimizer updates skipped for
                       non-finite gradients, `train/step_guard.py`) above its last value

When a step logs per-family figures (`by_family/{family}/tokens` and `.../reward`, as
GRPO does), the two jump rules compare each family with its own last `window` steps
that drew it instead: on a mixture, a step that happens to draw a family with long
episodes (a tool domain's 60 tokens among additions' 5) is not a jump.

A line of `alerts.jsonl`: `{"time", "stage", "step", "kind", "metric", "value",
"threshold", "message"}`. An alert fires when its condition starts and again only
after the condition has cleared, so a collapsed run warns once, not every step.
The jump rules wait for `window` steps of history and pass over a NaN or infinite
figure; the other rules fire on one (its line's `value` is then null).

Not guaranteed: thresholds are heuristics, not proofs — a legitimately fast learner
can trip `reward_jump`, and a family's reward moves with the difficulties a step
happens to draw; a metric a trainer does not log is never checked. Lines are
flushed, not fsynced; a `kill -9` mid-write can tear the last line, which `read_alerts`
skips and the next alert written cuts off.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from posttrain.store.metrics import open_for_append


@dataclass(frozen=True)
class AlertThresholds:
    entropy_min: float = 0.02
    length_ratio: float = 2.0
    reward_rise: float = 0.35
    verifier_error_rate: float = 0.02
    sandbox_error_rate: float = 0.05
    logprob_mismatch: float = 0.5
    window: int = 10


@dataclass(frozen=True)
class Alert:
    time: float
    stage: str
    step: int
    kind: str
    metric: str
    value: float
    threshold: float
    message: str


class AlertMonitor:
    """Checks each step's metrics against `thresholds`; appends alerts to `path`."""

    def __init__(
        self,
        path: Path,
        thresholds: AlertThresholds | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.t = thresholds or AlertThresholds()
        self.warn = warn
        self._history: dict[tuple[str, str], deque[float]] = {}
        self._active: set[tuple[str, str, str]] = set()
        self._skipped: dict[str, float] = {}  # a stage's last "skipped_updates"
        self.raised: list[Alert] = []

    def observe(self, stage: str, step: int, values: dict[str, float]) -> list[Alert]:
        fired = self._apply(stage, step, values)
        for alert in fired:
            self._write(alert)
        self.raised += fired
        return fired

    def replay(self, rows: Iterable[dict[str, Any]]) -> None:
        """Bring the rules to where they stood after `rows` (`read_metrics` rows, oldest
        first: those a resumed run kept), writing and warning nothing, so the resumed run
        raises exactly the alerts the uninterrupted one would: history windows, the
        conditions already alerted and the skipped-update counts carry over. A value
        the metrics file holds as null (it was NaN or infinite) is replayed as NaN."""
        for row in rows:
            values = {k: math.nan if v is None else float(v) for k, v in row["values"].items()}
            self._apply(str(row["stage"]), int(row["step"]), values)

    def _apply(self, stage: str, step: int, values: dict[str, float]) -> list[Alert]:
        """Run every rule on one step's `values`, updating their state; the alerts fired."""
        t = self.t
        fired: list[Alert] = []

        def check(kind: str, metric: str, bad: bool, threshold: float, message: str) -> None:
            key = (stage, kind, metric)
            if not bad:
                self._active.discard(key)
                return
            if key in self._active:
                return
            self._active.add(key)
            value = float(values[metric])
            fired.append(Alert(time.time(), stage, int(step), kind, metric, value, threshold,
                               f"{stage} step {step}: {message}"))  # fmt: skip

        # A threshold metric that is NaN or infinite is bad too: NaN weights give a NaN
        # entropy and mismatch, the very breakage these rules are for.
        if values.get("entropy") is not None:
            e = float(values["entropy"])
            low = not (math.isfinite(e) and e >= t.entropy_min)  # +inf is no healthy figure
            check("entropy_collapse", "entropy", low, t.entropy_min,
                  f"entropy collapsed to {e:.4g} nats/token (threshold {t.entropy_min})"
                  + _not_finite(e))  # fmt: skip
        for kind, metric, threshold, what in (
            ("verifier_errors", "verifier_error_rate", t.verifier_error_rate, "verifier errors"),
            ("sandbox_errors", "sandbox_error_rate", t.sandbox_error_rate, "sandbox/session errors"),
            ("logprob_mismatch", "logprob_mismatch", t.logprob_mismatch, "train/rollout logprob mismatch"),
        ):  # fmt: skip
            if values.get(metric) is not None:
                v = float(values[metric])
                check(
                    kind,
                    metric,
                    not (math.isfinite(v) and v <= threshold),
                    threshold,
                    f"{what} at {v:.4g} (threshold {threshold})" + _not_finite(v),
                )
        if values.get("skipped_updates") is not None:
            n, before = float(values["skipped_updates"]), self._skipped.get(stage, 0.0)
            self._skipped[stage] = n
            check("skipped_updates", "skipped_updates", n > before, before,
                  f"{n - before:g} optimizer update(s) skipped for non-finite gradients "
                  f"since the stage's last metrics row ({n:g} in the stage)")  # fmt: skip
        families = sorted(
            {
                k.split("/")[1]
                for k in values
                if k.startswith("by_family/") and k.endswith("/tokens")
            }
        )
        for prefix in [f"by_family/{f}/" for f in families] or [""]:
            self._jump(
                stage,
                values,
                "length_jump",
                prefix + ("tokens" if prefix else "completion_tokens"),
                check,
            )
            self._jump(stage, values, "reward_jump", prefix + "reward", check)
        return fired

    def _jump(self, stage: str, values: dict[str, float], kind: str, metric: str,
              check: Callable[..., None]) -> None:  # fmt: skip
        v = values.get(metric)
        if v is None or not math.isfinite(float(v)):
            return
        v = float(v)
        past = self._history.setdefault((stage, metric), deque(maxlen=self.t.window))
        family = metric.split("/")[1] if metric.startswith("by_family/") else None
        whose = f"family {family}: " if family else ""
        steps = (
            f"its last {len(past)} steps drawing it" if family else f"the last {len(past)} steps"
        )
        if len(past) == self.t.window:
            mean = sum(past) / len(past)
            if kind == "length_jump":
                limit = self.t.length_ratio * mean
                check(kind, metric, mean > 0 and v > limit, limit,
                      f"{whose}completion length jumped to {v:.4g} tokens from a mean of "
                      f"{mean:.4g} over {steps}")  # fmt: skip
            else:
                limit = mean + self.t.reward_rise
                check(kind, metric, v > limit, limit,
                      f"{whose}reward jumped to {v:.4g} from a mean of {mean:.4g} over "
                      f"{steps} (a reward-hacking sign)")  # fmt: skip
        past.append(v)

    def _write(self, alert: Alert) -> None:
        row = asdict(alert)
        if not math.isfinite(alert.value):
            row["value"] = None  # strict JSON has no NaN
        line = json.dumps(row, allow_nan=False)
        # A `kill -9` mid-write can leave a torn last line; appending onto it would
        # fuse this alert with the fragment into one unreadable line.
        with open_for_append(self.path) as f:
            f.write(line + "\n")
        if self.warn is not None:
            self.warn(alert.message)


def _not_finite(value: float) -> str:
    return "" if math.isfinite(value) else ": the figure is not finite (NaN weights or logprobs?)"


def read_alerts(path: Path) -> list[dict[str, Any]]:
    """The alerts of a run, oldest first. A torn last line (a crash mid-write) is
    skipped; a malformed line anywhere else raises ValueError naming the file and line."""
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON line: {e}") from e
    return rows
