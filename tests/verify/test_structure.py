"""Structured answers: one JSON value, JSON Schema errors, BFCL-style call checks, junk."""

from __future__ import annotations

import doctest
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from posttrain.types import ToolCall
from posttrain.verify import call_matches, parse_json, schema_errors, state_hash, structure
from tests.verify.junk import junk_texts

SCHEMA = {
    "type": "object",
    "required": ["name", "tags"],
    "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "born": {"type": "string", "format": "date"},
    },
    "additionalProperties": False,
}

SPEC = {
    "name": "book_flight",
    "parameters": {
        "type": "object",
        "required": ["origin", "seats"],
        "properties": {
            "origin": {"type": "string", "allowed": ["SFO"], "case_insensitive": True},
            "seats": {"type": "integer"},
            "price": {"type": "float"},
            "cabin": {"type": "string", "enum": ["economy", "business"]},
            "refundable": {"type": "boolean"},
            "stops": {"type": "array", "items": {"type": "string"}},
            "meal": {
                "type": "dict",
                "properties": {"kind": {"type": "string"}},
                "required": ["kind"],
            },
            "note": {"type": "any"},
        },
    },
}


def _call(**arguments: Any) -> dict[str, Any]:
    return {"name": "book_flight", "arguments": {"origin": "SFO", "seats": 2, **arguments}}


def test_doctests_pass() -> None:
    assert doctest.testmod(structure).failed == 0


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        (" [1, 2]\n", [1, 2]),
        ('"x"', "x"),
        ("3.5", 3.5),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ("```\n[true]\n```", [True]),
    ],
)
def test_parse_json_reads_one_value(text: str, value: Any) -> None:
    assert parse_json(text) == value


@pytest.mark.parametrize(
    "text",
    [
        "",
        '{"a": 1} {"b": 2}',
        'Here: {"a": 1}',
        "{'a': 1}",
        "NaN",
        "[Infinity]",
        '```python\n{"a": 1}\n```',
        '```json\n{"a": 1}\n```\n```json\n{}\n```',
    ],
)
def test_parse_json_rejects_anything_else(text: str) -> None:
    assert parse_json(text) is None


@pytest.mark.parametrize("text", ["1e999", "[-1e999]", '{"price": 1E400}'])
def test_parse_json_rejects_numbers_that_overflow_to_infinity(text: str) -> None:
    assert parse_json(text) is None


def test_call_matches_rejects_an_overflowing_number_in_json_text() -> None:
    text = json.dumps(_call(price=1)).replace('"price": 1', '"price": 1e999')
    assert call_matches(text, SPEC) == (False, "not a function call")


def test_parse_json_rejects_values_nested_deeper_than_the_limit() -> None:
    limit = structure.MAX_DEPTH
    assert parse_json("[" * limit + "]" * limit) is not None
    assert parse_json("[" * (limit + 1) + "]" * (limit + 1)) is None
    assert parse_json('{"a": ' * (limit + 1) + "1" + "}" * (limit + 1)) is None


def test_parse_json_does_not_count_brackets_inside_strings() -> None:
    assert parse_json(json.dumps(["[" * 500, {"k": "{" * 500}])) == ["[" * 500, {"k": "{" * 500}]


def test_parse_json_values_are_safe_for_state_hash() -> None:
    limit = structure.MAX_DEPTH
    assert len(state_hash(parse_json("[" * limit + "]" * limit))) == 64


def test_schema_errors_is_empty_for_a_valid_value() -> None:
    assert schema_errors({"name": "a", "tags": ["x"], "born": "2001-02-03"}, SCHEMA) == []


def test_schema_errors_names_the_path_of_a_wrong_type() -> None:
    assert schema_errors({"name": "a", "tags": ["x", 3]}, SCHEMA) == [
        "$.tags[1]: 3 is not of type 'string'"
    ]


def test_schema_errors_reports_missing_and_extra_properties() -> None:
    errors = schema_errors({"tags": [], "age": 3}, SCHEMA)
    assert any("'name' is a required property" in e for e in errors)
    assert any("Additional properties" in e for e in errors)


def test_schema_errors_checks_formats() -> None:
    assert schema_errors({"name": "a", "tags": [], "born": "yesterday"}, SCHEMA)


def test_schema_errors_caps_the_number_and_length_of_messages() -> None:
    errors = schema_errors(
        {"name": "x" * 10_000, "tags": list(range(1000))},
        {**SCHEMA, "properties": {**SCHEMA["properties"], "name": {"type": "integer"}}},
    )  # type: ignore[dict-item]
    assert len(errors) == 20
    assert all(len(e) <= 200 for e in errors)


def test_schema_errors_survives_deep_nesting() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    assert schema_errors(deep, {"type": "array", "items": {"$ref": "#"}}) == [
        "$: value nested too deeply"
    ]


