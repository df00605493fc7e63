"""Tool-call parsing, formatting and stripping, and OpenAI function schemas."""

from __future__ import annotations

import doctest
import math
import random
import string
import time

import pytest

from posttrain.tools import (
    ParsedCalls,
    format_tool_call,
    function_schema,
    parse_tool_calls,
    strip_tool_calls,
)
from posttrain.tools import parse as parse_module
from posttrain.tools.parse import MAX_NESTING
from posttrain.types import Message, ToolCall

CALC = '<tool_call>{"name":"calculator","arguments":{"expression":"3*4"}}</tool_call>'


def test_parses_one_call_with_name_arguments_and_id() -> None:
    parsed = parse_tool_calls(f"Let me compute. {CALC}")
    assert parsed.errors == []
    assert parsed.calls == [ToolCall("calculator", {"expression": "3*4"}, id="call_0")]


def test_parses_several_calls_with_sequential_ids() -> None:
    text = CALC + ' and <tool_call>{"name": "echo", "arguments": {"text": "hi"}}</tool_call>'
    parsed = parse_tool_calls(text)
    assert [(c.name, c.id) for c in parsed.calls] == [("calculator", "call_0"), ("echo", "call_1")]


def test_arguments_given_as_json_string_are_decoded() -> None:
    text = '<tool_call>{"name":"f","arguments":"{\\"x\\": 1}"}</tool_call>'
    assert parse_tool_calls(text).calls[0].arguments == {"x": 1}


def test_missing_arguments_become_an_empty_object() -> None:
    assert parse_tool_calls('<tool_call>{"name":"f"}</tool_call>').calls[0].arguments == {}


def test_bad_json_is_reported_not_raised() -> None:
    parsed = parse_tool_calls("<tool_call>{name: calculator}</tool_call>")
    assert parsed.calls == []
    assert len(parsed.errors) == 1
    assert "invalid JSON" in parsed.errors[0]


def test_missing_name_is_reported() -> None:
    parsed = parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>')
    assert parsed.calls == []
    assert 'missing "name"' in parsed.errors[0]


@pytest.mark.parametrize("arguments", ["[1, 2]", '"[1, 2]"', '"not json"', "3"])
def test_arguments_that_are_not_an_object_are_reported(arguments: str) -> None:
    parsed = parse_tool_calls(f'<tool_call>{{"name":"f","arguments":{arguments}}}</tool_call>')
    assert parsed.calls == []
    assert '"arguments"' in parsed.errors[0]


def test_non_object_payload_is_reported() -> None:
    parsed = parse_tool_calls("<tool_call>[1, 2]</tool_call>")
    assert "expected a JSON object" in parsed.errors[0]


def test_unclosed_tag_is_reported() -> None:
    parsed = parse_tool_calls('<tool_call>{"name":"f","arguments":{}}')
    assert parsed.calls == []
    assert "never closed" in parsed.errors[0]


def test_reopened_tag_reports_the_first_as_unclosed_and_parses_the_second() -> None:
    parsed = parse_tool_calls("<tool_call>{oops " + CALC)
    assert [c.name for c in parsed.calls] == ["calculator"]
    assert len(parsed.errors) == 1
    assert "never closed" in parsed.errors[0]


def test_malformed_block_does_not_hide_a_later_valid_call() -> None:
    parsed = parse_tool_calls("<tool_call>{bad}</tool_call>" + CALC)
    assert [c.id for c in parsed.calls] == ["call_0"]
    assert len(parsed.errors) == 1


def test_text_without_tags_has_no_calls_and_no_errors() -> None:
    assert parse_tool_calls("The answer is 12.") == ParsedCalls([], [])


def _junk_texts() -> dict[str, str]:
    rng = random.Random(0)
    return {
        "100KB printable": "".join(rng.choice(string.printable) for _ in range(100_000)),
        "broken utf-8": b"<tool_call>\xff\xfe\xc3(</tool_call>\xed\xa0\x80".decode(
            errors="replace"
        ),
        "lone surrogate": '<tool_call>{"name":"\ud800","arguments":{}}</tool_call>',
        "deep nesting": "<tool_call>" + "[" * 100_000 + "</tool_call>",
        "huge integer": '<tool_call>{"name":"f","arguments":{"x":'
        + "9" * 10_000
        + "}}</tool_call>",
        "many opening tags": "<tool_call>" * 9_000 + "</tool_call>",
        "many empty blocks": "<tool_call></tool_call>" * 4_000,
        # Each tag opens a string that runs past the next closing tag, then breaks.
        "tags before broken strings": '<tool_call>"abc</tool_call>\x01' * 3_600,
    }


