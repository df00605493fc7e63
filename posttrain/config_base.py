"""The base of every config section: unknown keys and bad assignments are errors.

`ConfigError` is what `posttrain.config.load_config` raises for a recipe or override
that cannot run; `_Strict` is the pydantic base of each section (`config.py`,
`config_rollout.py`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigError(ValueError):
    """A recipe or override that cannot run; the message says which field and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
