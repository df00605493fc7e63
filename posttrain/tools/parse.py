"""Tool calls in model text: parse them, format them, strip them, describe tools.

A model asks for a tool by writing `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
anywhere in its text. `parse_tool_calls` finds every such block and returns the
well-formed calls plus one readable message per malformed block; the episode loop
feeds those messages back to the model as failed observations. `format_tool_call`
writes the compact canonical form (what references and SFT data use), and
`function_schema` builds the OpenAI function-format schema a session advertises.

A block is the JSON value after `<tool_call>` and the closing tag after it, so a string
argument may itself hold the markup (a file that documents tool calls): whatever the
(Unicode) arguments, `parse_tool_calls(format_tool_call(call))` gives the call back.
Only when the text after a tag is not one JSON value does the block end at the next
closing tag. NaN and Infinity, which Python's json reads but JSON lacks, make a call
malformed (also when written as a number too large for a float, `1e999`),
and so do arguments nested deeper than `MAX_NESTING` levels and a name or argument
holding a lone surrogate (`"\\ud800"`, valid JSON syntax but not Unicode text): a
rollout holding either could not be recorded (recursive copies and encoders run out of
stack; UTF-8 cannot encode a lone surrogate).

Not guaranteed: the parser does not validate arguments against a tool's schema
(the tool does that), and it does not look for calls in any other markup (no
Markdown code fences, no bare JSON). It never raises, whatever the text.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from posttrain.types import ToolCall

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

_SNIPPET_CHARS = 60
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")  # the whitespace json.loads allows around a value
_FIRST_WINDOW = 1024  # characters `read_json` reads first
_LOOKAHEAD = 16  # more than the decoder peeks past a failing token (`-Infinity`, `\uXXXX`)
MAX_NESTING = 100  # levels of objects and arrays in a call's arguments, the object included


@dataclass
class ParsedCalls:
    """The calls found in one text, and one message per malformed block."""

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _NonJsonConstant(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, but they are not JSON."""


