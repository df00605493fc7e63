"""The simulated backends of the `tools` API domains: generated worlds and the calls on them.

Each backend is a pair: a builder that draws a fictional world from a `random.Random`
(JSON data, stored in the task so any process can rebuild the session) and pure
functions that answer calls on that world, raising `ToolError` with a helpful
message for a bad call:

- names: `Namer` — fictional words, person, company and city names, tickers, codes;
- encyclopedia: `fact_world`, `lookup`, `find_names` — people, companies, cities;
- units: `unit_world`, `convert`, `links` — a fictional unit system, linked pairwise;
- currencies: `rate_world`, `rate` — fictional currencies with generated rates;
- calendar: `add_days`, `weekday`, `event_date` — ISO dates and named events;
- prices: `price_world`, `price` — daily closes of fictional tickers;
- search: `search_docs` — keyword search over generated snippets, paged.

Everything is fictional and drawn per task, so a model cannot know the answers
without calling the tools.

Not guaranteed: generated words are not checked against every real word or name
(a rare collision with a real one is possible); name matching folds case and
whitespace only; numbers returned are rounded (6 decimals for conversions and
rates, 2 for prices).
"""

from __future__ import annotations

import datetime as dt
import difflib
import random
import re
from typing import Any

from posttrain.domains.tools_api.framework import ToolError

_ONSETS = (
    "b",
    "br",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "k",
    "kr",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "st",
    "t",
    "th",
    "v",
    "z",
    "sh",
    "h",
)
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou", "ia")
_CODAS = ("", "", "n", "r", "l", "s", "th", "x", "m", "nd")
ROLES = (
    "glassblower",
    "cartographer",
    "beekeeper",
    "luthier",
    "archivist",
    "ferrier",
    "tanner",
    "chandler",
    "cooper",
    "weaver",
    "astronomer",
    "botanist",
)
_COMPANY_SUFFIXES = ("Works", "Labs", "Holdings", "Guild", "Foundry", "Traders", "Mills")
_REAL_CODES = (
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "CNY",
    "CHF",
    "CAD",
    "AUD",
    "INR",
    "RUB",
    "BRL",
    "MXN",
    "SEK",
    "NOK",
    "DKK",
    "PLN",
    "ZAR",
    "KRW",
    "TRY",
    "HKD",
    "NZD",
    "SGD",
)


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