@pytest.mark.parametrize("name", list(_junk_texts()))
def test_never_raises_on_junk(name: str) -> None:
    text = _junk_texts()[name]
    started = time.perf_counter()
    parsed = parse_tool_calls(text)
    assert time.perf_counter() - started < 2.0
    assert all(isinstance(e, str) and len(e) < 300 for e in parsed.errors)


def test_format_tool_call_writes_compact_json_with_name_first() -> None:
    call = ToolCall("calculator", {"expression": "3*4"}, id="call_7")
    assert format_tool_call(call) == CALC


def test_format_tool_call_keeps_non_ascii_text() -> None:
    call = ToolCall("echo", {"text": "héllo"})
    assert (
        format_tool_call(call)
        == '<tool_call>{"name":"echo","arguments":{"text":"héllo"}}</tool_call>'
    )


def test_format_then_parse_round_trips() -> None:
    call = ToolCall("search", {"query": "a<b", "k": 3, "nested": {"x": [1, None]}}, id="call_0")
    assert parse_tool_calls(format_tool_call(call)).calls == [call]


def test_strip_tool_calls_removes_blocks_and_strips() -> None:
    assert strip_tool_calls(f"  Let me check. {CALC}\n Done. ") == "Let me check. \n Done."


def test_strip_tool_calls_removes_malformed_but_closed_blocks() -> None:
    assert strip_tool_calls("a <tool_call>{bad}</tool_call> b") == "a  b"


def test_strip_tool_calls_keeps_an_unclosed_tag() -> None:
    assert strip_tool_calls("answer <tool_call>{") == "answer <tool_call>{"


def test_function_schema_has_openai_function_shape() -> None:
    parameters = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    assert function_schema("f", "Does f.", parameters) == {
        "type": "function",
        "function": {"name": "f", "description": "Does f.", "parameters": parameters},
    }


@pytest.mark.parametrize("name", ["", "has space", "x" * 65])
def test_function_schema_rejects_a_bad_tool_name(name: str) -> None:
    with pytest.raises(ValueError, match="tool name"):
        function_schema(name, "", {"type": "object"})


def test_function_schema_rejects_parameters_that_are_not_an_object_schema() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        function_schema("f", "", {"type": "string"})


def test_doctests_pass() -> None:
    assert doctest.testmod(parse_module).failed == 0


def test_a_string_argument_holding_the_tags_parses_back() -> None:
    text = "Call tools as <tool_call>{...}</tool_call> or </tool_call><tool_call>."
    call = ToolCall("write_file", {"path": "README.md", "text": text}, id="call_0")
    assert parse_tool_calls(format_tool_call(call)) == ParsedCalls([call], [])


def test_strip_tool_calls_removes_a_block_whose_string_holds_the_tags() -> None:
    block = format_tool_call(ToolCall("echo", {"text": "</tool_call> <tool_call>"}))
    assert strip_tool_calls(f"Before. {block} After.") == "Before.  After."


def test_a_value_not_followed_by_the_closing_tag_ends_at_the_next_one() -> None:
    parsed = parse_tool_calls('<tool_call>{"name":"f"} extra</tool_call>' + CALC)
    assert [c.name for c in parsed.calls] == ["calculator"]
    assert len(parsed.errors) == 1 and "invalid JSON (Extra data)" in parsed.errors[0]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_constants_make_the_call_malformed(constant: str) -> None:
    text = f'<tool_call>{{"name":"f","arguments":{{"x":[1,{constant}]}}}}</tool_call>' + CALC
    parsed = parse_tool_calls(text)
    assert [c.name for c in parsed.calls] == ["calculator"]
    assert len(parsed.errors) == 1
    assert f"tool call 0: invalid JSON ({constant} is not valid JSON)" in parsed.errors[0]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_json_constants_in_arguments_given_as_a_string_are_reported(constant: str) -> None:
    text = f'<tool_call>{{"name":"f","arguments":"{{\\"x\\": {constant}}}"}}</tool_call>'
    parsed = parse_tool_calls(text)
    assert parsed.calls == []
    assert parsed.errors == ["tool call 0 ('f'): \"arguments\" is a string that is not valid JSON"]


def test_constant_names_inside_strings_are_plain_text() -> None:
    call = ToolCall("f", {"x": "NaN", "Infinity": "-Infinity"}, id="call_0")
    assert parse_tool_calls(format_tool_call(call)).calls == [call]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_formatting_a_call_with_a_non_finite_argument_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="tool call 'f' cannot be written as JSON: an argument"):
        format_tool_call(ToolCall("f", {"x": [1, {"y": value}]}))


