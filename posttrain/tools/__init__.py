"""Tools: schemas in OpenAI function format and tool-call parsing from model text.

Import from here: `parse_tool_calls`, `format_tool_call`, `strip_tool_calls`,
`function_schema`, `ParsedCalls` and the tag constants.
"""

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
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "ParsedCalls",
    "format_tool_call",
    "function_schema",
    "parse_tool_calls",
    "strip_tool_calls",
]
