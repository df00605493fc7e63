"""Guards around reasoning_gym generators that can run without end on some seeds.

`number_sequence` computes every term of a candidate sequence before its own check
(`PatternGenerator.is_interesting`) rejects a sequence holding a term above
`max_value` (1000). A rule that squares several times per term multiplies the terms'
digit counts at each term, so the last terms of such a candidate take minutes, then
hours: a held-out task of `rg/number_sequence-v1` never came back, stuck on the
candidate `-6, 1679616, ...` (reasoning_gym 0.1.25). The guard raises OverflowError
as soon as a term already computed is above the check's bound. The generator catches
OverflowError and tries its next rule, as after a rejection, and computing terms draws
nothing from its RNG: every sequence it accepted before is the one it accepts now
(`tests/domains/test_rg_guards.py` compares both on many seeds).

    guard_generators()  # idempotent; the adapter calls it before it draws an entry
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any

_LOCK = threading.Lock()
_GUARDED = False


def guard_generators() -> None:
    """Install the guards (once per process)."""
    global _GUARDED
    with _LOCK:
        if _GUARDED:
            return
        from reasoning_gym.cognition import number_sequences

        rule = number_sequences.PatternRule
        rule.apply = guarded_apply(rule.apply, sequence_bound())  # type: ignore[method-assign]
        _GUARDED = True


def sequence_bound() -> int:
    """The largest term `number_sequence` accepts: the default `max_value` of its check."""
    from reasoning_gym.cognition.number_sequences import PatternGenerator

    default = inspect.signature(PatternGenerator.is_interesting).parameters["max_value"].default
    if not isinstance(default, int):
        raise RuntimeError(f"reasoning_gym's is_interesting changed: max_value={default!r}")
    return default


def guarded_apply(apply: Any, bound: int) -> Any:
    """`PatternRule.apply` that refuses to extend a sequence with a term above `bound`.
    `sequence[:position]` holds real terms in subrule calls too (a subrule sees a copy
    whose last entry is the running result)."""

    @functools.wraps(apply)
    def guarded(self: Any, sequence: list[int], position: int) -> int:
        if any(abs(term) > bound for term in sequence[:position]):
            raise OverflowError(f"a term above {bound}: the candidate is rejected anyway")
        result: int = apply(self, sequence, position)
        return result

    return guarded
