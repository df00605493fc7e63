"""Set answers: split a list answer into items and score it against the gold items.

    set_f1("Paris, rome", ["Rome", "Paris", "Oslo"])   # 0.8
    set_match("b, a", "a,b")                          # True

`parse_items` splits text on a separator and drops empty items. `set_f1` is the
F1 of the two sets of normalized items (precision = share of predicted items that
are gold, recall = share of gold items predicted); `set_match` asks for the same
sets. Both take text (split with `parse_items`) or a list of strings, and neither
raises on model text: junk scores 0.0 / False.

Not guaranteed: items are compared after `normalize_item` (whitespace collapsed,
case folded) unless you pass another `normalize`; nothing fuzzier (no stemming,
no articles dropped, "U.S." and "US" differ); duplicates count once; a separator
inside an item (a comma in "Washington, D.C.") splits it; two empty sets agree
(F1 1.0), so a gold set must be non-empty for "empty answer scores 0" to hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from posttrain.verify.answers import normalize_text

Items = str | Iterable[str]


def normalize_item(item: str) -> str:
    """The item with whitespace collapsed and case folded.

    >>> normalize_item("  New\\tYORK ")
    'new york'
    """
    return normalize_text(item).casefold()


def parse_items(text: str, sep: str = ",") -> list[str]:
    """The stripped, non-empty pieces of text split on `sep`, in order.

    >>> parse_items(" a, b ,,c ")
    ['a', 'b', 'c']
    >>> parse_items("x; y", sep=";"), parse_items("")
    (['x', 'y'], [])
    """
    if not isinstance(text, str) or not isinstance(sep, str) or not sep:
        return []
    return [piece for piece in (p.strip() for p in text.split(sep)) if piece]


def _item_set(items: Items, normalize: Callable[[str], str]) -> set[str] | None:
    if isinstance(items, str):
        pieces: Iterable[str] = parse_items(items)
    elif isinstance(items, Iterable) and not isinstance(items, (bytes, dict)):
        pieces = items
    else:
        return None
    out: set[str] = set()
    for piece in pieces:
        if not isinstance(piece, str):
            return None
        normalized = normalize(piece)
        if normalized:
            out.add(normalized)
    return out


def set_f1(
    predicted: Items, gold: Items, normalize: Callable[[str], str] = normalize_item
) -> float:
    """F1 between the normalized item sets; text is split on commas.

    >>> set_f1("Paris, rome", ["Rome", "Paris", "Oslo"])
    0.8
    >>> set_f1("", "a, b"), set_f1("a,b", "B, A")
    (0.0, 1.0)
    """
    predicted_set = _item_set(predicted, normalize)
    gold_set = _item_set(gold, normalize)
    if predicted_set is None or gold_set is None:
        return 0.0
    if not predicted_set and not gold_set:
        return 1.0
    common = len(predicted_set & gold_set)
    if common == 0:
        return 0.0
    return 2 * common / (len(predicted_set) + len(gold_set))


def set_match(
    predicted: Items, gold: Items, normalize: Callable[[str], str] = normalize_item
) -> bool:
    """True when the normalized item sets are equal; text is split on commas.

    >>> set_match("b, A, a", ["a", "b"]), set_match("a", "a, b")
    (True, False)
    """
    predicted_set = _item_set(predicted, normalize)
    gold_set = _item_set(gold, normalize)
    return predicted_set is not None and predicted_set == gold_set
