"""Check a tool call's arguments against the tool's JSON schema, before the tool runs.

    tools = declared_tools(session.tools)             # {"search": {parameters schema}, ...}
    problems = schema_problems(call.arguments, tools["search"])
    # ["missing required argument 'query'", "argument 'k' must be integer, got string"]

The guard (`posttrain.tools.guard`) refuses a call with problems and shows them to
the model; an empty list means the arguments fit. Types follow JSON: `integer`
accepts ints only (not 3.0, not true), `number` ints and floats (not booleans).

Not guaranteed: only `type` (a name or a list of names), `required`, `properties`,
`additionalProperties: false`, `enum` and array `items` are checked, recursively;
ranges, lengths, patterns, formats, `oneOf`/`anyOf`/`allOf` and `$ref` are left to
the tool, and an unknown type name constrains nothing. At most 5 problems are listed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MAX_PROBLEMS = 5
_SNIPPET_CHARS = 40
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def declared_tools(schemas: Iterable[Any] | None) -> dict[str, dict[str, Any] | None]:
    """Tool name -> its `parameters` schema (None when it has none), from OpenAI function
    schemas (`{"type": "function", "function": {...}}`) or flat `{"name": ...}` ones.
    Entries without a string name are skipped: they declare nothing callable."""
    tools: dict[str, dict[str, Any] | None] = {}
    for schema in schemas or ():
        if not isinstance(schema, dict):
            continue
        function = schema.get("function", schema)
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        parameters = function.get("parameters")
        tools[function["name"]] = parameters if isinstance(parameters, dict) else None
    return tools


def snippet(value: Any) -> str:
    """A short repr for messages: model-written values may be megabytes long."""
    text = repr(value)
    return text if len(text) <= _SNIPPET_CHARS else text[:_SNIPPET_CHARS] + "..."


def schema_problems(arguments: Any, schema: dict[str, Any] | None) -> list[str]:
    """What is wrong with `arguments` for `schema` (a JSON Schema object), as sentences
    naming the argument; empty when they fit or there is no schema.

    >>> schema = {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["q"]}
    >>> schema_problems({"k": "3"}, schema)
    ["missing required argument 'q'", "argument 'k' must be integer, got string"]
    """
    problems: list[str] = []
    if schema is not None:
        _check(arguments, schema, "", problems)
    return problems[:MAX_PROBLEMS]


def _json_type(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _fits_type(value, name):
            return name
    return type(value).__name__


def _fits_type(value: Any, name: str) -> bool:
    if name not in _TYPES:
        return True
    if isinstance(value, bool) and name in ("integer", "number"):
        return False  # bool is an int subclass in Python, not in JSON
    return isinstance(value, _TYPES[name])


def _in_enum(value: Any, options: list[Any]) -> bool:
    return any(_json_equal(o, value) for o in options)


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON has it, at every depth: True == 1 in Python, but in JSON a
    boolean is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return bool(a == b)


def _label(path: str) -> str:
    return f"argument {path!r}" if path else "arguments"


def _check(value: Any, schema: dict[str, Any], path: str, problems: list[str]) -> None:
    if len(problems) >= MAX_PROBLEMS:
        return
    expected = schema.get("type")
    names = [expected] if isinstance(expected, str) else expected
    if isinstance(names, list) and names and not any(_fits_type(value, n) for n in names):
        wanted = " or ".join(str(n) for n in names)
        problems.append(f"{_label(path)} must be {wanted}, got {_json_type(value)}")
        return
    options = schema.get("enum")
    if isinstance(options, list) and not _in_enum(value, options):
        allowed = ", ".join(snippet(o) for o in options[:10])
        problems.append(f"{_label(path)} must be one of {allowed}; got {snippet(value)}")
        return
    if isinstance(value, dict):
        _check_object(value, schema, path, problems)
    elif isinstance(value, list | tuple) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{index}]", problems)


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str, problems: list[str]) -> None:  # fmt: skip
    prefix = f"{path}." if path else ""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    for key in required if isinstance(required, list) else []:
        if isinstance(key, str) and key not in value:
            problems.append(f"missing required argument {prefix + key!r}")
    if schema.get("additionalProperties") is False:
        allowed = ", ".join(sorted(properties)) or "none"
        for key in value:
            if key not in properties:
                where = f"{prefix}{key}"
                problems.append(f"unexpected argument {snippet(where)} (allowed: {allowed})")
    for key, item in value.items():
        sub = properties.get(key)
        if isinstance(sub, dict):
            _check(item, sub, prefix + key, problems)