class Namer:
    """Fictional names, each unique within one namer (so one world never repeats a name)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: list[str] = []

    def _fresh(self, make: Any) -> str:
        for _ in range(200):
            name = make()
            if name not in self.used:
                self.used.append(name)
                return str(name)
        raise RuntimeError("ran out of fresh names")

    def _word(self, syllables: int) -> str:
        r = self.rng
        return "".join(
            r.choice(_ONSETS) + r.choice(_VOWELS) + r.choice(_CODAS) for _ in range(syllables)
        )

    def word(self, syllables: int = 2) -> str:
        return self._fresh(lambda: self._word(syllables).capitalize())

    def unit(self) -> str:
        return self._fresh(lambda: self._word(1) + self.rng.choice(("k", "t", "p", "g")))

    def person(self) -> str:
        return self._fresh(lambda: f"{self._word(2).capitalize()} {self._word(2).capitalize()}")

    def near(self, name: str) -> str:
        """A different name that looks like `name` (a distractor)."""
        first, last = name.split(" ", 1)
        options = (
            f"{first} {last}e",
            f"{first}a {last}",
            f"{first} {last[:-1]}o",
            f"{first[::-1].capitalize()} {last}",
        )
        return self._fresh(lambda: self.rng.choice(options))

    def company(self) -> str:
        return self._fresh(
            lambda: f"{self._word(2).capitalize()} {self.rng.choice(_COMPANY_SUFFIXES)}"
        )

    def ticker(self) -> str:
        return self._fresh(
            lambda: "".join(self.rng.choice("BCDFGHJKLMNPQRSTVWXZ") for _ in range(4))
        )

    def code(self) -> str:
        def make() -> str:
            r = self.rng
            while True:
                text = r.choice("BDFGKLMNPRSTVZ") + r.choice("AEIOU") + r.choice("BDFGKLMNPRSTVXZ")
                if text not in _REAL_CODES:
                    return text

        return self._fresh(make)


# ---- encyclopedia ------------------------------------------------------------------------

LINKS = {
    "person": (("employer", "company"), ("hometown", "city")),
    "company": (("headquarters", "city"), ("ceo", "person")),
    "city": (("mayor", "person"),),
}
SCALARS = {"person": ("born", "role"), "company": ("founded",), "city": ("population", "region")}


def fact_world(rng: random.Random, people: int, near_names: int) -> dict[str, Any]:
    """An encyclopedia of `people` people (plus `near_names` look-alikes of some of them),
    about half as many companies and a third as many cities, all cross-linked."""
    namer = Namer(rng)
    cities = [namer.word(rng.choice((2, 3))) for _ in range(max(3, people // 3))]
    companies = [namer.company() for _ in range(max(3, people // 2))]
    persons = [namer.person() for _ in range(people)]
    persons += [namer.near(base) for base in rng.sample(persons, min(near_names, people))]
    records: dict[str, dict[str, Any]] = {}
    for name in persons:
        records[name] = {
            "type": "person",
            "born": rng.randint(1940, 2005),
            "role": rng.choice(ROLES),
            "employer": rng.choice(companies),
            "hometown": rng.choice(cities),
        }
    for name in companies:
        records[name] = {
            "type": "company",
            "founded": rng.randint(1820, 2020),
            "headquarters": rng.choice(cities),
            "ceo": rng.choice(persons),
        }
    regions = [namer.word(2) for _ in range(3)]
    for name in cities:
        records[name] = {
            "type": "city",
            "population": rng.randint(2_000, 900_000),
            "region": rng.choice(regions),
            "mayor": rng.choice(persons),
        }
    return {"records": records}


def lookup(world: dict[str, Any], name: str) -> dict[str, Any]:
    """The record called `name` (case and spacing ignored), with its name."""
    wanted = _key(name)
    for known, record in world["records"].items():
        if _key(known) == wanted:
            return {"name": known, **record}
    names = list(world["records"])
    close = difflib.get_close_matches(name.strip(), names, n=3, cutoff=0.6)
    hint = f"; similar names: {', '.join(close)}" if close else "; try search_names"
    raise ToolError(f"no record named {name[:60]!r}{hint}")


def find_names(world: dict[str, Any], text: str) -> list[str]:
    """Record names containing `text` (case ignored), in the world's order, at most 10."""
    wanted = _key(text)
    if len(wanted) < 2:
        raise ToolError("search text must have at least 2 characters")
    return [name for name in world["records"] if wanted in _key(name)][:10]


# ---- units -------------------------------------------------------------------------------


def unit_world(rng: random.Random, hops: int, distractors: int) -> dict[str, Any]:
    """Units linked pairwise ("1 a = f b"): a path of `hops` links from the first unit to
    the last of `path`, plus `distractors` units hanging off it. Factors exceed 1 along
    the path, so values grow."""
    namer = Namer(rng)
    path = [namer.unit() for _ in range(hops + 1)]
    edges = [[a, b, rng.randint(6, 48) / 4] for a, b in zip(path, path[1:], strict=False)]
    units = list(path)
    for _ in range(distractors):
        extra = namer.unit()
        edges.append([rng.choice(units), extra, rng.randint(6, 48) / 4])
        units.append(extra)
    return {"path": path, "edges": edges}


def links(world: dict[str, Any], unit: str) -> list[str]:
    """Units with a direct conversion to or from `unit`."""
    known = [u for e in world["edges"] for u in e[:2]]
    if unit not in known:
        raise ToolError(f"unknown unit {unit[:40]!r}; unit names are lowercase words")
    return [b if a == unit else a for a, b, _ in world["edges"] if unit in (a, b)]


def convert(world: dict[str, Any], value: float, source: str, target: str) -> float:
    """`value` in `source` units expressed in `target` units, for directly linked units."""
    linked = links(world, source)
    links(world, target)
    for a, b, factor in world["edges"]:
        if (a, b) == (source, target):
            return round(value * factor, 6)
        if (a, b) == (target, source):
            return round(value / factor, 6)
    raise ToolError(
        f"no direct conversion from {source} to {target}; {source} converts directly to: "
        + ", ".join(linked)
    )