def _reject_constant(name: str) -> Any:
    raise _NonJsonConstant(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # `1e999` would be an Infinity the parser let through
        raise _NonJsonConstant(f"{_snippet(text)} is out of range for a float")
    return value


def _finite_float_or_none(text: str) -> float | None:
    value = float(text)
    return None if math.isinf(value) else value


_STRICT = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_LENIENT = json.JSONDecoder(parse_constant=lambda name: None, parse_float=_finite_float_or_none)


def loads_json(text: str) -> Any:
    """`json.loads` for model output: NaN and Infinity (also as `1e999`) raise ValueError
    like other bad JSON."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)


@dataclass(slots=True)
class JsonRead:
    """What `read_json` found at one position of model text."""

    start: int  # where the value was to start
    end: int  # just past the value when `whole`; else where reading stopped
    whole: bool  # a syntactically whole value was read (it may still hold a NaN)
    value: Any = None  # the value when `whole`; a NaN or Infinity in it reads as None
    error: str = ""  # why this is not one valid JSON value; "" when it is


def read_json(text: str, pos: int) -> JsonRead:
    """The JSON value starting exactly at `pos`, read across any markup inside its strings.

    A NaN or Infinity still delimits the value (so the caller knows where the call
    ends) but sets `error`. Never raises.
    """
    size = _FIRST_WINDOW
    while True:
        # A bounded copy, grown while the value may run past its end: the message of a
        # failed read counts the lines before the failure, and over the whole text that
        # would make a long output full of tags quadratic.
        window = text[pos : pos + size]
        final = pos + size >= len(text)
        try:
            value, end, error = _decode_prefix(window)
        except json.JSONDecodeError as exc:
            # An unterminated string is reported where it starts but was read to the end.
            stop = len(window) if exc.msg.startswith("Unterminated string") else exc.pos
            if final or stop < len(window) - _LOOKAHEAD:
                return JsonRead(pos, pos + stop, whole=False, error=exc.msg)
        except (ValueError, RecursionError) as exc:  # an over-long integer, deep nesting
            return JsonRead(pos, pos + len(window), whole=False, error=type(exc).__name__)
        else:
            if final or end < len(window):  # a number that ends at the cut may go on
                return JsonRead(pos, pos + end, whole=True, value=value, error=error)
        size *= 4


def _decode_prefix(doc: str) -> tuple[Any, int, str]:
    """The JSON value `doc` opens with, the index after it, and "" or, when it holds a NaN
    or Infinity (read as None), why it is not valid. Raises what `raw_decode` raises."""
    try:
        value, end = _STRICT.raw_decode(doc)
        return value, end, ""
    except _NonJsonConstant as exc:
        value, end = _LENIENT.raw_decode(doc)  # read again to the end of the value
        return value, end, str(exc)


@dataclass
class _Block:
    start: int  # index of the opening tag
    end: int  # index just past the closing tag, or -1 when the tag never closes
    body: str
    read: JsonRead | None = None  # the body's JSON, when the block was delimited by reading it


def _blocks(text: str) -> list[_Block]:
    """Every `<tool_call>` block in order; an unclosed one has `end == -1`."""
    blocks: list[_Block] = []
    pos = 0
    close = -1  # cached position of the next closing tag, so junk stays linear
    while True:
        start = text.find(TOOL_CALL_OPEN, pos)
        if start < 0:
            return blocks
        body_start = start + len(TOOL_CALL_OPEN)
        # Reads stay linear in all: a read that passes later tags holds them in its
        # strings, so a read from one of those meets the next outside its own strings
        # (a tag is not JSON) and stops there.
        read = read_json(text, _skip_json_space(text, body_start))
        after = _skip_json_space(text, read.end) if read.whole else -1
        if read.whole and text.startswith(TOOL_CALL_CLOSE, after):
            end = after + len(TOOL_CALL_CLOSE)
            blocks.append(_Block(start, end, text[body_start:after], read))
            pos = end
            continue
        # Not one JSON value and then the closing tag: the block ends at the next closing
        # tag, which keeps the messages for malformed calls short and local.
        if close < body_start:
            close = text.find(TOOL_CALL_CLOSE, body_start)
        if close < 0:
            blocks.append(_Block(start, -1, text[body_start:]))
            return blocks
        reopen = text.find(TOOL_CALL_OPEN, body_start, close)
        if reopen >= 0:
            # A second opening tag before any close: the first block never closed.
            blocks.append(_Block(start, -1, text[body_start:reopen]))
            pos = reopen
            continue
        end = close + len(TOOL_CALL_CLOSE)
        blocks.append(_Block(start, end, text[body_start:close]))
        pos = end


def _skip_json_space(text: str, pos: int) -> int:
    match = _JSON_SPACE.match(text, pos)
    return match.end() if match else pos


def _snippet(body: str) -> str:
    flat = " ".join(body.split())
    if len(flat) > _SNIPPET_CHARS:
        flat = flat[:_SNIPPET_CHARS] + "..."
    return repr(flat)


def _decode_call(block: _Block, index: int) -> ToolCall | str:
    """A ToolCall from one closed block, or an error message saying what is wrong."""
    where = f"tool call {index}"
    if block.read is not None:
        if block.read.error:
            return f"{where}: invalid JSON ({block.read.error}) in {_snippet(block.body)}"
        return call_from_payload(block.read.value, index)
    try:
        payload = loads_json(block.body)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, json.JSONDecodeError):
            reason = exc.msg
        elif isinstance(exc, _NonJsonConstant):
            reason = str(exc)
        else:
            reason = type(exc).__name__
        return f"{where}: invalid JSON ({reason}) in {_snippet(block.body)}"
    return call_from_payload(payload, index)


def call_from_payload(payload: Any, index: int) -> ToolCall | str:
    """A ToolCall from one decoded call object (`{"name", "arguments"}`, or Llama's
    `"parameters"`; either may be a JSON string), or a message saying what is wrong."""
    where = f"tool call {index}"
    if not isinstance(payload, dict):
        return f"{where}: expected a JSON object, got {type(payload).__name__}"
    name = payload.get("name")
    if not isinstance(name, str) or not name.strip():
        return f'{where}: missing "name" (a non-empty string)'
    where = f"{where} ({_snippet(name)})"
    if surrogate := _surrogate(name):
        return f'{where}: "name" holds a lone surrogate ({surrogate}), which is not Unicode text'
    key = "parameters" if "parameters" in payload and "arguments" not in payload else "arguments"
    arguments: Any = payload.get(key, {})
    if isinstance(arguments, str):
        try:
            arguments = loads_json(arguments)
        except (ValueError, RecursionError):
            return f'{where}: "{key}" is a string that is not valid JSON'
    if not isinstance(arguments, dict):
        return f'{where}: "{key}" must be a JSON object, got {type(arguments).__name__}'
    problem = _arguments_problem(arguments)
    if problem:
        return f'{where}: "{key}" {problem}'
    return ToolCall(name=name.strip(), arguments=arguments)


def _surrogate(text: str) -> str:
    """A lone surrogate in `text`, written as its JSON escape; "" when there is none."""
    found = _SURROGATE.search(text)
    return f"\\u{ord(found.group()):04x}" if found else ""


def _arguments_problem(arguments: dict[str, Any]) -> str:
    """Why decoded `arguments` cannot be recorded, or "" (walked without recursion: the
    decoder accepts values deeper than Python's stack allows a recursive walk from here)."""
    stack: list[tuple[Any, int]] = [(arguments, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if surrogate := _surrogate(item):
                return f"hold a lone surrogate ({surrogate}), which is not Unicode text"
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_NESTING:
            return f"are nested deeper than {MAX_NESTING} levels"
        if isinstance(item, dict):
            stack.extend((key, depth) for key in item)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return ""


def parse_tool_calls(text: str) -> ParsedCalls:
    """Find every `<tool_call>{json}</tool_call>` block in `text`. Never raises.

    `arguments` may be an object or a JSON string holding one; when absent it is
    `{}`. Calls get ids `call_0`, `call_1`, ... in order of appearance.

    >>> text = '<tool_call>{"name":"calculator","arguments":{"expression":"3*4"}}</tool_call>'
    >>> parsed = parse_tool_calls(text)
    >>> parsed.calls[0].name, parsed.calls[0].arguments, parsed.calls[0].id, parsed.errors
    ('calculator', {'expression': '3*4'}, 'call_0', [])
    >>> parse_tool_calls("<tool_call>{oops</tool_call>").errors[0][:30]
    'tool call 0: invalid JSON (Exp'
    """
    parsed = ParsedCalls()
    if not isinstance(text, str):
        parsed.errors.append(f"expected text, got {type(text).__name__}")
        return parsed
    for index, block in enumerate(_blocks(text)):
        if block.end < 0:
            parsed.errors.append(
                f"tool call {index}: {TOOL_CALL_OPEN} at character {block.start} "
                f"is never closed by {TOOL_CALL_CLOSE}"
            )
            continue
        add_decoded(parsed, _decode_call(block, index))
    return parsed


def add_decoded(parsed: ParsedCalls, decoded: ToolCall | str) -> None:
    """Append one decoded call (numbered `call_0`, `call_1`, ...) or its error message."""
    if isinstance(decoded, str):
        parsed.errors.append(decoded)
        return
    decoded.id = f"call_{len(parsed.calls)}"
    parsed.calls.append(decoded)


def format_tool_call(call: ToolCall) -> str:
    """The compact canonical markup for `call` (its id is not written).

    >>> format_tool_call(ToolCall("calculator", {"expression": "3*4"}))
    '<tool_call>{"name":"calculator","arguments":{"expression":"3*4"}}</tool_call>'

    Raises ValueError for arguments `parse_tool_calls` would refuse (NaN or infinite
    numbers, nesting deeper than `MAX_NESTING`, a lone surrogate): what is written parses
    back.
    """
    if isinstance(call.arguments, dict) and (problem := _arguments_problem(call.arguments)):
        raise ValueError(f"tool call {call.name!r} cannot be written: its arguments {problem}")
    payload = {"name": call.name, "arguments": call.arguments}
    try:
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as err:  # NaN or ±Infinity: the parser refuses them, so never write them
        raise ValueError(
            f"tool call {call.name!r} cannot be written as JSON: an argument is NaN or infinite"
        ) from err
    return f"{TOOL_CALL_OPEN}{body}{TOOL_CALL_CLOSE}"


def strip_tool_calls(text: str) -> str:
    """`text` without its closed `<tool_call>` blocks, stripped. Unclosed tags stay.

    >>> strip_tool_calls('Let me check. <tool_call>{"name":"f"}</tool_call> ')
    'Let me check.'
    """
    pieces: list[str] = []
    pos = 0
    for block in _blocks(text):
        if block.end < 0:
            continue
        pieces.append(text[pos : block.start])
        pos = block.end
    pieces.append(text[pos:])
    return "".join(pieces).strip()


def function_schema(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI function-format tool schema. `parameters` is a JSON Schema object.

    >>> schema = function_schema("echo", "Repeat the text.", {"type": "object", "properties": {}})
    >>> schema["type"], schema["function"]["name"]
    ('function', 'echo')
    """
    if not _TOOL_NAME.fullmatch(name):
        raise ValueError(f"tool name must match [A-Za-z0-9_-]{{1,64}}, got {name!r}")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise ValueError(f"tool {name!r}: parameters must be a JSON Schema with type 'object'")
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }
