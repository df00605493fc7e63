"""Tool calls in a model's own chat-template format, beside the `<tool_call>` convention.

    fmt = detect_tool_format(tokenizer)        # "tool_call" | "llama3_json" | "mistral"
    parsed = parse_for_format(completion.text, fmt)   # ParsedCalls; never raises

Formats (`TOOL_FORMATS`):
- `"tool_call"` — Hermes, Qwen2.5/Qwen3 and the built-in models:
  `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` anywhere in the text
  (`parse_tool_calls`).
- `"llama3_json"` — Llama 3.1/3.2/3.3 custom tools: the message is
  `{"name": ..., "parameters": {...}}` ("arguments" accepted too), optionally after
  `<|python_tag|>`; several calls may follow one another, separated by `;`.
- `"mistral"` — `[TOOL_CALLS]` then a JSON array `[{"name": ..., "arguments": {...}}]`
  (v3 tokenizers) or `name[ARGS]{...}` (v11 and later; `[CALL_ID]id` is skipped).

`detect_tool_format` looks for each format's markers in the tokenizer's chat template
(`[TOOL_CALLS]`, `<|python_tag|>`, `<tool_call>`, Llama 3.2's `"parameters": `), then
in its added tokens; a tokenizer with none (SmolLM2's ChatML) gets `"tool_call"`.
`template_renders_tools` says whether the template uses a `tools` argument at all:
neither the built-in tiny template nor SmolLM2's does — `apply_chat_template(...,
tools=schemas)` runs and silently drops the schemas there, so domains describe their
tools in the prompt themselves.

Not guaranteed: Llama's built-in tool syntax (`<|python_tag|>brave_search.call(...)`)
and code after `<|python_tag|>` are reported as errors, not run. Without the tag, a
Llama-format message is a call only when it opens with a JSON object holding "name"
and "parameters"/"arguments" — an answer that is exactly such JSON is taken for a
call, and text that merely opens with `{` is an answer, not a malformed call.
Content around the calls is not returned (text after a Llama call is reported as a
malformed next call: the format's message is the calls alone); detection reads template text only, so a
template that renders tool calls some other way falls back to `"tool_call"`.

As in `parse_tool_calls`, markup inside a call's JSON strings (`"[TOOL_CALLS]"`,
`"<|python_tag|>"`) is read as text, so every call written in a format parses back,
and NaN or Infinity make a call malformed.
"""

from __future__ import annotations

import re
from typing import Any

from posttrain.tools.arguments import snippet
from posttrain.tools.parse import (
    TOOL_CALL_OPEN,
    JsonRead,
    ParsedCalls,
    add_decoded,
    call_from_payload,
    parse_tool_calls,
    read_json,
)

TOOL_FORMATS = ("tool_call", "llama3_json", "mistral")
PYTHON_TAG = "<|python_tag|>"
MISTRAL_TOOL_CALLS = "[TOOL_CALLS]"
MISTRAL_ARGS = "[ARGS]"
MISTRAL_CALL_ID = "[CALL_ID]"

# Checked in order: a Llama 3.1 template also writes '"parameters": ' for custom tools.
_TEMPLATE_MARKERS = (
    (MISTRAL_TOOL_CALLS, "mistral"),
    (PYTHON_TAG, "llama3_json"),
    (TOOL_CALL_OPEN, "tool_call"),
    ('"parameters": ', "llama3_json"),  # Llama 3.2's template has no python tag
)
_SEPARATOR = re.compile(r"\s*;?\s*")


def detect_tool_format(tokenizer: Any) -> str:
    """The tool-call format the tokenizer's chat template teaches; `"tool_call"` when
    it shows none."""
    template = _template_text(tokenizer)
    for marker, fmt in _TEMPLATE_MARKERS:
        if marker in template:
            return fmt
    get_added = getattr(tokenizer, "get_added_vocab", None)
    added = get_added() if callable(get_added) else {}
    for marker, fmt in _TEMPLATE_MARKERS[:3]:
        if isinstance(added, dict) and marker in added:
            return fmt
    return "tool_call"


def template_renders_tools(tokenizer: Any) -> bool:
    """Whether the chat template reads a `tools` variable (so `apply_chat_template(...,
    tools=schemas)` shows the schemas to the model rather than dropping them)."""
    return re.search(r"\btools\b", _template_text(tokenizer)) is not None


def _template_text(tokenizer: Any) -> str:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, str):
        return template
    if isinstance(template, dict):  # named templates, e.g. {"default": ..., "tool_use": ...}
        return "\n".join(t for t in template.values() if isinstance(t, str))
    if isinstance(template, list):  # the older [{"name": ..., "template": ...}] form
        return "\n".join(str(t.get("template", "")) for t in template if isinstance(t, dict))
    return ""


