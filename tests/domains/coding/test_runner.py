"""The case runner: values compared as JSON with their types; a forged report is refused."""

from __future__ import annotations

from posttrain.domains.coding.runner import parse_results, run_case, same


def test_a_raise_and_a_value_are_recorded() -> None:
    assert run_case(lambda x: 1 // x, [0], False) == {"raises": "ZeroDivisionError"}
    assert run_case(lambda x: (x, x), [1], False) == {"value": [1, 1]}


def test_capture_records_the_printed_text() -> None:
    assert run_case(lambda: print("hi") or 3, [], True) == {"value": [3, "hi\n"]}


def test_same_compares_values_as_the_visible_asserts_do() -> None:
    assert same({"value": [2]}, {"value": [2.0]}) and not same({"value": "2"}, {"value": 2})
    assert same({"raises": "KeyError"}, {"raises": "KeyError"}) and not same(
        {"value": None}, {"raises": "KeyError"}
    )


def test_two_marker_lines_are_refused_as_forged() -> None:
    line = '@@m@@[{"value": 1}]'
    assert parse_results(f"x\n{line}\n", "@@m@@", 1) == [{"value": 1}]
    assert parse_results(f"{line}\n{line}\n", "@@m@@", 1) is None
    assert parse_results("no report", "@@m@@", 1) is None
