"""Reusable verifier functions that domains build their `verify` from.

Import from here: the strict and lenient answer extractors of `verify.answers`.
"""

from posttrain.verify.answers import (
    exact_match,
    last_int_list,
    last_integer,
    normalize_text,
    parse_int_list,
    strict_integer,
)

__all__ = [
    "exact_match",
    "last_int_list",
    "last_integer",
    "normalize_text",
    "parse_int_list",
    "strict_integer",
]
