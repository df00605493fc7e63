"""The base of every config section: unknown keys, bad assignments, numbers that are
not finite (an infinite learning rate, a NaN weight) and booleans where a number
belongs (`grpo.steps=true`, which pydantic would read as 1) are errors.

`ConfigError` is what `posttrain.config.load_config` raises for a recipe or override
that cannot run; `_Strict` is the pydantic base of each section (`config.py`,
`config_model.py`, `config_rollout.py`, `config_stages.py`); `check_levels` checks a
list of difficulties.

Coercions kept on purpose (pydantic's lax mode): an integer where a float belongs
(`lr: 1`), a float without a fractional part where an integer belongs (`steps: 3.0`;
`2.5` is refused), and a string that spells a number (`"3"`, and `1e-4`, which PyYAML
reads as a string). Booleans are never numbers, in a list or mapping either.
"""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

BOOL_AS_NUMBER = "bool_as_number"  # the pydantic error type of a boolean given for a number


class ConfigError(ValueError):
    """A recipe or override that cannot run; the message says which field and why."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_as_number(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name is None:
            return value
        found = _bool_for_number(cls.model_fields[info.field_name].annotation, value, "")
        if found is not None:
            at, kind, flag = found
            raise PydanticCustomError(
                BOOL_AS_NUMBER,
                "expected {kind}, got a boolean ({spelled})",
                {"at": at, "kind": kind, "spelled": str(flag).lower()},
            )
        return value


def _bool_for_number(annotation: Any, value: Any, at: str) -> tuple[str, str, bool] | None:
    """The first boolean in `value` that stands for an int or float of `annotation`:
    where (".0" for a list's first item, ".key" for a mapping's value, "" for the value
    itself), what was expected there, and the boolean; None when there is none. Nested
    sections check their own fields."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        if isinstance(value, bool) and bool in args:
            return None
        return next((f for a in args if (f := _bool_for_number(a, value, at))), None)
    if isinstance(value, bool):
        kind = {int: "an integer", float: "a number"}.get(annotation)
        return (at, kind, value) if kind else None
    if origin is list and isinstance(value, list):
        items = ((f"{at}.{i}", item) for i, item in enumerate(value))
    elif origin is dict and isinstance(value, dict):
        items = ((f"{at}.{key}", item) for key, item in value.items())
    else:
        return None
    return next(
        (f for where, item in items if (f := _bool_for_number(args[-1], item, where))), None
    )


def check_levels(levels: list[int], key: str) -> None:
    """Raise ValueError naming `key` unless `levels` is a non-empty list of 1..10."""
    bad = [d for d in levels if not 1 <= d <= 10]
    if not levels or bad:
        raise ValueError(f"{key} must be 1..10 and not empty, got {bad or '[]'}")
