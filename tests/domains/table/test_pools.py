"""`table/pools.py`: every pool fills the largest table, and names are safe to list."""

from __future__ import annotations

import random

from posttrain.domains.table.pools import CITIES, PRODUCTS, STORES, TOWNS, person_names


def test_every_pool_holds_at_least_forty_distinct_names() -> None:
    for pool in ([s[0] for s in STORES], [c[0] for c in CITIES], [p[0] for p in PRODUCTS], list(TOWNS)):  # fmt: skip
        assert len(set(pool)) == len(pool) >= 40


def test_person_names_are_distinct() -> None:
    names = person_names(random.Random(0), 40)
    assert len(set(names)) == 40


def test_no_name_holds_a_list_separator_or_markup() -> None:
    names = [s[0] for s in STORES] + [c[0] for c in CITIES] + [p[0] for p in PRODUCTS] + list(TOWNS)
    assert not [n for n in names if any(ch in n for ch in ',|"<>&')]
