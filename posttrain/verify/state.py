"""A stable fingerprint of a program's final state, for `final_state` verifiers.

    state_hash(session.state) == task.answer["state_hash"]

`canonical_json` writes a value as one JSON text that does not depend on how it
was built: dict keys are sorted, list order is kept, floats are rounded to 9
significant digits (so 0.1 + 0.2 and 0.3 agree), or to a whole number from 1e9 up
to 2**53, where 9 digits would not reach the units, and a float that is a whole
number is written as an integer (so 2.0 and 2, and 12345678901.0 and 12345678901,
agree, as they do under `==`).
`state_hash` is the SHA-256 of that text. Both are for the domain's own data
(simulated databases, inventories, calendars), not for model text: an
unsupported value is a programming error and raises `TypeError`.

Not guaranteed: tuples are written as lists (a tuple and a list with the same
items hash the same); sets and frozensets are rejected rather than silently
ordered, sort them into a list first; dict keys must be strings; floats that
differ only past the 9th significant digit (from 1e9 to 2**53: that round to
the same whole number) hash the same, and whole-number floats beyond 2**53 are
written as floats, so 1e20 and 10**20 differ; NaN and the infinities are written
as the tokens `NaN`, `Infinity`, `-Infinity` (every NaN hashes the same although
NaN != NaN); a cycle raises `ValueError`.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

_SIGNIFICANT_DIGITS = 9
_EXACT_INT_FLOAT = 2.0**53
_UNIT_ROUNDING = 10.0**_SIGNIFICANT_DIGITS  # from here on, nine digits no longer reach the units


def _canonical_float(value: float) -> float | int:
    if not math.isfinite(value):
        return value
    if _UNIT_ROUNDING <= abs(value) < _EXACT_INT_FLOAT:
        # Nine significant digits would be coarser than a unit here and write 12345678901.0
        # as 12345678900, which is another integer.
        return round(value)
    rounded = float(f"{value:.{_SIGNIFICANT_DIGITS}g}")
    if rounded.is_integer() and abs(rounded) < _EXACT_INT_FLOAT:
        return int(rounded)  # also folds -0.0 into 0
    return rounded


def _canonical(value: Any, path: str, active: set[int]) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)  # an IntEnum or other int subclass is written by value
    if isinstance(value, float):
        return _canonical_float(value)
    if isinstance(value, (dict, list, tuple)):
        if id(value) in active:
            raise ValueError(f"state_hash: cycle at {path}")
        active.add(id(value))
        try:
            if isinstance(value, dict):
                out: dict[str, Any] = {}
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise TypeError(
                            f"state_hash: dict key {key!r} at {path} is "
                            f"{type(key).__name__}; keys must be str"
                        )
                    out[key] = _canonical(item, f"{path}[{key!r}]", active)
                return out
            return [_canonical(item, f"{path}[{i}]", active) for i, item in enumerate(value)]
        finally:
            active.discard(id(value))
    if isinstance(value, (set, frozenset)):
        raise TypeError(
            f"state_hash: {type(value).__name__} at {path} has no order; use a sorted list"
        )
    raise TypeError(
        f"state_hash: unsupported {type(value).__name__} at {path}; "
        "use None, bool, int, float, str, list, tuple or dict with str keys"
    )


def canonical_json(value: Any) -> str:
    """One JSON text for the value: sorted keys, no spaces, floats to 9 significant digits.

    >>> canonical_json({"b": [1.0, 0.1 + 0.2], "a": (True, None)})
    '{"a":[true,null],"b":[1,0.3]}'
    >>> canonical_json({3})
    Traceback (most recent call last):
    ...
    TypeError: state_hash: set at $ has no order; use a sorted list
    """
    return json.dumps(
        _canonical(value, "$", set()),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=True,
    )


def state_hash(value: Any) -> str:
    """The SHA-256 hex digest of `canonical_json(value)`.

    >>> state_hash({"x": 1, "y": [2, 3]}) == state_hash({"y": [2, 3], "x": 1.0})
    True
    >>> state_hash([1, 2]) == state_hash([2, 1])
    False
    >>> len(state_hash(None))
    64
    """
    return hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()