def test_an_unclosed_string_does_not_hide_a_later_call_that_holds_the_tags() -> None:
    later = ToolCall("b", {"t": "</tool_call><tool_call>"}, id="call_0")
    text = '<tool_call>{"name": "a", "arguments": {"x": "oops}}</tool_call> '
    parsed = parse_tool_calls(text + format_tool_call(later))
    assert parsed.calls == [later]
    assert len(parsed.errors) == 1 and "Unterminated string" in parsed.errors[0]


def _nested_call(levels: int) -> str:
    """A call whose arguments object holds arrays down to `levels` levels in all."""
    inner = "[" * (levels - 1) + "]" * (levels - 1)
    return f'<tool_call>{{"name":"f","arguments":{{"x":{inner}}}}}</tool_call>'


def test_arguments_nested_deeper_than_the_limit_are_malformed() -> None:
    # Deep enough for json to decode, too deep for a Rollout holding it to be serialized.
    parsed = parse_tool_calls(_nested_call(600) + CALC)
    assert [c.name for c in parsed.calls] == ["calculator"]
    assert parsed.errors == [
        f"tool call 0 ('f'): \"arguments\" are nested deeper than {MAX_NESTING} levels"
    ]


def test_arguments_at_the_nesting_limit_parse_and_serialize() -> None:
    [call] = parse_tool_calls(_nested_call(MAX_NESTING)).calls
    message = Message("assistant", "", tool_calls=[call])
    assert Message.from_json(message.to_json()) == message
    assert parse_tool_calls(format_tool_call(call)).calls == [call]  # written, read back


def test_format_tool_call_refuses_arguments_the_parser_would_refuse() -> None:
    [call] = parse_tool_calls(_nested_call(MAX_NESTING)).calls
    deeper = ToolCall("f", {"x": [call.arguments["x"]]})
    with pytest.raises(ValueError, match=f"'f' cannot be written: .*deeper than {MAX_NESTING}"):
        format_tool_call(deeper)


@pytest.mark.parametrize(
    "call",
    [
        '{"name":"f","arguments":{"path":"a\\ud800b"}}',
        '{"name":"f","arguments":{"x":[{"\\udfff":1}]}}',
        '{"name":"f","arguments":"{\\"x\\": \\"\\\\ud83d\\"}"}',
        '{"name":"f\\udc00","arguments":{}}',
    ],
)
def test_a_lone_surrogate_escape_makes_the_call_malformed(call: str) -> None:
    # Valid JSON syntax, but UTF-8 cannot encode the decoded text: recording fails.
    parsed = parse_tool_calls(f"<tool_call>{call}</tool_call>{CALC}")
    assert [c.name for c in parsed.calls] == ["calculator"]
    assert len(parsed.errors) == 1 and "lone surrogate" in parsed.errors[0]
    assert "which is not Unicode text" in parsed.errors[0]


def test_a_surrogate_pair_escape_is_one_character() -> None:
    [call] = parse_tool_calls('<tool_call>{"name":"f","arguments":{"e":"\\ud83d\\ude00"}}</tool_call>').calls  # fmt: skip
    assert call.arguments == {"e": "😀"}


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1.5E+400"])
def test_a_number_too_large_for_a_float_makes_the_call_malformed(number: str) -> None:
    # Python reads it as an infinity, which the parser refuses as it refuses Infinity.
    parsed = parse_tool_calls(f'<tool_call>{{"name":"f","arguments":{{"x":{number}}}}}</tool_call>')
    assert parsed.calls == []
    assert parsed.errors == [
        f"tool call 0: invalid JSON ({number!r} is out of range for a float) in "
        f'\'{{"name":"f","arguments":{{"x":{number}}}}}\''
    ]


def test_a_number_too_large_for_a_float_in_arguments_given_as_a_string_is_reported() -> None:
    parsed = parse_tool_calls('<tool_call>{"name":"f","arguments":"{\\"x\\": 1e999}"}</tool_call>')
    assert parsed.calls == []
    assert parsed.errors == ["tool call 0 ('f'): \"arguments\" is a string that is not valid JSON"]


def test_large_finite_and_tiny_floats_parse() -> None:
    text = '<tool_call>{"name":"f","arguments":{"big":1.7e308,"tiny":1e-999}}</tool_call>'
    assert parse_tool_calls(text).calls[0].arguments == {"big": 1.7e308, "tiny": 0.0}