def parse_for_format(text: str, fmt: str) -> ParsedCalls:
    """The calls in `text` written in format `fmt` (one of `TOOL_FORMATS`), with one
    message per malformed call. Never raises for any text; an unknown `fmt` is a
    programming error (ValueError).

    >>> parse_for_format('{"name": "add", "parameters": {"a": 1}}', "llama3_json").calls
    [ToolCall(name='add', arguments={'a': 1}, id='call_0')]
    >>> parse_for_format('[TOOL_CALLS]add[ARGS]{"a": 1}', "mistral").calls[0].arguments
    {'a': 1}
    """
    if fmt not in TOOL_FORMATS:
        raise ValueError(f"unknown tool format {fmt!r}; expected one of {TOOL_FORMATS}")
    if not isinstance(text, str):
        return ParsedCalls(errors=[f"expected text, got {type(text).__name__}"])
    if fmt == "tool_call":
        return parse_tool_calls(text)
    items = _llama_items(text) if fmt == "llama3_json" else _mistral_items(text)
    parsed = ParsedCalls()
    for index, item in enumerate(items):
        add_decoded(parsed, item if isinstance(item, _Problem) else call_from_payload(item, index))
    return parsed


class _Problem(str):
    """Why a call is malformed, among the payloads a parse collects: a plain str there
    is a payload the model wrote (not a call), never taken for a message of ours."""


def _problem(read: JsonRead, text: str) -> str:
    return f"invalid JSON ({read.error}) in {snippet(text[read.start : read.start + 60])}"


def _looks_like_call(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and ("parameters" in value or "arguments" in value)
    )


def _llama_items(text: str) -> list[Any]:
    """Call payloads (dicts) and error messages (str), in order, from a Llama message."""
    # The JSON values the message opens with are read before looking for the tag, so a
    # tag inside one of their strings is not taken for the real one.
    pos = _skip_separator(text, 0)
    leading, stop = _json_run(text, pos) if text.startswith("{", pos) else ([], 0)
    tag = text.find(PYTHON_TAG, stop)
    if tag < 0:
        if not leading or not leading[0].whole or not _looks_like_call(leading[0].value):
            return []  # an answer (JSON, or text opening with a brace), not a call
        return _run_items(leading, text)
    body = text[tag + len(PYTHON_TAG) :]
    pos = _skip_separator(body, 0)
    if not body.startswith("{", pos):  # the tag promises a call
        got = snippet(body[pos : pos + 60])
        return [_Problem(f"tool call 0: expected a JSON object after {PYTHON_TAG}, got {got}")]
    return _run_items(_json_run(body, pos)[0], body)


def _json_run(text: str, pos: int) -> tuple[list[JsonRead], int]:
    """The reads of JSON values from `pos` on, separated by `;` or space, up to the end of
    the text or up to and including the first that is not a whole value; and where that
    one starts (or the end of the text)."""
    reads: list[JsonRead] = []
    while pos < len(text):
        read = read_json(text, pos)
        reads.append(read)
        if not read.whole:
            break
        pos = _skip_separator(text, read.end)
    return reads, pos


def _run_items(reads: list[JsonRead], text: str) -> list[Any]:
    return [
        _Problem(f"tool call {i}: {_problem(read, text)} at character {read.start}")
        if read.error
        else read.value
        for i, read in enumerate(reads)
    ]


def _skip_separator(text: str, pos: int) -> int:
    match = _SEPARATOR.match(text, pos)
    return match.end() if match else pos


def _mistral_items(text: str) -> list[Any]:
    """Call payloads (dicts) and error messages (str), in order, from a Mistral message."""
    items: list[Any] = []
    marker = text.find(MISTRAL_TOOL_CALLS)
    while marker >= 0:
        start = marker + len(MISTRAL_TOOL_CALLS)
        following = text.find(MISTRAL_TOOL_CALLS, start)
        segment = text[start:following] if following >= 0 else text[start:]
        body = segment.lstrip()
        name: str | None = None  # set for the v11 form, name[ARGS]{...}
        if not body.startswith(("[", "{")):
            head, found, rest = body.partition(MISTRAL_ARGS)
            if not found:
                items.append(
                    _Problem(
                        f"tool call {len(items)}: {MISTRAL_TOOL_CALLS} must be followed by a "
                        f"JSON array or name{MISTRAL_ARGS}{{...}}, got {snippet(body[:60])}"
                    )
                )
                marker = following
                continue
            name = head.split(MISTRAL_CALL_ID, 1)[0].strip()
            body = rest.lstrip()
        # Read from the whole text, as the value may hold the marker in a string (linear
        # in all, as in `parse._blocks`).
        value_start = start + len(segment) - len(body)  # body is a suffix of the segment
        read = read_json(text, value_start)
        if read.whole:
            _add_mistral_item(items, read, text, name)
            marker = text.find(MISTRAL_TOOL_CALLS, read.end)
            continue
        # Not one JSON value: what is reported is the segment up to the next marker.
        _add_mistral_item(items, read_json(body, 0), body, name)
        marker = following
    return items


def _add_mistral_item(items: list[Any], read: JsonRead, text: str, name: str | None) -> None:
    """Add the calls of one `[TOOL_CALLS]` (`read` from `text`), or why there are none."""
    if read.error:
        where = f"tool call {len(items)}" + ("" if name is None else f" ({snippet(name)})")
        arguments = "" if name is None else " arguments:"
        items.append(_Problem(f"{where}:{arguments} {_problem(read, text)}"))
    elif name is not None:
        items.append({"name": name, "arguments": read.value})
    elif isinstance(read.value, list):
        items.extend(read.value)
    else:
        items.append(read.value)
