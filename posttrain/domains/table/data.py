"""Synthetic tables for the `table/*` domains: five schemas, generated from a task's rng.

    from posttrain.domains.table.data import SCHEMAS, build_table, build_join_table
    table = build_table(rng, SCHEMAS[0], difficulty=5)     # 16 rows, key + category + 4 numbers
    offices = build_join_table(rng, SCHEMAS[0])            # one row per category

A `Table` is plain data: a title, `Column`s and rows of cells. The first column is the
key (unique row names), the second a category (5 values per schema), the rest numbers.
Numbers are stored as integers scaled by `10**decimals` (a price of 12.99 is 1299), so
sums, differences and comparisons are exact; `Table.value` gives a `Fraction` and
`Table.text` the cell as rendered. Schemas: quarterly sales by store, employees,
monthly city temperatures, product inventory and league match results. Values are
plausible (salaries grow with tenure, points are 3 per win plus draws, southern
cities are warm in January). Rows grow from 4 (d=1) to 40 (d=10) and number columns
from 2 to 6 (`ROWS`, `NUMBER_COLUMNS`); a join table has one row per category and two
text attributes, one unique per category and one shared among them.

Not guaranteed: values are not unique within a column (questions that order rows
state a tie rule); names come from `pools.py`, which holds at least 40 per pool (so
no table has more than 40 rows) and none with commas, quotes or pipes, which the
renderers and the list answers rely on.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from posttrain.domains.table.pools import (
    CITIES,
    CLUB_SUFFIXES,
    PRODUCTS,
    STORES,
    TOWNS,
    person_names,
)

Cell = str | int
Row = tuple[str, str, dict[str, int]]  # key, category, scaled numbers by column name

ROWS = (4, 6, 8, 10, 13, 16, 20, 25, 32, 40)
NUMBER_COLUMNS = (2, 2, 3, 3, 4, 4, 5, 5, 6, 6)


@dataclass(frozen=True)
class Column:
    """One column. `kind` is key, category, number or text; numbers are scaled by
    `10**decimals`; `additive` says a sum means something, `ratio` that the values are
    positive amounts whose percent change means something."""

    name: str
    kind: str
    decimals: int = 0
    additive: bool = False
    ratio: bool = False


def number_text(scaled: int, decimals: int) -> str:
    """The scaled integer written with `decimals` places: `number_text(-1205, 2) == "-12.05"`."""
    if decimals == 0:
        return str(scaled)
    whole, part = divmod(abs(scaled), 10**decimals)
    return f"{'-' if scaled < 0 else ''}{whole}.{part:0{decimals}d}"


def rounded_text(value: Fraction, places: int) -> str:
    """`value` rounded half away from zero to `places` decimals, never "-0.0"."""
    scaled = abs(value) * 10**places
    rounded = math.floor(scaled + Fraction(1, 2))
    return number_text(rounded if value >= 0 else -rounded, places)


@dataclass(frozen=True)
class Table:
    """A titled table; see the module docstring for how cells are stored."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]

    @property
    def cells(self) -> int:
        return len(self.rows) * len(self.columns)

    @property
    def key(self) -> Column:
        return self.columns[0]

    def names(self) -> list[str]:
        return [str(row[0]) for row in self.rows]

    def column(self, name: str) -> Column:
        return self.columns[self.index(name)]

    def index(self, name: str) -> int:
        for i, column in enumerate(self.columns):
            if column.name == name:
                return i
        raise KeyError(name)

    def numbers(self, flag: str | None = None) -> list[Column]:
        """The number columns, only those with `flag` ("additive", "ratio") set if given."""
        return [
            c for c in self.columns if c.kind == "number" and (flag is None or getattr(c, flag))
        ]

    def category(self) -> Column:
        return next(c for c in self.columns if c.kind == "category")

    def cell(self, row: int, name: str) -> Cell:
        return self.rows[row][self.index(name)]

    def text(self, row: int, name: str) -> str:
        """The cell as the renderers write it."""
        column = self.column(name)
        value = self.rows[row][self.index(name)]
        return number_text(int(value), column.decimals) if column.kind == "number" else str(value)

    def value(self, row: int, name: str) -> Fraction:
        column = self.column(name)
        return Fraction(int(self.rows[row][self.index(name)]), 10**column.decimals)

    def to_meta(self) -> dict[str, Any]:
        columns = [[c.name, c.kind, c.decimals, c.additive, c.ratio] for c in self.columns]
        return {"title": self.title, "columns": columns, "rows": [list(r) for r in self.rows]}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> Table:
        columns = tuple(Column(n, k, int(d), bool(a), bool(r)) for n, k, d, a, r in meta["columns"])
        return cls(str(meta["title"]), columns, tuple(tuple(r) for r in meta["rows"]))


