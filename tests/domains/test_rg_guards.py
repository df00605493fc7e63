"""The guard on reasoning_gym's `number_sequence`: the task it hung on comes back, and
every other task is the one the unguarded generator makes."""

from __future__ import annotations

import inspect
import random
from typing import Any

import pytest

pytest.importorskip("reasoning_gym")

from reasoning_gym.cognition import number_sequences  # noqa: E402

from posttrain.domains.reasoning_gym_adapter import _entry_at  # noqa: E402
from posttrain.domains.rg_guards import guard_generators, sequence_bound  # noqa: E402

LEVELS = [{"max_complexity": k, "max_value": k, "min_value": k, "terms": k} for k in range(4)]


class Runaway(BaseException):
    """Raised past the generator's `except OverflowError`: the unguarded run is stopped."""


def stopped_past(apply: Any, limit: int) -> Any:
    """The unguarded `apply`, stopped once a term passes `limit` (which it would only
    pass on its way to hanging: such a task is left out of the comparison)."""

    def bounded(self: Any, sequence: list[int], position: int) -> int:
        if any(abs(term) > limit for term in sequence[: position + 1]):
            raise Runaway
        result: int = apply(self, sequence, position)
        return result

    return bounded


def entry(seed: int, level: dict[str, int]) -> tuple[str, str]:
    _, got = _entry_at("number_sequence", seed, dict(level))
    return got["question"], got["answer"]


@pytest.mark.timeout(60)
def test_the_task_that_hung_comes_back() -> None:
    # rg/number_sequence-v1's held-out draw that never returned: candidate -6, 1679616, ...
    question, answer = entry(90669502, LEVELS[3])
    assert question.endswith("?") and int(answer) == -754


def test_every_task_is_the_unguarded_generators(monkeypatch: pytest.MonkeyPatch) -> None:
    guard_generators()
    guarded = number_sequences.PatternRule.apply
    plain = inspect.unwrap(guarded)
    assert plain is not guarded and sequence_bound() == 1000
    fired = 0

    def counting(self: Any, sequence: list[int], position: int) -> int:
        nonlocal fired
        try:
            result: int = guarded(self, sequence, position)
        except OverflowError:
            fired += 1
            raise
        return result

    rng, compared, left_out = random.Random(0), 0, 0
    for _ in range(150):
        seed = rng.getrandbits(31)
        for level in LEVELS:
            monkeypatch.setattr(number_sequences.PatternRule, "apply", stopped_past(plain, 10**300))
            try:
                want = entry(seed, level)
            except Runaway:
                left_out += 1
                continue
            monkeypatch.setattr(number_sequences.PatternRule, "apply", counting)
            assert entry(seed, level) == want, (seed, level)
            compared += 1
    assert compared >= 400 and left_out >= 20  # many draws would have run away unguarded
    assert fired >= 50  # and the guard cut many candidates short on the compared ones
