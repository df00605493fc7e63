"""Argument checks against a tool's JSON schema, and reading declared tools from schemas."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

from posttrain.tools import arguments as arguments_module
from posttrain.tools import declared_tools, function_schema, schema_problems


def schema(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **extra}


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        ("string", "x", 3),
        ("integer", 3, 3.0),
        ("integer", -7, True),
        ("number", 2.5, "2.5"),
        ("number", 2, False),
        ("boolean", False, 0),
        ("array", [1], {"a": 1}),
        ("object", {"a": 1}, [1]),
        ("null", None, "null"),
    ],
)
def test_json_types_are_checked_strictly(kind: str, good: Any, bad: Any) -> None:
    spec = schema({"v": {"type": kind}})
    assert schema_problems({"v": good}, spec) == []
    assert schema_problems({"v": bad}, spec) == [
        f"argument 'v' must be {kind}, got {_json_name(bad)}"
    ]


def _json_name(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    names |= {list: "array", dict: "object", type(None): "null"}
    return names[type(value)]


def test_a_list_of_types_accepts_any_of_them() -> None:
    spec = schema({"v": {"type": ["string", "null"]}})
    assert schema_problems({"v": None}, spec) == []
    assert schema_problems({"v": 1}, spec) == ["argument 'v' must be string or null, got integer"]


def test_enum_does_not_confuse_true_with_one() -> None:
    spec = schema({"v": {"enum": [1, 2]}})
    assert schema_problems({"v": 2}, spec) == []
    assert "must be one of 1, 2" in schema_problems({"v": True}, spec)[0]
    nested = schema({"v": {"enum": [[1, 1], {"on": False}]}})  # at every depth
    assert (
        schema_problems({"v": [1, 1]}, nested)
        == schema_problems({"v": {"on": False}}, nested)
        == []
    )
    assert schema_problems({"v": [1, True]}, nested) and schema_problems({"v": {"on": 0}}, nested)


def test_nested_objects_and_array_items_are_checked_with_their_path() -> None:
    row = schema({"id": {"type": "integer"}}, required=["id"])
    spec = schema({"rows": {"type": "array", "items": row}})
    problems = schema_problems({"rows": [{"id": 1}, {"id": "2"}, {}]}, spec)
    assert problems == [
        "argument 'rows[1].id' must be integer, got string",
        "missing required argument 'rows[2].id'",
    ]


def test_extra_keys_are_allowed_unless_additional_properties_is_false() -> None:
    assert schema_problems({"zzz": 1}, schema({})) == []
    long_key = "k" * 10_000
    problem = schema_problems({long_key: 1}, schema({}, additionalProperties=False))[0]
    assert problem.startswith("unexpected argument 'kkk") and len(problem) < 120


def test_arguments_that_are_not_an_object_are_reported() -> None:
    assert schema_problems([1], schema({})) == ["arguments must be object, got array"]


def test_problems_are_capped() -> None:
    spec = schema({}, required=[f"a{i}" for i in range(20)])
    assert len(schema_problems({}, spec)) == arguments_module.MAX_PROBLEMS


def test_no_schema_means_no_problems() -> None:
    assert schema_problems({"anything": object()}, None) == []


def test_declared_tools_reads_openai_and_flat_schemas_and_skips_junk() -> None:
    params = schema({"q": {"type": "string"}})
    tools = declared_tools(
        [function_schema("search", "", params), {"name": "flat"}, {"function": {}}, "junk"]
    )
    assert tools == {"search": params, "flat": None}
    assert declared_tools(None) == {}


def test_doctests() -> None:
    assert doctest.testmod(arguments_module).failed == 0
