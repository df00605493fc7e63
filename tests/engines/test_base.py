"""SamplingParams: what it refuses, and which temperatures decode greedily."""

from __future__ import annotations

import pytest

from posttrain.engines.base import GREEDY_BELOW, SamplingParams


def test_temperatures_below_the_greedy_threshold_are_greedy_at_softmax_temperature_1() -> None:
    for temperature in (0.0, 1e-45, 1e-38, GREEDY_BELOW / 2):
        params = SamplingParams(temperature=temperature)
        assert params.greedy and params.softmax_temperature == 1.0
    for temperature in (GREEDY_BELOW, 0.5, 2.0):
        params = SamplingParams(temperature=temperature)
        assert not params.greedy and params.softmax_temperature == temperature


@pytest.mark.parametrize("temperature", [-0.1, float("nan")])
def test_a_negative_or_nan_temperature_is_refused(temperature: float) -> None:
    with pytest.raises(ValueError, match="SamplingParams.temperature must be >= 0"):
        SamplingParams(temperature=temperature)


def test_a_single_stop_string_is_one_stop_string_not_its_characters() -> None:
    assert SamplingParams(stop="END").stop == ("END",)
    assert SamplingParams(stop=["a", "bc"]).stop == ("a", "bc")  # type: ignore[arg-type]


@pytest.mark.parametrize("stop", [("",), ("ok", ""), ""])
def test_an_empty_stop_string_is_refused_naming_stop(stop: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="SamplingParams.stop must hold non-empty strings"):
        SamplingParams(stop=stop)
