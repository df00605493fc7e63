"""Document tools for an agent: search a long document, then read chunks by id.

    tools = DocumentSearch({"manual": text}, tokenizer=tok)
    session_tools = tools.SCHEMAS        # OpenAI function schemas to advertise
    tools.call(ToolCall("search_document", {"query": "backup generator", "k": 3}))
    tools.call(ToolCall("read_chunk", {"id": "manual#12"}))

`search_document(query, k=5)` answers one line per hit, best first:
`"<chunk_id> (score 3.21): <first 160 characters, newlines as spaces>…"`;
`read_chunk(id)` answers `"[<chunk_id>]\\n<chunk text>"`. The chunks (public as
`chunks`) come from `posttrain.context.chunking`, so ids are stable for the same
documents and settings and may be cited in an answer.

Not guaranteed: `k` is capped at 20 (a larger k is served as 20, not refused);
scores are the retriever's own scale and are not comparable across retrievers.
Every bad call — unknown tool, missing, extra or ill-typed argument, empty query,
unknown chunk id — is answered with an `Observation(error=True)`; `call` never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from posttrain.context.assemble import build_index, chunk_documents
from posttrain.context.chunking import Chunk
from posttrain.tools.parse import function_schema
from posttrain.types import Observation, ToolCall

MAX_K = 20
SNIPPET_CHARS = 160

SCHEMAS: list[dict[str, Any]] = [
    function_schema(
        "search_document",
        "Search the document for passages relevant to a query. Returns one line per "
        "matching chunk, best first: its id, score and opening text.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "k": {
                    "type": "integer",
                    "description": f"how many chunks to return (1-{MAX_K}, default 5)",
                    "minimum": 1,
                    "maximum": MAX_K,
                    "default": 5,
                },
            },
            "required": ["query"],
        },
    ),
    function_schema(
        "read_chunk",
        "Read the full text of one chunk by the id that search_document returned.",
        {
            "type": "object",
            "properties": {"id": {"type": "string", "description": "a chunk id, e.g. 'doc#12'"}},
            "required": ["id"],
        },
    ),
]


def _shown(value: Any) -> str:
    return repr(value)[:60]


class DocumentSearch:
    """`search_document` and `read_chunk` over fixed documents."""

    SCHEMAS = SCHEMAS
    names: tuple[str, ...] = ("search_document", "read_chunk")

    def __init__(
        self,
        documents: str | Mapping[str, str],
        tokenizer: Any | None = None,
        max_chunk_tokens: int = 200,
        retriever: str = "bm25",
        overlap_tokens: int = 30,
    ) -> None:
        self.chunks: list[Chunk] = chunk_documents(
            documents, tokenizer, max_chunk_tokens, overlap_tokens
        )
        self._by_id = {c.id: c for c in self.chunks}
        self._index = build_index(self.chunks, retriever)

    def call(self, tool_call: ToolCall) -> Observation:
        """Run one tool call; a bad call is an error observation, never an exception."""
        try:
            name = tool_call.name
            args = tool_call.arguments
            if not isinstance(args, dict):
                return Observation("error: arguments must be a JSON object", error=True)
            if name == "search_document":
                return self._search(args)
            if name == "read_chunk":
                return self._read(args)
            return Observation(
                f"error: unknown tool {_shown(name)}; the tools are {', '.join(self.names)}",
                error=True,
            )
        except Exception as exc:  # noqa: BLE001 - a tool must answer, whatever the input
            return Observation(f"error: the tool failed: {type(exc).__name__}", error=True)

    def _search(self, args: dict[str, Any]) -> Observation:
        extra = sorted(str(a) for a in args if a not in ("query", "k"))
        if extra:
            return Observation(f"error: unexpected argument(s) {_shown(extra)}", error=True)
        query = args.get("query")
        if not isinstance(query, str):
            return Observation("error: missing string argument 'query'", error=True)
        if not query.strip():
            return Observation("error: 'query' is empty", error=True)
        k = args.get("k", 5)
        if isinstance(k, float) and k.is_integer():
            k = int(k)
        if isinstance(k, bool) or not isinstance(k, int):
            return Observation(f"error: 'k' must be an integer, got {_shown(k)}", error=True)
        if k < 1:
            return Observation(f"error: 'k' must be at least 1, got {k}", error=True)
        hits = self._index.search(query, k=min(k, MAX_K))
        if not hits:
            return Observation("no chunk matches the query")
        lines = []
        for hit in hits:
            snippet = " ".join(hit.chunk.text[:SNIPPET_CHARS].split("\n"))
            more = "…" if len(hit.chunk.text) > SNIPPET_CHARS else ""
            lines.append(f"{hit.chunk.id} (score {hit.score:.2f}): {snippet}{more}")
        return Observation("\n".join(lines))

    def _read(self, args: dict[str, Any]) -> Observation:
        extra = sorted(str(a) for a in args if a != "id")
        if extra:
            return Observation(f"error: unexpected argument(s) {_shown(extra)}", error=True)
        chunk_id = args.get("id")
        if not isinstance(chunk_id, str):
            return Observation("error: missing string argument 'id'", error=True)
        chunk = self._by_id.get(chunk_id.strip())
        if chunk is None:
            example = self.chunks[0].id if self.chunks else "doc#0"
            return Observation(
                f"error: unknown chunk id {_shown(chunk_id)}; ids look like {example!r}",
                error=True,
            )
        return Observation(f"[{chunk.id}]\n{chunk.text}")
