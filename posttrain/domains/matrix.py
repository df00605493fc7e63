"""The domain matrix as data: each axis's allowed values, filters, counts and occupied cells.

Pure functions over `Domain` objects, behind `posttrain domains list` and
`posttrain domains matrix`:

    from posttrain.domains import all_domains
    from posttrain.domains.matrix import count_by_axis, filter_domains, parse_axis_filter

    axis, value = parse_axis_filter("modality=table")
    tables = filter_domains(all_domains(), axes_filters={axis: value})
    count_by_axis(all_domains())["modality"]["geometry"]  # 0 until a geometry domain exists

The allowed values come from the Literal types in `posttrain.domains.base`, so a value
added there shows up here. Not guaranteed: a third-party domain may declare a value
outside those sets; it is counted under that value, never rejected here (`posttrain
domains check` is what rejects it).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import get_args

from posttrain.domains.base import Domain, Modality, Rounds, ToolDependency, VerificationMethod

AXIS_VALUES: dict[str, tuple[str, ...]] = {
    "modality": get_args(Modality),
    "tools": get_args(ToolDependency),
    "rounds": get_args(Rounds),
    "verification": get_args(VerificationMethod),
}
AXES: tuple[str, ...] = tuple(AXIS_VALUES)
TOTAL_CELLS = math.prod(len(values) for values in AXIS_VALUES.values())

Cell = tuple[str, str, str, str]  # (modality, tools, rounds, verification)


def family_of(domain_id: str) -> str:
    """The family of a versioned id: the part before `/` (`arith/addition-v1` → `arith`)."""
    return domain_id.split("/", 1)[0]


def cell_of(domain: Domain) -> Cell:
    """The domain's (modality, tools, rounds, verification)."""
    a = domain.axes
    return (a.modality, a.tools, a.rounds, a.verification)


def parse_axis_filter(text: str) -> tuple[str, str]:
    """`"modality=table"` → `("modality", "table")`. ValueError unless it is `axis=value`
    with both sides non-empty; whether the axis and value exist is `filter_domains`' job."""
    axis, sep, value = text.partition("=")
    axis, value = axis.strip(), value.strip()
    if not sep or not axis or not value or "=" in value:
        raise ValueError(
            f"an axis filter must look like axis=value (e.g. modality=table), got {text!r}"
        )
    return axis, value


def filter_domains(
    domains: Iterable[Domain],
    family: str | None = None,
    axes_filters: Mapping[str, str] | None = None,
) -> list[Domain]:
    """The domains of `family` (if given) whose axes equal every `axis: value` filter,
    in input order. ValueError naming the axis or value and the allowed ones when a
    filter names an unknown axis or a value that axis does not have."""
    filters = dict(axes_filters or {})
    for axis, value in filters.items():
        _check_filter(axis, value)
    return [
        d
        for d in domains
        if (family is None or family_of(d.id) == family)
        and all(getattr(d.axes, axis) == value for axis, value in filters.items())
    ]


def count_by_axis(domains: Iterable[Domain]) -> dict[str, dict[str, int]]:
    """Per axis, the number of domains with each value: every allowed value is present
    (zero when unused), in the Literal's order; an undeclared value follows them."""
    counts = {axis: dict.fromkeys(values, 0) for axis, values in AXIS_VALUES.items()}
    for domain in domains:
        for axis, value in zip(AXES, cell_of(domain), strict=True):
            counts[axis][value] = counts[axis].get(value, 0) + 1
    return counts


def occupied_cells(domains: Iterable[Domain]) -> dict[Cell, list[str]]:
    """The cells that hold at least one domain, each with its domain ids (sorted); cells
    ordered by the axes' allowed-value order, undeclared values last."""
    cells: dict[Cell, list[str]] = {}
    for domain in domains:
        cells.setdefault(cell_of(domain), []).append(domain.id)
    return {cell: sorted(cells[cell]) for cell in sorted(cells, key=_cell_order)}


def _check_filter(axis: str, value: str) -> None:
    if axis not in AXIS_VALUES:
        raise ValueError(
            f"unknown axis {axis!r}{_did_you_mean(axis, AXES)}; axes are {', '.join(AXES)}"
        )
    allowed = AXIS_VALUES[axis]
    if value not in allowed:
        raise ValueError(
            f"{value!r} is not a value of axis {axis!r}{_did_you_mean(value, allowed)}; "
            f"{axis} is one of {', '.join(allowed)}"
        )


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _cell_order(cell: Cell) -> tuple[tuple[int, str], ...]:
    def rank(values: tuple[str, ...], value: str) -> tuple[int, str]:
        return (values.index(value), "") if value in values else (len(values), value)

    return tuple(rank(AXIS_VALUES[axis], v) for axis, v in zip(AXES, cell, strict=True))
