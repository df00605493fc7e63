"""Pieces the `extract/*` generators build documents from: people, companies, places,
dates, times, amounts and phone numbers, each with the several ways documents write them.

    rng = random.Random(0)
    name = person(rng)                      # "Priya Shah"
    when = day(rng)                         # datetime.date(2024, 3, 3)
    date_text(when, "ordinal")              # "3rd of March 2024"
    money_text(1234.5, "code_after")        # "1,234.50 USD"

Every function draws randomness only from the `rng` it is given, so documents are
deterministic for a seeded `random.Random`. The `*_styles(difficulty)` functions list
the renderings allowed at a difficulty: plain ones at 1, harder ones ("3rd of March
2024", "2.30pm", "$1.2k") join as difficulty grows.

Not guaranteed: the pools are small (tens of names), so two tasks often share names;
`distinct` gives up after 200 draws and raises (a programming error: a pool too small
for the request); dates lie in 2022..2026; amounts are rendered with two decimals
unless the style says otherwise.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from posttrain.verify.fuzzy import fuzzy_ratio

T = TypeVar("T")

FIRST_NAMES = (
    "Aisha", "Benedikt", "Carmen", "Dmitri", "Elena", "Farid", "Grace", "Hiroshi",
    "Ingrid", "Jamal", "Katarina", "Luis", "Mei", "Nikolai", "Olivia", "Pradeep",
    "Quinn", "Rosa", "Samuel", "Tamsin", "Umar", "Valentina", "Wesley", "Ximena",
    "Yusuf", "Zofia", "Andrei", "Beatriz", "Cormac", "Delphine", "Emeka", "Freya",
)  # fmt: skip
LAST_NAMES = (
    "Okafor", "Lindqvist", "Moreno", "Petrov", "Nakamura", "Haddad", "O'Connell",
    "Fischer", "Banerjee", "Kowalski", "Delacroix", "Mbeki", "Thornton", "Yamada",
    "Castellanos", "Abernathy", "Sørensen", "Whitfield", "Ivanova", "Gallagher",
    "Rahman", "Novak", "Esposito", "Hartley", "Achebe", "Brennan", "Vasquez", "Lund",
)  # fmt: skip
COMPANY_STEMS = (
    "Northwind", "Bluepeak", "Ironbridge", "Cedar Lane", "Solstice", "Harborview",
    "Quillfeather", "Redstone", "Silverline", "Kestrel", "Maplewood", "Orion",
    "Tidewater", "Juniper", "Granite Hill", "Lumen", "Brightwater", "Copperfield",
)  # fmt: skip
COMPANY_KINDS = (
    "Supplies", "Logistics", "Analytics", "Labs", "Foods", "Robotics", "Print Works",
    "Consulting", "Outfitters", "Systems", "Textiles", "Energy",
)  # fmt: skip
COMPANY_SUFFIXES = ("Ltd.", "Inc.", "LLC", "GmbH", "Co.", "")
STREETS = (
    "Maple Avenue", "Harbor Road", "Elm Street", "Kingsway", "Mill Lane", "Ocean Drive",
    "Station Road", "Birch Court", "Cannery Row", "Foundry Street", "Willow Way",
)  # fmt: skip
CITIES = (
    ("Portland", "OR"), ("Austin", "TX"), ("Denver", "CO"), ("Madison", "WI"),
    ("Raleigh", "NC"), ("Tucson", "AZ"), ("Boise", "ID"), ("Savannah", "GA"),
    ("Burlington", "VT"), ("Spokane", "WA"), ("Omaha", "NE"), ("Duluth", "MN"),
)  # fmt: skip
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)  # fmt: skip
FILLER = (
    "Please keep this document for your records.",
    "If you have any questions, reply to this message and we will get back to you.",
    "Thank you for your continued business.",
    "This message was generated automatically; the details below are current as of today.",
    "Our office hours are Monday to Friday, 9am to 5pm.",
    "Please note that all amounts are shown in US dollars.",
    "We have updated our privacy policy; a copy is available on request.",
    "Parking is available on site for visitors.",
    "Kindly do not print this email unless necessary.",
    "All information in this document is confidential.",
    "We appreciate your patience while we upgrade our systems.",
    "Reference numbers are case-insensitive.",
)  # fmt: skip


def distinct(rng: random.Random, draw: Callable[[random.Random], T], n: int,
             apart: Callable[[T, T], bool] | None = None) -> list[T]:  # fmt: skip
    """`n` draws that are pairwise different (and `apart`, when given)."""
    out: list[T] = []
    for _ in range(200):
        if len(out) == n:
            return out
        x = draw(rng)
        if all(x != y and (apart is None or apart(x, y)) for y in out):
            out.append(x)
    if len(out) == n:
        return out
    raise ValueError(f"could not draw {n} distinct values")


def unlike(a: str, b: str) -> bool:
    """True when two strings are far apart for a fuzzy matcher (ratio below 0.75)."""
    return fuzzy_ratio(a, b) < 0.75


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def people(rng: random.Random, n: int) -> list[str]:
    """`n` full names no fuzzy matcher confuses with each other."""
    return distinct(rng, person, n, unlike)


def company(rng: random.Random) -> str:
    suffix = rng.choice(COMPANY_SUFFIXES)
    name = f"{rng.choice(COMPANY_STEMS)} {rng.choice(COMPANY_KINDS)}"
    return f"{name} {suffix}" if suffix else name


def companies(rng: random.Random, n: int) -> list[str]:
    return distinct(rng, company, n, unlike)


@dataclass(frozen=True)
class Address:
    street: str
    city: str
    state: str
    postal_code: str

    def lines(self) -> list[str]:
        return [self.street, f"{self.city}, {self.state} {self.postal_code}"]

    def one_line(self) -> str:
        return f"{self.street}, {self.city}, {self.state} {self.postal_code}"


def address(rng: random.Random) -> Address:
    city, state = rng.choice(CITIES)
    street = f"{rng.randint(2, 2999)} {rng.choice(STREETS)}"
    return Address(street, city, state, f"{rng.randint(10000, 99999)}")


def addresses(rng: random.Random, n: int) -> list[Address]:
    """`n` addresses in different cities with different postal codes."""
    return distinct(rng, address, n, lambda a, b: a.city != b.city and a.postal_code != b.postal_code)  # fmt: skip


def email(name: str, domain: str) -> str:
    first, _, last = name.partition(" ")
    local = f"{first[0]}.{last}".lower().replace("'", "").replace("ø", "o")
    return f"{local}@{domain}"


def web_domain(company_name: str) -> str:
    words = company_name.replace(".", "").replace(",", "").split()
    return "".join(w.lower() for w in words[:2]) + ".com"


# ----------------------------------------------------------------------------- dates


def day(rng: random.Random, first_year: int = 2023, last_year: int = 2025) -> dt.date:
    start = dt.date(first_year, 1, 1).toordinal()
    end = dt.date(last_year, 12, 31).toordinal()
    return dt.date.fromordinal(rng.randint(start, end))


def shifted(when: dt.date, days: int) -> dt.date:
    return when + dt.timedelta(days=days)


def iso(when: dt.date) -> str:
    return when.isoformat()


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def date_text(when: dt.date, style: str) -> str:
    """The date written in `style`: iso, us, uk, short, ordinal or weekday."""
    month = MONTHS[when.month - 1]
    if style == "iso":
        return when.isoformat()
    if style == "us":
        return f"{month} {when.day}, {when.year}"
    if style == "uk":
        return f"{when.day} {month} {when.year}"
    if style == "short":
        return f"{month[:3]} {when.day}, {when.year}"
    if style == "ordinal":
        return f"{_ordinal(when.day)} of {month} {when.year}"
    if style == "weekday":
        return f"{when.strftime('%A')}, {when.day} {month} {when.year}"
    raise ValueError(f"unknown date style {style!r}")


def date_styles(difficulty: int) -> Sequence[str]:
    if difficulty <= 2:
        return ("iso", "us")
    if difficulty <= 5:
        return ("us", "uk", "short")
    return ("uk", "short", "ordinal", "weekday")


def month_text(year: int, month: int, style: str) -> str:
    """A month of a year: "2021-04", "April 2021", "Apr 2021" or "04/2021"."""
    name = MONTHS[month - 1]
    return {"iso": f"{year}-{month:02d}", "long": f"{name} {year}", "short": f"{name[:3]} {year}",
            "slash": f"{month:02d}/{year}"}[style]  # fmt: skip


# ----------------------------------------------------------------------------- times


def time_text(hour: int, minute: int, style: str) -> str:
    """A time of day: 24h ("14:30"), 12h ("2:30 PM"), dotted ("2.30pm") or dots ("2:30 p.m.")."""
    twelve = hour % 12 or 12
    half = "AM" if hour < 12 else "PM"
    if style == "24h":
        return f"{hour:02d}:{minute:02d}"
    if style == "12h":
        return f"{twelve}:{minute:02d} {half}"
    if style == "dotted":
        return f"{twelve}.{minute:02d}{half.lower()}"
    if style == "dots":
        return f"{twelve}:{minute:02d} {half[0].lower()}.m."
    raise ValueError(f"unknown time style {style!r}")


def time_styles(difficulty: int) -> Sequence[str]:
    return ("24h", "12h") if difficulty <= 3 else ("12h", "dotted", "dots")


def clock(hour: int, minute: int) -> str:
    return f"{hour:02d}:{minute:02d}"


# ----------------------------------------------------------------------------- amounts


def cents(rng: random.Random, low: float, high: float) -> float:
    """A random amount with two decimals in [low, high]."""
    return round(rng.randint(round(low * 100), round(high * 100)) / 100, 2)


def money_text(amount: float, style: str) -> str:
    """An amount: sign ("$1,234.50"), code_before ("USD 1,234.50"), code_after
    ("1,234.50 USD"), plain ("1234.50") or k ("$1.2k", only for whole hundreds)."""
    body = f"{amount:,.2f}"
    if style == "sign":
        return f"${body}"
    if style == "code_before":
        return f"USD {body}"
    if style == "code_after":
        return f"{body} USD"
    if style == "plain":
        return f"{amount:.2f}"
    if style == "k":
        thousands = amount / 1000
        return f"${thousands:g}k"
    raise ValueError(f"unknown money style {style!r}")


def money_styles(difficulty: int) -> Sequence[str]:
    return ("sign",) if difficulty <= 3 else ("sign", "code_before", "code_after")


# ----------------------------------------------------------------------------- phones


def phone(rng: random.Random) -> str:
    """A ten-digit North American number, as its digits."""
    return f"{rng.randint(201, 989)}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}"


def phone_text(digits: str, style: str) -> str:
    a, b, c = digits[:3], digits[3:6], digits[6:]
    return {"dashes": f"{a}-{b}-{c}", "parens": f"({a}) {b}-{c}", "dots": f"{a}.{b}.{c}",
            "intl": f"+1 {a} {b} {c}"}[style]  # fmt: skip


def filler(rng: random.Random, n: int) -> list[str]:
    """`n` different boilerplate sentences that hold no extractable value."""
    return rng.sample(FILLER, min(n, len(FILLER)))
