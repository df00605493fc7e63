"""What GRPO trains each rollout on, and which groups carry a gradient: the trained
reward (the verdict's reward, or a component of it under `grpo.reward_component`),
whether a rollout has one to train on, whether a group's differ, and dynamic
sampling's choice of groups. `train/grpo.py` asks these, and `train/guidance.py` the
same rules through its reward function (`guidance.trains`), so they never disagree
about a rollout or a group.

    trainable(rollout, "digits")   # scored, and its trained reward a finite number
    has_spread(group)              # its trainable rollouts' rewards differ (in float32)
"""

from __future__ import annotations

import math

from posttrain.train.losses import rewards_differ
from posttrain.types import Rollout, Task


def cut_off(rollout: Rollout) -> bool:
    """Whether the rollout's last turn was cut by the token budget."""
    return rollout.turns[-1].finish_reason == "length" if rollout.turns else False


def trained_reward(rollout: Rollout, component: str | None = None) -> float:
    """What the advantages are computed from: the verdict's `component` when it has
    one (`grpo.reward_component`, dense shaping), else its reward."""
    if component is None:
        return rollout.reward
    return rollout.verdict.components.get(component, rollout.reward)


def trainable(rollout: Rollout, component: str | None = None) -> bool:
    """Whether `rollout` has a reward to train on: it was scored (no crash, no verifier
    error) and its trained reward is a finite number. A verifier's NaN component would
    make its whole group's advantages NaN, and the update be skipped as non-finite."""
    return rollout.scored and math.isfinite(trained_reward(rollout, component))


def has_spread(group: list[Rollout], component: str | None = None) -> bool:
    """Whether a group's trained rewards differ (else a group baseline gives it no
    gradient); a rollout without one to train on (`trainable`) has none to compare."""
    return rewards_differ([trained_reward(r, component) for r in group if trainable(r, component)])


def select_groups(
    sampled: list[tuple[Task, list[Rollout]]],
    count: int,
    signal_first: bool,
    component: str | None = None,
) -> list[tuple[Task, list[Rollout]]]:
    """The step's `count` groups: as drawn, or (dynamic sampling) those with reward
    spread first, topped up in draw order by the others when too few have it."""
    if not signal_first:
        return sampled[:count]
    return sorted(sampled, key=lambda g: not has_spread(g[1], component))[:count]  # stable
