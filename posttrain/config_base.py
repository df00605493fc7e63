"""The base of every config section: unknown keys, bad assignments and numbers that are
not finite (an infinite learning rate, a NaN weight) are errors.

`ConfigError` is what `posttrain.config.load_config` raises for a recipe or override
that cannot run; `_Strict` is the pydantic base of each section (`config.py`,
`config_model.py`, `config_rollout.py`, `config_stages.py`); `check_levels` checks a
list of difficulties.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigError(ValueError):
    """A recipe or override that cannot run; the message says which field and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


def check_levels(levels: list[int], key: str) -> None:
    """Raise ValueError naming `key` unless `levels` is a non-empty list of 1..10."""
    bad = [d for d in levels if not 1 <= d <= 10]
    if not levels or bad:
        raise ValueError(f"{key} must be 1..10 and not empty, got {bad or '[]'}")
