"""Small answer extractors and matchers that domains build their verifiers from.

Each is a plain function of the model's text. The strict ones (`strict_integer`,
`parse_int_list`) accept only text that is exactly the answer's format and decide
a domain's `format` component; the lenient ones (`last_integer`, `last_int_list`)
dig the last candidate out of free prose and decide `correct`. None of them
raises on junk: they return None (or False) instead.

Not guaranteed: only ASCII digits count; numbers written with thousands
separators, decimals or words are not read as one integer ("1,234" is two, "3.5"
ends in 5, "seven" is nothing); integers longer than Python's int-parsing limit
(4300 digits) are treated as absent. The lenient ones read the Unicode minus sign
(U+2212, "−5") as a minus, as `numeric` does; the strict ones do not accept it. An en
dash (U+2013) before a number is not read as a minus ("–5" is 5).
"""

from __future__ import annotations

import re

_STRICT_INTEGER = re.compile(r"[+-]?[0-9]+")
_ANY_INTEGER = re.compile(r"(?<![0-9])[+\-\u2212]?[0-9]+")
_STRICT_INT_LIST = re.compile(r"[+-]?[0-9]+(?:, *[+-]?[0-9]+)*")
_ANY_INT_LIST = re.compile(r"(?<![0-9])[+\-\u2212]?[0-9]+(?:\s*,\s*[+\-\u2212]?[0-9]+)*")
_INT_IN_LIST = re.compile(r"[+\-\u2212]?[0-9]+")


def _to_int(digits: str) -> int | None:
    try:
        return int(digits.replace("\u2212", "-"))
    except ValueError:  # longer than sys.get_int_max_str_digits()
        return None


def strict_integer(text: str) -> int | None:
    """The integer when the whole stripped text is one optionally signed integer.

    >>> strict_integer(" -42\\n")
    -42
    >>> strict_integer("42.") is None, strict_integer("the answer is 42") is None
    (True, True)
    """
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if not _STRICT_INTEGER.fullmatch(stripped):
        return None
    return _to_int(stripped)


def last_integer(text: str) -> int | None:
    """The last integer anywhere in the text; a sign (+, - or U+2212 −) counts only when
    no digit precedes it.

    >>> last_integer("so 12-5 gives 7.")
    7
    >>> last_integer("x = -4"), last_integer("x = \u22124"), last_integer("no digits") is None
    (-4, -4, True)
    """
    if not isinstance(text, str):
        return None
    found = _ANY_INTEGER.findall(text)
    return _to_int(found[-1]) if found else None


def normalize_text(text: str) -> str:
    """The text stripped, with every run of whitespace collapsed to one space.

    >>> normalize_text("  hello \\n\\t world ")
    'hello world'
    """
    if not isinstance(text, str):
        return ""
    return " ".join(text.split())


def exact_match(text: str, expected: str) -> bool:
    """True when the normalized text equals the normalized expected answer.

    >>> exact_match(" Paris\\n", "Paris"), exact_match("paris", "Paris")
    (True, False)
    """
    if not isinstance(text, str) or not isinstance(expected, str):
        return False
    return normalize_text(text) == normalize_text(expected)


def _ints(run: str) -> list[int] | None:
    values = [_to_int(m) for m in _INT_IN_LIST.findall(run)]
    if any(v is None for v in values):
        return None
    return [v for v in values if v is not None]


def parse_int_list(text: str) -> list[int] | None:
    """The integers when the whole stripped text is `1,2,3` (spaces allowed after commas).

    >>> parse_int_list("3, 1,2")
    [3, 1, 2]
    >>> parse_int_list("3 ,1") is None, parse_int_list("[1,2]") is None, parse_int_list("") is None
    (True, True, True)
    """
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if not _STRICT_INT_LIST.fullmatch(stripped):
        return None
    return _ints(stripped)


def last_int_list(text: str) -> list[int] | None:
    """The last comma-separated run of integers anywhere in the text.

    >>> last_int_list("sorted, that is: 1, 2 ,5.")
    [1, 2, 5]
    >>> last_int_list("1,2 and then 7"), last_int_list("none") is None
    ([7], True)
    """
    if not isinstance(text, str):
        return None
    found = _ANY_INT_LIST.findall(text)
    return _ints(found[-1]) if found else None
