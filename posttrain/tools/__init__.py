"""Tools: schemas in OpenAI function format and tool-call parsing from model text.

Import from here: `parse_tool_calls`, `format_tool_call`, `strip_tool_calls`,
`function_schema`, `ParsedCalls`, the tag constants, and `DocumentSearch` with
`DOCUMENT_SCHEMAS` (`search_document` / `read_chunk` over long documents).
"""

from posttrain.tools.document import SCHEMAS as DOCUMENT_SCHEMAS
from posttrain.tools.document import DocumentSearch
from posttrain.tools.parse import (
    TOOL_CALL_CLOSE,
    TOOL_CALL_OPEN,
    ParsedCalls,
    format_tool_call,
    function_schema,
    parse_tool_calls,
    strip_tool_calls,
)

__all__ = [
    "DOCUMENT_SCHEMAS",
    "DocumentSearch",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ParsedCalls",
    "format_tool_call",
    "function_schema",
    "parse_tool_calls",
    "strip_tool_calls",
]