@dataclass(frozen=True)
class Schema:
    """A kind of table: its columns, a row generator and the join table of its categories."""

    name: str
    title: str
    key: str
    category: str
    categories: tuple[str, ...]
    numbers: tuple[Column, ...]
    make_rows: Callable[[random.Random, int], list[Row]]
    join_title: str
    unique_attribute: str
    unique_values: tuple[str, ...]  # empty: person names
    shared_attribute: str
    shared_values: tuple[str, ...]


# ----------------------------------------------------------------------------- row makers


def _sales_rows(rng: random.Random, count: int) -> list[Row]:
    rows = []
    for name, region in rng.sample(STORES, count):
        base = rng.randint(150, 900)
        quarters = [round(base * f * rng.uniform(0.85, 1.15)) for f in (0.9, 1.0, 1.05, 1.3)]
        numbers = {f"Q{i + 1} sales ($k)": q for i, q in enumerate(quarters)}
        numbers["Staff"] = max(4, round(base / 25 * rng.uniform(0.8, 1.2)))
        numbers["Returns ($k)"] = max(1, round(sum(quarters) * rng.uniform(0.01, 0.05)))
        rows.append((name, region, numbers))
    return rows


_DEPARTMENT_PAY = {"Engineering": 1.3, "Sales": 1.0, "Marketing": 1.05, "Finance": 1.15, "Support": 0.8}  # fmt: skip


