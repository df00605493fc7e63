"""DocumentSearch tools: schemas, search, read_chunk, and every bad call as an error."""

from __future__ import annotations

from typing import Any

import pytest

from posttrain.tools.document import MAX_K, SCHEMAS, DocumentSearch
from posttrain.types import ToolCall

DOC = "\n\n".join(
    [
        "# Site log",
        "The Marlow warehouse's backup generator was last serviced on 14 March 2019.",
        "The Dunmore depot keeps its spare tyres in the north shed.",
        "# Staff",
    ]
    + [f"Worker {i} of the canteen team starts at {6 + i % 5} o'clock." for i in range(40)]
)


@pytest.fixture(scope="module")
def tools() -> DocumentSearch:
    return DocumentSearch({"log": DOC}, tokenizer=None, max_chunk_tokens=40)


def test_schemas_are_openai_functions() -> None:
    names = [s["function"]["name"] for s in SCHEMAS]
    assert names == ["search_document", "read_chunk"] == list(DocumentSearch.names)
    for schema in SCHEMAS:
        assert schema["type"] == "function"
        params = schema["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])


def test_search_finds_the_right_chunk(tools: DocumentSearch) -> None:
    obs = tools.call(ToolCall("search_document", {"query": "Marlow generator", "k": 2}))
    assert not obs.error
    first = obs.content.splitlines()[0]
    assert first.startswith("log#") and "(score " in first and "Marlow" in first


def test_search_lines_show_a_one_line_snippet(tools: DocumentSearch) -> None:
    obs = tools.call(ToolCall("search_document", {"query": "canteen worker"}))
    lines = obs.content.splitlines()
    assert len(lines) == 5
    assert all(len(line.split("): ", 1)[1]) <= 161 for line in lines)


def test_read_chunk_round_trips(tools: DocumentSearch) -> None:
    chunk = tools.chunks[1]
    obs = tools.call(ToolCall("read_chunk", {"id": chunk.id}))
    assert not obs.error and obs.content == f"[{chunk.id}]\n{chunk.text}"


def test_huge_k_is_capped(tools: DocumentSearch) -> None:
    obs = tools.call(ToolCall("search_document", {"query": "canteen worker", "k": 10**9}))
    assert not obs.error and len(obs.content.splitlines()) == MAX_K


def test_no_match_is_not_an_error(tools: DocumentSearch) -> None:
    obs = tools.call(ToolCall("search_document", {"query": "zeppelin"}))
    assert not obs.error and "no chunk" in obs.content


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("search_document", {"query": "x", "k": 0}),
        ToolCall("search_document", {"query": "x", "k": -3}),
        ToolCall("search_document", {"query": "x", "k": "5"}),
        ToolCall("search_document", {"query": "x", "k": 2.5}),
        ToolCall("search_document", {"query": "x", "k": True}),
        ToolCall("search_document", {"query": 42}),
        ToolCall("search_document", {"query": "  "}),
        ToolCall("search_document", {}),
        ToolCall("search_document", {"query": "x", "limit": 3}),
        ToolCall("read_chunk", {"id": "log#99999"}),
        ToolCall("read_chunk", {"id": 3}),
        ToolCall("read_chunk", {}),
        ToolCall("open_file", {"path": "/etc/passwd"}),
        ToolCall("search_document", ["not", "a", "dict"]),  # type: ignore[arg-type]
    ],
    ids=lambda c: f"{c.name}-{str(c.arguments)[:20]}",
)
def test_bad_calls_are_error_observations(tools: DocumentSearch, call: ToolCall) -> None:
    obs = tools.call(call)
    assert obs.error and obs.content.startswith("error: ")


def test_a_plain_string_document_is_doc(tokenizer: Any) -> None:
    tools = DocumentSearch("Just one small document.", tokenizer=tokenizer)
    assert [c.id for c in tools.chunks] == ["doc#0"]


def test_small_chunks_take_a_smaller_overlap() -> None:
    text = "The generator in hall B was serviced in spring by the night crew. " * 10
    tools = DocumentSearch(text, max_chunk_tokens=20, overlap_tokens=5)
    assert len(tools.chunks) > 1 and all(c.n_tokens <= 20 for c in tools.chunks)
