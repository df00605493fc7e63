"""The bug catalogue: kinds of injected bugs, applied as exact source substitutions.

A template (`templates.py`) declares its bug `Site`s; `inject` applies chosen sites
to a module's source and `unified_diff` writes the patch between two versions of a
repository (the true fix is the diff from buggy to correct).

    buggy = inject(template.source, [site])
    patch = unified_diff({"pkg/m.py": buggy}, {"pkg/m.py": template.source})

Not guaranteed: `inject` is textual; a site whose `old` text is not found exactly
once raises `ValueError` (a template bug, caught by the template tests).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

# kind -> what the README of a bug report would call it
KINDS: dict[str, str] = {
    "off_by_one": "an off-by-one error",
    "wrong_operator": "a wrong comparison or arithmetic operator",
    "wrong_branch": "the branches of a condition swapped",
    "missing_edge_case": "a missing guard for an edge case",
    "wrong_default": "a wrong default argument value",
    "swapped_arguments": "two arguments passed in the wrong order",
    "exception_not_handled": "an exception that is no longer handled",
    "mutable_default": "a mutable default argument shared between calls",
    "missing_step": "a missing processing step",
    "wrong_value": "a wrong constant or variable",
    "type_error": "a value of the wrong type",
}


def inject(source: str, sites: Iterable[tuple[str, str]]) -> str:
    """`source` with each (old, new) substitution applied; each `old` must occur once."""
    for old, new in sites:
        count = source.count(old)
        if count != 1:
            raise ValueError(f"bug site {old[:40]!r} occurs {count} times, not once")
        source = source.replace(old, new)
    return source


def unified_diff(before: Mapping[str, str], after: Mapping[str, str]) -> str:
    """A `git diff`-style patch (`a/`, `b/` prefixes, 3 lines of context) from before to after."""
    chunks: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{path}" if old is not None else "/dev/null",
            tofile=f"b/{path}" if new is not None else "/dev/null",
        )
        for line in lines:
            chunks.append(
                line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            )
    return "".join(chunks)