def _employee_rows(rng: random.Random, count: int) -> list[Row]:
    rows = []
    for name in person_names(rng, count):
        department = rng.choice(tuple(_DEPARTMENT_PAY))
        start = rng.randint(1996, 2024)
        years = 2025 - start
        salary = rng.randint(42, 70) * 1000 * _DEPARTMENT_PAY[department] * (1 + 0.025 * years)
        numbers = {
            "Salary ($)": round(salary / 500) * 500,
            "Start year": start,
            "Age": min(66, 22 + years + rng.randint(0, 14)),
            "Projects": rng.randint(1, 6 + years // 2),
            "Rating": rng.randint(20, 50),
            "Overtime (h)": rng.randint(0, 160),
        }
        rows.append((name, department, numbers))
    return rows


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _weather_rows(rng: random.Random, count: int) -> list[Row]:
    rows = []
    for name, continent, mean, swing, hemisphere in rng.sample(CITIES, count):
        sign = -1.0 if hemisphere == "N" else 1.0  # northern cities are coldest in January
        numbers = {
            f"{month} (°C)": round(
                10
                * (
                    mean
                    + sign * swing * math.cos(math.pi * (2 * m + 1) / 12)
                    + rng.uniform(-0.8, 0.8)
                )  # fmt: skip
            )
            for m, month in enumerate(_MONTHS)
        }
        rows.append((name, continent, numbers))
    return rows


def _inventory_rows(rng: random.Random, count: int) -> list[Row]:
    rows = []
    for name, category, price in rng.sample(PRODUCTS, count):
        cents = round(price * rng.uniform(0.8, 1.25)) * 100 - rng.choice((1, 5, 51))
        sold = rng.randint(5, max(10, 3000 // price))
        numbers = {
            "Price ($)": max(99, cents),
            "Stock": rng.randint(5, 600),
            "Units sold": sold,
            "Reorder level": rng.randint(2, 40) * 5,
            "Weight (kg)": max(1, round(price * rng.uniform(0.05, 0.3))),
            "Lead time (days)": rng.randint(2, 45),
        }
        rows.append((name, category, numbers))
    return rows


def _match_rows(rng: random.Random, count: int) -> list[Row]:
    rows = []
    for town in rng.sample(TOWNS, count):
        won = rng.randint(3, 22)
        drawn = rng.randint(2, min(12, 30 - won))
        lost = 30 - won - drawn
        numbers = {
            "Won": won,
            "Drawn": drawn,
            "Lost": lost,
            "Goals for": round(won * 1.6 + drawn * 0.9 + rng.randint(5, 15)),
            "Goals against": round(lost * 1.6 + drawn * 0.9 + rng.randint(5, 15)),
            "Points": 3 * won + drawn,
        }
        rows.append((f"{town} {rng.choice(CLUB_SUFFIXES)}", rng.choice("ABCDE"), numbers))
    return rows


# ----------------------------------------------------------------------------- schemas


def _numbers(spec: str) -> tuple[Column, ...]:
    """ "Name|decimals|flags; ..." where flags holds a (additive) and/or r (ratio)."""
    out = []
    for part in spec.split(";"):
        name, decimals, flags = (p.strip() for p in part.split("|"))
        out.append(Column(name, "number", int(decimals), "a" in flags, "r" in flags))
    return tuple(out)


SCHEMAS: tuple[Schema, ...] = (
    Schema(
        "sales", "Quarterly sales by store", "Store", "Region",
        ("North", "South", "East", "West", "Central"),
        _numbers(
            "Q1 sales ($k)|0|ar; Q2 sales ($k)|0|ar; Q3 sales ($k)|0|ar; Q4 sales ($k)|0|ar; "
            "Staff|0|ar; Returns ($k)|0|ar"
        ),
        _sales_rows, "Regional offices", "Manager", (),
        "Distribution centre", ("Denver", "Atlanta", "Columbus"),
    ),
    Schema(
        "employees", "Employees", "Employee", "Department", tuple(_DEPARTMENT_PAY),
        _numbers(
            "Salary ($)|0|ar; Start year|0|; Age|0|; Projects|0|ar; Rating|1|r; Overtime (h)|0|a"
        ),
        _employee_rows, "Departments", "Head", (), "Floor", ("1", "2", "3"),
    ),
    Schema(
        "weather", "Average monthly temperature by city", "City", "Continent",
        ("Europe", "Asia", "Africa", "Americas", "Oceania"),
        tuple(Column(f"{m} (°C)", "number", 1) for m in _MONTHS),
        _weather_rows, "Regional climate desks", "Coordinator", (),
        "Review month", ("March", "June", "September"),
    ),
    Schema(
        "inventory", "Product inventory", "Product", "Category",
        ("Office", "Kitchen", "Garden", "Electronics", "Sports"),
        _numbers(
            "Price ($)|2|r; Stock|0|ar; Units sold|0|ar; Reorder level|0|; Weight (kg)|1|r; "
            "Lead time (days)|0|r"
        ),
        _inventory_rows, "Category buyers", "Buyer", (), "Warehouse", ("North", "South", "Harbour"),
    ),
    Schema(
        "matches", "League table after 30 matches", "Team", "Group", tuple("ABCDE"),
        _numbers(
            "Won|0|a; Drawn|0|a; Lost|0|a; Goals for|0|ar; Goals against|0|ar; Points|0|ar"
        ),
        _match_rows, "Group venues", "Venue",
        ("Riverside Park", "Hillcrest Stadium", "Victoria Ground", "Meadow Lane", "Harbour Arena"),
        "Kick-off", ("13:00", "15:00", "17:30"),
    ),
)  # fmt: skip


def build_table(
    rng: random.Random, schema: Schema, difficulty: int, need: str | None = None
) -> Table:
    """A table of `schema` at `difficulty`: `ROWS[d-1]` rows, key, category and
    `NUMBER_COLUMNS[d-1]` number columns in schema order, at least one with `need` set."""
    count = ROWS[difficulty - 1]
    picks = sorted(rng.sample(range(len(schema.numbers)), NUMBER_COLUMNS[difficulty - 1]))
    if need is not None and not any(getattr(schema.numbers[i], need) for i in picks):
        eligible = [i for i, c in enumerate(schema.numbers) if getattr(c, need)]
        picks[rng.randrange(len(picks))] = rng.choice(eligible)
        picks.sort()
    chosen = [schema.numbers[i] for i in picks]
    columns = (Column(schema.key, "key"), Column(schema.category, "category"), *chosen)
    rows: list[tuple[Cell, ...]] = [
        (name, category, *[numbers[c.name] for c in chosen])
        for name, category, numbers in schema.make_rows(rng, count)
    ]
    return Table(schema.title, columns, tuple(rows))


def build_join_table(rng: random.Random, schema: Schema) -> Table:
    """One row per category of `schema`: a unique attribute and a shared one."""
    count = len(schema.categories)
    unique = list(schema.unique_values) or person_names(rng, count)
    if schema.unique_values:
        rng.shuffle(unique)
    shared = [rng.choice(schema.shared_values) for _ in range(count)]
    columns = (
        Column(schema.category, "key"),
        Column(schema.unique_attribute, "text"),
        Column(schema.shared_attribute, "text"),
    )
    rows = tuple(zip(schema.categories, unique[:count], shared, strict=True))
    return Table(schema.join_title, columns, rows)


def schema_named(name: str) -> Schema:
    return next(s for s in SCHEMAS if s.name == name)
