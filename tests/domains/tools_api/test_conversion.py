"""`tools/unit-convert-v1` and `tools/currency-total-v1`: numeric answers that need the tool."""

from __future__ import annotations

from posttrain.domains.tools_api.conversion import CurrencyTotalDomain, UnitConvertDomain
from tests.domains.tools_api.episodes import play, with_final

UNITS, MONEY = UnitConvertDomain(), CurrencyTotalDomain()


def test_unit_answer_with_thousands_commas_or_a_cent_off_passes() -> None:
    task = UNITS.generate(0, 5)
    value = float(task.answer)
    assert play(UNITS, task, with_final(task, f"{value:,.2f}")).passed
    assert play(UNITS, task, with_final(task, f"{value + 0.01:.2f}")).passed


def test_unit_answer_with_its_unit_name_fails_the_format() -> None:
    task = UNITS.generate(0, 5)
    verdict = play(UNITS, task, with_final(task, f"{task.answer} {task.meta['world']['path'][-1]}"))
    assert verdict.components["format"] == 0.0 and not verdict.passed


def test_unit_chain_with_a_skipped_link_is_not_tool_use() -> None:
    task = UNITS.generate(1, 7)
    plan = task.meta["plan"]
    verdict = play(UNITS, task, [*plan[:1], *plan[2:]])
    assert verdict.components == {"format": 1.0, "correct": 1.0, "used_tool": 0.0}


def test_unit_conversion_found_by_links_then_reversed_calls_counts() -> None:
    task = UNITS.generate(2, 3)
    path = task.meta["world"]["path"]
    steps: list = [[{"name": "links", "arguments": {"unit": path[0]}}]]
    steps += [
        [{"name": "convert", "arguments": {"value": 1, "from_unit": b, "to_unit": a}}]
        for a, b in zip(path, path[1:], strict=False)
    ]
    assert play(UNITS, task, [*steps, task.answer]).passed


def test_currency_total_from_the_outdated_printout_fails() -> None:
    task = MONEY.generate(3, 4)
    stale = sum(a * s for a, s in zip(task.meta["amounts"], task.meta["stale"], strict=True))
    verdict = play(MONEY, task, with_final(task, f"{stale:.2f}"))
    assert verdict.components["correct"] == 0.0 and verdict.reward == 0.0


def test_currency_rates_fetched_in_the_reverse_direction_count() -> None:
    task = MONEY.generate(3, 4)
    target = task.meta["target"]
    calls = [
        {"name": "get_rate", "arguments": {"from_currency": target, "to_currency": c.lower()}}
        for c in task.meta["currencies"]
    ]
    assert play(MONEY, task, [calls, task.answer]).passed


def test_currency_total_missing_one_rate_is_not_tool_use() -> None:
    task = MONEY.generate(4, 6)
    calls = task.meta["plan"][0]
    assert play(MONEY, task, [calls[1:], task.answer]).components["used_tool"] == 0.0
