"""Tools: schemas in OpenAI function format, tool-call parsing from model text, guarded dispatch.

Import from here: `parse_tool_calls`, `format_tool_call`, `strip_tool_calls`,
`function_schema`, `ParsedCalls`, the tag constants, and `DocumentSearch` with
`DOCUMENT_SCHEMAS` (`search_document` / `read_chunk` over long documents);
`detect_tool_format` / `parse_for_format` for a model's own chat-template tool format
(Hermes/Qwen, Llama 3.x JSON, Mistral); `guarded_call` with `ToolPolicy`,
`ToolCounters`, `GuardedResult`, `ToolInfraError` and `count_parse_errors` for
permission, argument checks, timeouts, retries and truncation around `Session.call`;
`schema_problems` / `declared_tools` for the argument check alone.
"""

from posttrain.tools.arguments import declared_tools, schema_problems
from posttrain.tools.document import SCHEMAS as DOCUMENT_SCHEMAS
from posttrain.tools.document import DocumentSearch
from posttrain.tools.formats import (
    TOOL_FORMATS,
    detect_tool_format,
    parse_for_format,
    template_renders_tools,
)
from posttrain.tools.guard import (
    GuardedResult,
    ToolCounters,
    ToolInfraError,
    ToolPolicy,
    count_parse_errors,
    guarded_call,
    run_with_timeout,
    truncate_observation,
)
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
    "GuardedResult",
    "TOOL_CALL_CLOSE",
    "TOOL_CALL_OPEN",
    "TOOL_FORMATS",
    "ParsedCalls",
    "ToolCounters",
    "ToolInfraError",
    "ToolPolicy",
    "count_parse_errors",
    "declared_tools",
    "detect_tool_format",
    "format_tool_call",
    "function_schema",
    "guarded_call",
    "parse_for_format",
    "parse_tool_calls",
    "run_with_timeout",
    "schema_problems",
    "strip_tool_calls",
    "template_renders_tools",
    "truncate_observation",
]