# ---- currencies --------------------------------------------------------------------------


def rate_world(rng: random.Random, currencies: int) -> dict[str, Any]:
    """`currencies` fictional currencies, each worth a random amount of a hidden base."""
    namer = Namer(rng)
    codes = [namer.code() for _ in range(currencies)]
    return {"values": {code: round(rng.uniform(0.05, 20.0), 4) for code in codes}}


def rate(world: dict[str, Any], source: str, target: str) -> float:
    """How many `target` one `source` buys today, rounded to 6 decimals."""
    values = world["values"]
    for code in (source, target):
        if code not in values:
            raise ToolError(f"unknown currency code {code[:20]!r}; known: {', '.join(values)}")
    return round(values[source] / values[target], 6)


# ---- calendar ----------------------------------------------------------------------------


def parse_date(text: str) -> dt.date:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text.strip()):
        raise ToolError(f"dates are written YYYY-MM-DD, got {text[:40]!r}")
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(f"{text[:40]!r} is not a calendar date") from None


def add_days(date: str, days: int) -> str:
    if abs(days) > 100_000:
        raise ToolError("days must be between -100000 and 100000")
    try:
        return (parse_date(date) + dt.timedelta(days=int(days))).isoformat()
    except OverflowError:
        raise ToolError("the resulting date is out of range") from None


def weekday(date: str) -> str:
    return parse_date(date).strftime("%A")


def event_date(world: dict[str, Any], name: str) -> dict[str, str]:
    for known, date in world["events"].items():
        if _key(known) == _key(name):
            return {"event": known, "date": date}
    close = difflib.get_close_matches(name.strip(), list(world["events"]), n=3, cutoff=0.5)
    raise ToolError(
        f"no event named {name[:60]!r}" + (f"; similar: {', '.join(close)}" if close else "")
    )


# ---- prices ------------------------------------------------------------------------------


def price_world(rng: random.Random, tickers: int, days: int) -> dict[str, Any]:
    """Daily closes of `tickers` fictional tickers over `days` consecutive days of 2047."""
    namer = Namer(rng)
    start = dt.date(2047, 1, 1) + dt.timedelta(days=rng.randint(0, 300))
    dates = [(start + dt.timedelta(days=i)).isoformat() for i in range(days)]
    prices: dict[str, dict[str, float]] = {}
    for _ in range(tickers):
        close = rng.uniform(5, 500)
        series = {}
        for date in dates:
            close = max(0.5, close * (1 + rng.uniform(-0.06, 0.06)))
            series[date] = round(close, 2)
        prices[namer.ticker()] = series
    return {"prices": prices, "dates": dates}


def price(world: dict[str, Any], ticker: str, date: str) -> dict[str, Any]:
    series = world["prices"].get(ticker.strip().upper())
    if series is None:
        raise ToolError(f"unknown ticker {ticker[:20]!r}; tickers are 4 capital letters")
    parse_date(date)
    if date.strip() not in series:
        first, last = world["dates"][0], world["dates"][-1]
        raise ToolError(f"no close for {date.strip()}; data covers {first} to {last}")
    return {"ticker": ticker.strip().upper(), "date": date.strip(), "close": series[date.strip()]}


# ---- search ------------------------------------------------------------------------------

PAGE_SIZE = 5


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.casefold())


def search_docs(world: dict[str, Any], query: str, page: int) -> dict[str, Any]:
    """Documents sharing words with `query`, most shared words first, `PAGE_SIZE` a page."""
    wanted = _tokens(query)
    if not wanted:
        raise ToolError("the query has no words")
    if page < 1:
        raise ToolError("pages are numbered from 1")
    scored = []
    for index, doc in enumerate(world["docs"]):
        words = _tokens(doc["text"])
        score = sum(1 for w in dict.fromkeys(wanted) if w in words)
        if score:
            scored.append((-score, index, doc))
    scored.sort(key=lambda item: (item[0], item[1]))
    hits = [{"id": doc["id"], "text": doc["text"]} for _, _, doc in scored]
    pages = max(1, -(-len(hits) // PAGE_SIZE))
    chunk = hits[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    return {"total": len(hits), "page": page, "pages": pages, "results": chunk}