def test_call_matches_a_correct_call() -> None:
    assert call_matches(_call(price=10.5, cabin="economy", stops=["DEN"]), SPEC) == (
        True,
        "call matches",
    )


def test_call_matches_reads_json_text_and_string_arguments() -> None:
    assert call_matches(
        '{"name": "book_flight", "arguments": "{\\"origin\\": \\"SFO\\", \\"seats\\": 1}"}', SPEC
    )[0]


def test_call_matches_reads_bfcl_style_calls_and_tool_calls() -> None:
    assert call_matches({"book_flight": {"origin": "SFO", "seats": 1}}, SPEC)[0]
    assert call_matches(
        ToolCall(name="book_flight", arguments={"origin": "SFO", "seats": 1}), SPEC
    )[0]


def test_call_matches_unwraps_an_openai_tool_spec() -> None:
    assert call_matches(_call(), {"type": "function", "function": SPEC})[0]


def test_call_matches_rejects_another_function() -> None:
    assert call_matches({"name": "cancel", "arguments": {}}, SPEC) == (
        False,
        "wrong function 'cancel', expected 'book_flight'",
    )


def test_call_matches_rejects_a_missing_required_argument() -> None:
    assert call_matches({"name": "book_flight", "arguments": {"origin": "SFO"}}, SPEC) == (
        False,
        "missing required argument seats",
    )


def test_call_matches_rejects_an_unexpected_argument() -> None:
    assert call_matches(_call(pets=1), SPEC) == (False, "unexpected argument pets")


def test_call_matches_accepts_an_integer_for_a_float() -> None:
    assert call_matches(_call(price=10), SPEC)[0]


@pytest.mark.parametrize(
    "arguments",
    [
        {"seats": 2.0},
        {"seats": True},
        {"seats": "2"},
        {"price": "10"},
        {"refundable": 1},
        {"stops": "DEN"},
    ],
)
def test_call_matches_rejects_a_wrong_type(arguments: dict[str, Any]) -> None:
    ok, reason = call_matches(_call(**arguments), SPEC)
    assert not ok and "should be" in reason


def test_call_matches_checks_array_items_and_nested_objects() -> None:
    assert not call_matches(_call(stops=["DEN", 3]), SPEC)[0]
    assert call_matches(_call(meal={"kind": "veg"}), SPEC)[0]
    assert call_matches(_call(meal={}), SPEC) == (False, "missing required argument meal.kind")


def test_call_matches_rejects_a_value_outside_the_enum() -> None:
    assert call_matches(_call(cabin="first"), SPEC) == (
        False,
        "argument cabin has a value outside the enum",
    )


def test_call_matches_compares_enum_strings_exactly_unless_told() -> None:
    assert not call_matches(_call(cabin="Economy"), SPEC)[0]
    assert call_matches(
        {"name": "book_flight", "arguments": {"origin": " sfo ", "seats": 1}}, SPEC
    )[0]


def test_call_matches_rejects_a_value_outside_the_allowed_list() -> None:
    ok, reason = call_matches(
        {"name": "book_flight", "arguments": {"origin": "LAX", "seats": 1}}, SPEC
    )
    assert not ok and "allowed values" in reason


def test_call_matches_accepts_anything_for_type_any() -> None:
    assert call_matches(_call(note={"free": ["form"]}), SPEC)[0]


def test_call_matches_raises_on_an_unknown_type_in_the_spec() -> None:
    spec = {"name": "f", "parameters": {"properties": {"x": {"type": "complex"}}}}
    with pytest.raises(ValueError, match="unknown type"):
        call_matches({"name": "f", "arguments": {"x": 1}}, spec)


def _junk() -> list[Any]:
    return junk_texts(
        "nan",
        "inf",
        "[" * 900 + "]" * 900,
        '{"book_flight": ' + "[" * 900 + "]" * 900 + "}",
        '{"name": ' + "[" * 900 + "]" * 900 + "}",
        None,
        ["book_flight"],
        {"name": "book_flight", "arguments": [1]},
    )


_FUNCTIONS: list[Callable[[Any], bool]] = [
    lambda text: parse_json(text) is not None and not isinstance(parse_json(text), str),
    lambda text: call_matches(text, SPEC)[0],
    lambda text: not schema_errors(parse_json(text), SCHEMA),
]


@pytest.mark.parametrize("function", _FUNCTIONS[1:])
def test_junk_fails_and_never_raises(function: Callable[[Any], bool]) -> None:
    assert not any(function(value) for value in _junk())


def test_parse_json_of_junk_text_is_none() -> None:
    junk = [t for t in _junk() if isinstance(t, str) and not t.startswith(("[[", "{"))]
    assert all(parse_json(text) is None for text in junk)


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_100kb_inputs_finish_without_a_backtracking_blowup(function: Callable[[Any], bool]) -> None:
    for value in _junk():
        started = time.perf_counter()
        function(value)
        assert time.perf_counter() - started < 1.0
