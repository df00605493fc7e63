"""The simulated backends: generated worlds and the calls on them."""

from __future__ import annotations

import random

import pytest

from posttrain.domains.tools_api import services
from posttrain.domains.tools_api.framework import ToolError


@pytest.fixture
def facts() -> dict[str, object]:
    return services.fact_world(random.Random(0), 12, 3)


def test_namer_never_repeats_a_name() -> None:
    namer = services.Namer(random.Random(1))
    names = [namer.person() for _ in range(50)] + [namer.company() for _ in range(50)]
    assert len(names) == len(set(names))


def test_currency_codes_avoid_real_ones() -> None:
    namer = services.Namer(random.Random(2))
    codes = [namer.code() for _ in range(40)]
    assert not set(codes) & set(services._REAL_CODES)


def test_fact_world_links_point_at_records_of_the_right_type(facts: dict) -> None:
    records = facts["records"]
    for record in records.values():
        for field, kind in services.LINKS[record["type"]]:
            assert records[record[field]]["type"] == kind


def test_lookup_ignores_case_and_spacing(facts: dict) -> None:
    name = next(iter(facts["records"]))
    assert services.lookup(facts, "  " + name.upper().replace(" ", "  "))["name"] == name


def test_lookup_of_a_misspelt_name_suggests_close_ones(facts: dict) -> None:
    name = next(iter(facts["records"]))
    with pytest.raises(ToolError, match="similar names: .*" + name):
        services.lookup(facts, name[:-1])


def test_find_names_needs_two_characters(facts: dict) -> None:
    with pytest.raises(ToolError, match="at least 2"):
        services.find_names(facts, "a")


def test_convert_goes_both_ways_along_a_link_only() -> None:
    world = {"path": ["ak", "bk", "ck"], "edges": [["ak", "bk", 4.0], ["bk", "ck", 2.5]]}
    assert services.convert(world, 3, "ak", "bk") == 12.0
    assert services.convert(world, 12, "bk", "ak") == 3.0
    with pytest.raises(
        ToolError, match="no direct conversion from ak to ck; ak converts directly to: bk"
    ):
        services.convert(world, 1, "ak", "ck")
    assert services.links(world, "bk") == ["ak", "ck"]


def test_rate_is_the_ratio_of_values_and_rejects_unknown_codes() -> None:
    world = {"values": {"ZOV": 2.0, "KEF": 0.5}}
    assert services.rate(world, "ZOV", "KEF") == 4.0
    with pytest.raises(ToolError, match="unknown currency code 'USD'"):
        services.rate(world, "USD", "KEF")


def test_calendar_adds_days_and_names_weekdays() -> None:
    assert services.add_days("2047-02-27", 2) == "2047-03-01"
    assert services.weekday("2047-03-02") == "Saturday"
    for bad in ("2047-02-30", "27/02/2047"):
        with pytest.raises(ToolError):
            services.add_days(bad, 1)


def test_price_outside_the_data_says_which_dates_exist() -> None:
    world = services.price_world(random.Random(3), 2, 5)
    ticker = next(iter(world["prices"]))
    with pytest.raises(ToolError, match=f"data covers {world['dates'][0]} to {world['dates'][-1]}"):
        services.price(world, ticker, "2050-01-01")
    assert services.price(world, ticker.lower(), world["dates"][0])["ticker"] == ticker


def test_search_ranks_by_shared_words_and_pages() -> None:
    docs = [
        {"id": f"d{i}", "text": f"Zorn opened a lab in {'Kel' if i % 2 else 'Vam'}."}
        for i in range(12)
    ]
    first = services.search_docs({"docs": docs}, "opened Kel", 1)
    assert (first["total"], first["pages"]) == (12, 3)
    assert all("Kel" in hit["text"] for hit in first["results"])
    assert len(services.search_docs({"docs": docs}, "opened Kel", 3)["results"]) == 2
