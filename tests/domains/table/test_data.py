"""`table/data.py`: tables grow with difficulty, values are plausible, cells round-trip."""

from __future__ import annotations

import random
from fractions import Fraction

from posttrain.domains.table.data import (
    NUMBER_COLUMNS,
    ROWS,
    SCHEMAS,
    Column,
    Table,
    build_join_table,
    build_table,
    number_text,
    rounded_text,
    schema_named,
)


def test_the_same_rng_seed_builds_the_same_table() -> None:
    for schema in SCHEMAS:
        assert build_table(random.Random(7), schema, 6) == build_table(random.Random(7), schema, 6)


def test_rows_and_number_columns_grow_with_difficulty() -> None:
    for schema in SCHEMAS:
        for difficulty in range(1, 11):
            table = build_table(random.Random(difficulty), schema, difficulty)
            assert len(table.rows) == ROWS[difficulty - 1]
            assert len(table.numbers()) == NUMBER_COLUMNS[difficulty - 1]
    assert list(ROWS) == sorted(ROWS) and list(NUMBER_COLUMNS) == sorted(NUMBER_COLUMNS)


def test_row_names_are_unique_in_the_largest_tables() -> None:
    for schema in SCHEMAS:
        for seed in range(5):
            names = build_table(random.Random(seed), schema, 10).names()
            assert len(set(names)) == len(names) == 40


def test_a_needed_flag_always_has_a_column() -> None:
    for seed in range(30):
        table = build_table(random.Random(seed), schema_named("employees"), 1, need="ratio")
        assert table.numbers("ratio")


def test_league_points_are_three_per_win_plus_draws() -> None:
    for _, _, numbers in schema_named("matches").make_rows(random.Random(1), 40):
        assert numbers["Points"] == 3 * numbers["Won"] + numbers["Drawn"]
        assert numbers["Won"] + numbers["Drawn"] + numbers["Lost"] == 30


def test_employees_started_work_at_22_or_later() -> None:
    for _, _, numbers in schema_named("employees").make_rows(random.Random(2), 40):
        assert numbers["Age"] >= min(66, 22 + 2025 - numbers["Start year"])


def test_southern_cities_are_warmer_in_january_than_in_july() -> None:
    rows = schema_named("weather").make_rows(random.Random(3), 40)
    for name, _, numbers in rows:
        if name in ("Sydney", "Cape Town", "Buenos Aires", "Perth"):
            assert numbers["Jan (°C)"] > numbers["Jul (°C)"]
        if name in ("Oslo", "Beijing", "Chicago", "Montreal"):
            assert numbers["Jan (°C)"] < numbers["Jul (°C)"]


def test_numbers_are_exact_scaled_integers() -> None:
    assert number_text(-1205, 2) == "-12.05" and number_text(7, 1) == "0.7"
    table = Table("t", (Column("Item", "key"), Column("Price ($)", "number", 2)), (("Kettle", 1299),))  # fmt: skip
    assert table.text(0, "Price ($)") == "12.99"
    assert table.value(0, "Price ($)") == Fraction(1299, 100)


def test_rounding_is_half_away_from_zero_and_never_negative_zero() -> None:
    assert rounded_text(Fraction(1, 8), 2) == "0.13"
    assert rounded_text(Fraction(-1, 8), 2) == "-0.13"
    assert rounded_text(Fraction(-1, 1000), 1) == "0.0"


def test_a_table_round_trips_through_meta() -> None:
    table = build_table(random.Random(4), SCHEMAS[2], 5)
    assert Table.from_meta(table.to_meta()) == table


def test_the_join_table_has_one_row_per_category() -> None:
    for schema in SCHEMAS:
        join = build_join_table(random.Random(5), schema)
        assert join.names() == list(schema.categories)
        assert len(set(join.rows[i][1] for i in range(len(join.rows)))) == len(join.rows)
