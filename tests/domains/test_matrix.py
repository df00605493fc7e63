"""The domain matrix as data: axis values, `--axis` parsing, filters, counts and cells."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast, get_args

import pytest

from posttrain.domains import Domain
from posttrain.domains.base import Axes, Modality, Rounds, ToolDependency, VerificationMethod
from posttrain.domains.matrix import (
    AXIS_VALUES,
    TOTAL_CELLS,
    count_by_axis,
    family_of,
    filter_domains,
    occupied_cells,
    parse_axis_filter,
)


@dataclass(frozen=True)
class _Stub:
    """Only what the matrix functions read: an id and a cell."""

    id: str
    axes: Axes
    max_turns: int = 1


def stub(domain_id: str, modality: str = "text", tools: str = "none", rounds: str = "single",
         verification: str = "exact") -> Domain:  # fmt: skip
    axes = Axes(modality, tools, rounds, verification)  # type: ignore[arg-type]
    return cast(Domain, _Stub(domain_id, axes))


ADD = stub("arith/addition-v1")
SUB = stub("arith/subtraction-v1", verification="numeric")
TABLE = stub("tables/lookup-v1", modality="table", tools="python", rounds="multi")
DOMAINS = [ADD, SUB, TABLE]


def test_axis_values_are_the_literals_of_base() -> None:
    literals = {
        "modality": get_args(Modality),
        "tools": get_args(ToolDependency),
        "rounds": get_args(Rounds),
        "verification": get_args(VerificationMethod),
    }
    assert literals == AXIS_VALUES


def test_total_cells_is_the_product_of_the_axis_sizes() -> None:
    assert TOTAL_CELLS == 6 * 6 * 2 * 10


def test_family_is_the_id_part_before_the_slash() -> None:
    assert family_of("arith/addition-v1") == "arith"


def test_parse_axis_filter_splits_axis_and_value() -> None:
    assert parse_axis_filter("modality=table") == ("modality", "table")


def test_parse_axis_filter_ignores_spaces_around_the_parts() -> None:
    assert parse_axis_filter(" tools = python ") == ("tools", "python")


@pytest.mark.parametrize("text", ["modality", "=table", "modality=", "a=b=c", ""])
def test_parse_axis_filter_rejects_text_not_shaped_axis_equals_value(text: str) -> None:
    with pytest.raises(ValueError, match="must look like axis=value"):
        parse_axis_filter(text)


def test_no_filter_keeps_every_domain_in_order() -> None:
    assert filter_domains(DOMAINS) == DOMAINS


def test_family_filter_keeps_that_familys_domains() -> None:
    assert filter_domains(DOMAINS, family="arith") == [ADD, SUB]


def test_an_unknown_family_matches_nothing() -> None:
    assert filter_domains(DOMAINS, family="nope") == []


def test_an_axis_filter_keeps_domains_with_that_value() -> None:
    assert filter_domains(DOMAINS, axes_filters={"modality": "table"}) == [TABLE]


def test_every_axis_filter_must_hold() -> None:
    filters = {"modality": "text", "verification": "numeric"}
    assert filter_domains(DOMAINS, axes_filters=filters) == [SUB]


def test_family_and_axis_filters_combine() -> None:
    assert filter_domains(DOMAINS, family="arith", axes_filters={"verification": "exact"}) == [ADD]


def test_an_unknown_axis_raises_naming_it_and_the_axes() -> None:
    with pytest.raises(ValueError) as info:
        filter_domains(DOMAINS, axes_filters={"modaliy": "text"})
    message = str(info.value)
    assert "unknown axis 'modaliy'" in message
    assert "did you mean 'modality'" in message
    assert "modality, tools, rounds, verification" in message


def test_an_unknown_value_raises_naming_it_and_the_allowed_values() -> None:
    with pytest.raises(ValueError) as info:
        filter_domains(DOMAINS, axes_filters={"modality": "tabel"})
    message = str(info.value)
    assert "'tabel' is not a value of axis 'modality'" in message
    assert ", ".join(AXIS_VALUES["modality"]) in message


def test_a_bad_filter_raises_even_without_domains() -> None:
    with pytest.raises(ValueError, match="unknown axis"):
        filter_domains([], axes_filters={"colour": "red"})


def test_count_by_axis_lists_every_allowed_value_in_order() -> None:
    counts = count_by_axis(DOMAINS)
    assert {axis: tuple(c) for axis, c in counts.items()} == AXIS_VALUES


def test_count_by_axis_counts_unused_values_as_zero() -> None:
    counts = count_by_axis(DOMAINS)
    assert counts["modality"]["geometry"] == 0
    assert counts["tools"]["cad_kernel"] == 0


def test_count_by_axis_counts_each_domain_once_per_axis() -> None:
    counts = count_by_axis(DOMAINS)
    assert counts["modality"]["text"] == 2 and counts["modality"]["table"] == 1
    assert counts["rounds"] == {"single": 2, "multi": 1}
    assert all(sum(c.values()) == len(DOMAINS) for c in counts.values())


def test_count_by_axis_keeps_a_value_outside_the_allowed_set() -> None:
    counts = count_by_axis([stub("odd/one-v1", verification="vibes")])
    assert counts["verification"]["vibes"] == 1


def test_occupied_cells_group_sorted_ids_by_cell() -> None:
    same_cell = stub("aa/first-v1")
    cells = occupied_cells([ADD, TABLE, same_cell])
    assert cells == {
        ("text", "none", "single", "exact"): ["aa/first-v1", "arith/addition-v1"],
        ("table", "python", "multi", "exact"): ["tables/lookup-v1"],
    }


def test_occupied_cells_follow_the_axis_value_order() -> None:
    code = stub("code/one-v1", modality="code")
    cells = occupied_cells([code, TABLE, ADD])
    assert [cell[0] for cell in cells] == ["text", "table", "code"]


def test_no_domains_occupy_no_cells() -> None:
    assert occupied_cells([]) == {}


def test_the_registry_meets_the_counting_rules() -> None:
    """The design's counting rules: ≥ 200 counted domains, ≥ 80 our own, no family over 10% except rg/,
    ≥ 40 occupied cells."""
    from collections import Counter

    from posttrain.domains import all_domains

    domains = all_domains()
    families = Counter(family_of(d.id) for d in domains)
    own = len(domains) - families["rg"]
    largest = max(n for family, n in families.items() if family != "rg")
    assert len(domains) >= 200 and own >= 80, (len(domains), own)
    assert largest <= 0.10 * len(domains), families
    assert len(occupied_cells(domains)) >= 40
