"""Reusable verifier functions that domains build their `verify` from.

Import from here. Every function that reads model text returns None, False or
0.0 on junk instead of raising:

- `answers`: strict and lenient integer / integer-list extractors, `exact_match`.
- `numeric`: quantities as reports write them ("$1.2 million", "(12)", "12%") and
  `numeric_match` with the FinQA / TAT-QA rules.
- `math_equiv`: `math_equal` through math-verify, in worker processes with a real timeout.
- `sets`: `parse_items`, `set_f1`, `set_match` for list answers.
- `fuzzy`: `fuzzy_ratio` (rapidfuzz) and per-field `field_scores` for extracted records.
- `structure`: `parse_json`, JSON Schema `schema_errors`, BFCL-style `call_matches`.
- `state`: `state_hash` of a domain's own final state (raises on unsupported types).
"""

from posttrain.verify.answers import (
    exact_match,
    last_int_list,
    last_integer,
    normalize_text,
    parse_int_list,
    strict_integer,
)
from posttrain.verify.fuzzy import field_score, field_scores, fuzzy_ratio
from posttrain.verify.math_equiv import math_equal
from posttrain.verify.numeric import (
    Quantity,
    numeric_match,
    parse_number,
    parse_quantity,
    strict_number,
    values_close,
    written_as_integer,
)
from posttrain.verify.sets import normalize_item, parse_items, set_f1, set_match
from posttrain.verify.state import canonical_json, state_hash
from posttrain.verify.structure import call_matches, parse_json, schema_errors

__all__ = [
    "Quantity",
    "call_matches",
    "canonical_json",
    "exact_match",
    "field_score",
    "field_scores",
    "fuzzy_ratio",
    "last_int_list",
    "last_integer",
    "math_equal",
    "normalize_item",
    "normalize_text",
    "numeric_match",
    "parse_int_list",
    "parse_items",
    "parse_json",
    "parse_number",
    "parse_quantity",
    "schema_errors",
    "set_f1",
    "set_match",
    "state_hash",
    "strict_integer",
    "strict_number",
    "values_close",
    "written_as_integer",
]
