"""Structured answers: one JSON value, JSON Schema validation, and BFCL-style function calls.

    value = parse_json(text)                    # None unless the text is one JSON value
    schema_errors(value, task.answer["schema"]) # [] when valid
    ok, reason = call_matches(call, spec)       # name, required / unknown args, types, values

`parse_json` reads text that is exactly one JSON value, optionally inside a single
```json fence. `schema_errors` validates with `jsonschema` (the draft the schema
names, 2020-12 by default, with format checks) and returns at most 20 short
messages. `call_matches` checks a function call the way the Berkeley Function
Calling Leaderboard's AST checker does: the name is the spec's, every required
parameter is present, no parameter is unknown, each value has its declared type
(an integer is accepted where a float/number is declared, a bool never is),
each value is in the property's `enum` and in its verifier-only `allowed` list
when the spec gives them; strings are compared after strip and case folding only
where the property says `"case_insensitive": true`. Arrays are checked item by
item against `items`, objects against nested `properties`. None of the three
raises on model values; `schema_errors` and `call_matches` do raise on a broken
schema or spec (a programming error).

Not guaranteed: `parse_json` returns None both for junk and for the JSON text
`null`; NaN and Infinity are rejected, also as a number that overflows a float
(`1e999`); duplicate keys keep the last value; texts over 1 MB and values nested
more than `MAX_DEPTH` (100) arrays/objects deep are junk, so what `parse_json`
returns is safe to hand to recursive code such as `state_hash`.
`call_matches` compares numbers with `==` (no tolerance), ignores JSON Schema
keywords other than type, enum, items, properties and required, and checks one
call (split parallel calls yourself).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Mapping
from typing import Any

from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from posttrain.types import ToolCall

_MAX_TEXT = 1 << 20
MAX_DEPTH = 100
_MAX_ERRORS = 20
_MAX_MESSAGE = 200


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # `1e999`: the Infinity that parse_constant never sees
        raise ValueError(f"{text[:40]} overflows a float")
    return value


def _bracket_depth_bound(body: str) -> int:
    """The deepest bracket nesting of the text, strings included: a cheap upper bound."""
    import numpy as np

    steps = np.zeros(256, dtype=np.int8)
    steps[[ord("["), ord("{")]] = 1
    steps[[ord("]"), ord("}")]] = -1
    codes = np.frombuffer(body.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    return int(np.cumsum(steps[codes], dtype=np.int32).max()) if codes.size else 0


def _too_deep(value: Any) -> bool:
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(MAX_DEPTH):
        children: list[Any] = []
        for item in level:
            members = item.values() if isinstance(item, dict) else item
            children += [c for c in members if isinstance(c, (dict, list))]
        if not children:
            return False
        level = children
    return True


def parse_json(text: str) -> Any | None:
    """The value when the whole stripped text is one JSON value (a ```json fence is allowed).

    >>> parse_json('```json\\n{"a": [1, 2.5]}\\n```')
    {'a': [1, 2.5]}
    >>> parse_json('{"a": 1} and more') is None, parse_json("NaN") is None
    (True, True)
    """
    if not isinstance(text, str) or len(text) > _MAX_TEXT:
        return None
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        first_line, _, rest = body[3:-3].partition("\n")
        if first_line.strip().lower() not in ("", "json") or "```" in rest:
            return None
        body = rest
    try:
        value = json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError):
        return None
    # Deep values would make recursive consumers (state_hash, jsonschema) raise. Two cheap
    # upper bounds on the depth come first, so the walk over the value is rarely needed.
    if (
        body.count("[") + body.count("{") > MAX_DEPTH
        and _bracket_depth_bound(body) > MAX_DEPTH
        and _too_deep(value)
    ):
        return None
    return value


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Validator:
    schema = json.loads(schema_json)
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _short(text: str, limit: int = _MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def schema_errors(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Messages for what in `value` breaks the JSON Schema, at most 20; [] when valid.

    >>> schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    >>> schema_errors({"n": 3}, schema), schema_errors({"n": "3"}, schema)
    ([], ["$.n: '3' is not of type 'integer'"])
    """
    validator = _validator(json.dumps(schema, sort_keys=True))
    try:
        errors = list(itertools.islice(validator.iter_errors(value), _MAX_ERRORS))
        return [_short(f"{error.json_path}: {error.message}") for error in errors]
    except RecursionError:
        return ["$: value nested too deeply"]


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "str": (str,),
    "integer": (int,),
    "int": (int,),
    "number": (int, float),
    "float": (int, float),
    "boolean": (bool,),
    "bool": (bool,),
    "array": (list,),
    "list": (list,),
    "tuple": (list,),
    "object": (dict,),
    "dict": (dict,),
    "null": (type(None),),
}


def _has_type(value: Any, declared: Any) -> bool:
    names = declared if isinstance(declared, list) else [declared]
    for name in names:
        if name in (None, "any"):
            return True
        if name not in _TYPES:
            raise ValueError(f"call_matches: unknown type {name!r} in spec")
        if isinstance(value, bool) and name not in ("boolean", "bool"):
            continue
        if isinstance(value, _TYPES[name]):
            return True
    return False


def _equal(value: Any, expected: Any, case_insensitive: bool) -> bool:
    if isinstance(value, str) and isinstance(expected, str):
        if case_insensitive:
            return value.strip().casefold() == expected.strip().casefold()
        return value == expected
    if isinstance(value, bool) or isinstance(expected, bool):
        return value is expected
    if isinstance(value, (int, float)) and isinstance(expected, (int, float)):
        return value == expected
    if isinstance(value, list) and isinstance(expected, (list, tuple)):
        return len(value) == len(expected) and all(
            _equal(v, e, case_insensitive) for v, e in zip(value, expected, strict=True)
        )
    if isinstance(value, dict) and isinstance(expected, Mapping):
        return value.keys() == expected.keys() and all(
            _equal(value[k], expected[k], case_insensitive) for k in value
        )
    return value is None and expected is None


def _value_error(value: Any, prop: Mapping[str, Any], path: str) -> str | None:
    declared = prop.get("type")
    if not _has_type(value, declared):
        return f"argument {path} should be {declared}, got {type(value).__name__}"
    case_insensitive = bool(prop.get("case_insensitive", False))
    for key in ("enum", "allowed"):
        options = prop.get(key)
        if options is not None and not any(_equal(value, o, case_insensitive) for o in options):
            return f"argument {path} has a value outside the {'enum' if key == 'enum' else 'allowed values'}"
    if isinstance(value, list) and isinstance(prop.get("items"), Mapping):
        for i, item in enumerate(value):
            error = _value_error(item, prop["items"], f"{path}[{i}]")
            if error:
                return error
    if isinstance(value, dict) and isinstance(prop.get("properties"), Mapping):
        return _arguments_error(value, prop, path + ".")
    return None


def _arguments_error(
    arguments: dict[str, Any], schema: Mapping[str, Any], prefix: str
) -> str | None:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in arguments:
            return f"missing required argument {prefix}{name}"
    for name, value in arguments.items():
        if name not in properties:
            return f"unexpected argument {_short(prefix + str(name), 60)}"
        error = _value_error(value, properties[name], prefix + name)
        if error:
            return error
    return None


def _name_and_arguments(call: Any) -> tuple[Any, Any] | None:
    if isinstance(call, ToolCall):
        return call.name, call.arguments
    if isinstance(call, str):
        call = parse_json(call)
    if not isinstance(call, dict):
        return None
    if "name" in call:
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):  # OpenAI style: arguments as a JSON string
            arguments = parse_json(arguments)
        return call["name"], arguments
    if len(call) == 1:  # BFCL style: {"function_name": {arguments}}
        ((name, arguments),) = call.items()
        return name, arguments
    return None


def call_matches(call: Any, spec: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether one function call fits the spec, and why not.

    `call` is a `ToolCall`, a dict `{"name": ..., "arguments": {...}}` (arguments may
    be a JSON string), a dict `{"name_of_function": {...}}`, or JSON text of either.
    `spec` is an OpenAI / BFCL function description (a `{"type": "function",
    "function": {...}}` wrapper is unwrapped).

    >>> spec = {"name": "get_weather", "parameters": {"type": "object", "required": ["city"],
    ...     "properties": {"city": {"type": "string", "allowed": ["Paris"], "case_insensitive": True},
    ...                    "days": {"type": "float"}}}}
    >>> call_matches('{"name": "get_weather", "arguments": {"city": " paris", "days": 3}}', spec)
    (True, 'call matches')
    >>> call_matches({"get_weather": {"city": "Paris", "unit": "C"}}, spec)
    (False, 'unexpected argument unit')
    """
    if "function" in spec and isinstance(spec["function"], Mapping):
        spec = spec["function"]
    parsed = _name_and_arguments(call)
    if parsed is None:
        return False, "not a function call"
    name, arguments = parsed
    if not isinstance(name, str):
        return False, "function name is not a string"
    if name != spec["name"]:
        return False, f"wrong function {_short(str(name), 60)!r}, expected {spec['name']!r}"
    if not isinstance(arguments, dict):
        return False, "arguments are not an object"
    try:
        error = _arguments_error(arguments, spec.get("parameters") or {}, "")
    except RecursionError:
        return False, "arguments nested too deeply"
    return (False, error) if error else (True, "call matches")
