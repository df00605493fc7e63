"""Fuzzy matching of extracted fields: near-miss strings score by similarity, numbers by value.

    fuzzy_ratio("Acme Corp.", "ACME Corp")                  # 0.947...
    field_scores({"name": "Acme Corp", "total": "1,200"},
                 {"name": "ACME Corp.", "total": 1200})     # {"name": 0.947..., "total": 1.0}

`fuzzy_ratio` is rapidfuzz's normalized Indel similarity (`fuzz.ratio` / 100) of
the two strings after `normalize_item` (whitespace collapsed, case folded).
`field_scores` scores each gold field of a record the model extracted: 1.0 when
equal after normalization; numbers (gold a number, or text that is one quantity)
by value with `numeric`'s rules (1.0 or 0.0, never partial); other strings by
their fuzzy ratio when it reaches `threshold`, else 0.0, so a score above 0
means "accepted"; booleans, null, lists and objects must be equal (1 and 1.0
are, True and 1 are not). A field missing from the prediction scores 0.0;
extra predicted fields are ignored. Neither function raises on model values.

Not guaranteed: keys match exactly (no case folding of field names); no
punctuation or article stripping beyond what the ratio forgives; a number
written as words does not match its digits; strings longer than 5 000
characters (after normalization) on both sides score 1.0 when equal and 0.0
otherwise, because the ratio's cost grows with the product of the lengths.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rapidfuzz import fuzz

from posttrain.verify.numeric import Quantity, parse_quantity, values_close
from posttrain.verify.sets import normalize_item
from posttrain.verify.state import canonical_json

_LONG = 5_000


def fuzzy_ratio(a: str, b: str) -> float:
    """Similarity in [0, 1] of the normalized strings (1.0 when equal after normalization).

    >>> round(fuzzy_ratio("Acme Corp.", "ACME  corp"), 3)
    0.947
    >>> fuzzy_ratio("", "Acme"), fuzzy_ratio("same", " SAME ")
    (0.0, 1.0)
    """
    if not isinstance(a, str) or not isinstance(b, str):
        return 0.0
    a, b = normalize_item(a), normalize_item(b)
    if a == b:
        return 1.0
    if min(len(a), len(b)) > _LONG:
        return 0.0
    return float(fuzz.ratio(a, b)) / 100.0


def _as_quantity(value: Any) -> Quantity | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            return None
        return Quantity(number, None, False) if math.isfinite(number) else None
    if isinstance(value, str):
        return parse_quantity(value)
    return None


def _same_json(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError, RecursionError):
        return False


def field_score(predicted: Any, gold: Any, threshold: float = 0.9) -> float:
    """The score of one predicted field value against the gold value (see the module doc).

    >>> field_score("1,200", 1200), field_score("1,201", "1200"), field_score(None, None)
    (1.0, 0.0, 1.0)
    >>> round(field_score("Jon Smith", "John Smith"), 3), field_score("Jane Doe", "John Smith")
    (0.947, 0.0)
    """
    gold_quantity = _as_quantity(gold)
    if gold_quantity is not None:
        quantity = _as_quantity(predicted)
        if quantity is None or quantity.scale != gold_quantity.scale:
            return 0.0
        return 1.0 if values_close(quantity.value, gold_quantity.value) else 0.0
    if isinstance(gold, str):
        if isinstance(predicted, (int, float)) and not isinstance(predicted, bool):
            try:
                predicted = repr(predicted)
            except ValueError:  # an int longer than Python's int-to-text limit
                return 0.0
        if not isinstance(predicted, str):
            return 0.0
        ratio = fuzzy_ratio(predicted, gold)
        return ratio if ratio >= threshold else 0.0
    return 1.0 if _same_json(predicted, gold) else 0.0


def field_scores(
    predicted: Mapping[str, Any], gold: Mapping[str, Any], threshold: float = 0.9
) -> dict[str, float]:
    """Per gold field, the score of the predicted value; missing or non-dict prediction: 0.0.

    >>> field_scores({"name": "ACME corp", "year": "2024", "x": 1}, {"name": "Acme Corp.", "year": 2024})  # doctest: +ELLIPSIS
    {'name': 0.947..., 'year': 1.0}
    >>> field_scores("junk", {"name": "Acme"})
    {'name': 0.0}
    """
    if not isinstance(gold, Mapping):
        raise TypeError(f"field_scores: gold must be a mapping, got {type(gold).__name__}")
    if not isinstance(predicted, Mapping):
        return {key: 0.0 for key in gold}
    return {
        key: field_score(predicted[key], value, threshold) if key in predicted else 0.0
        for key, value in gold.items()
    }
