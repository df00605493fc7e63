"""The function catalogue of the single-turn `agent/fc-*` domains: schemas and request makers.

Each `Function` pairs an OpenAI function schema with `make(rng, size)`, which returns
a user request in words and the arguments a correct call carries. `FLAT` functions
take scalar arguments (strings, numbers, enums); `NESTED` ones take objects and
lists of objects whose length grows with `size`. `spec(function, arguments)` turns
the gold arguments into a verifier spec for `posttrain.verify.structure.call_matches`:
the schema with every gold argument required and pinned to its gold value
(`allowed`, compared case-insensitively).

Not guaranteed: requests are templated English; free-text arguments are always
quoted in the request, so a model is expected to copy them exactly (up to case).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_S, _I, _N = {"type": "string"}, {"type": "integer"}, {"type": "number"}
CITIES = ("Paris", "Lima", "Osaka", "Nairobi", "Oslo", "Denver", "Hanoi", "Porto", "Quito", "Perth")
AIRPORTS = ("JFK", "LHR", "CDG", "NRT", "SFO", "DXB", "SIN", "GRU", "SYD", "FRA")
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD")
LANGUAGES = ("French", "German", "Spanish", "Japanese", "Swahili", "Portuguese")
PHRASES = (
    "where is the station",
    "thank you for dinner",
    "the meeting moved to Friday",
    "two coffees please",
)
DATES = tuple(f"2024-07-{d:02d}" for d in range(1, 29))
TIMES = tuple(f"{h:02d}:{m:02d}" for h in range(8, 21) for m in (0, 30))


@dataclass(frozen=True)
class Function:
    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    make: Callable[[random.Random, int], tuple[str, dict[str, Any]]]

    def schema(self) -> dict[str, Any]:
        parameters = {
            "type": "object",
            "properties": copy.deepcopy(self.properties),
            "required": list(self.required),
        }
        return {"name": self.name, "description": self.description, "parameters": parameters}


def spec(function: Function, arguments: dict[str, Any]) -> dict[str, Any]:
    """The verifier spec: the schema, every gold argument required and pinned to its value."""
    schema = function.schema()
    props = schema["parameters"]["properties"]
    for key, value in arguments.items():
        props[key] = {**props[key], "allowed": [value], "case_insensitive": True}
    schema["parameters"]["required"] = sorted(set(function.required) | set(arguments))
    return schema


def _weather(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    city, days, unit = rng.choice(CITIES), rng.randint(1, 7), rng.choice(("celsius", "fahrenheit"))
    return f"What will the weather be in {city} over the next {days} days? Give me {unit}.", {"city": city, "days": days, "unit": unit}  # fmt: skip


def _currency(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    a, b = rng.sample(CURRENCIES, 2)
    amount = rng.randint(1, 5000) + rng.choice((0, 0.5, 0.25))
    return f"How much is {amount} {a} in {b}?", {
        "amount": amount,
        "from_currency": a,
        "to_currency": b,
    }


def _table(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    place = rng.choice(("Chez Nous", "Sakura", "The Oak Room", "Casa Verde"))
    when, time, n = rng.choice(DATES), rng.choice(TIMES), rng.randint(1, 12)
    return (f'Book a table for {n} at "{place}" on {when} at {time}.',
            {"restaurant": place, "date": when, "time": time, "party_size": n})  # fmt: skip


def _flights(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    a, b = rng.sample(AIRPORTS, 2)
    when, cabin, n = (
        rng.choice(DATES),
        rng.choice(("economy", "premium", "business")),
        rng.randint(1, 6),
    )
    return (f"Find {cabin} flights from {a} to {b} on {when} for {n} passenger{'s' * (n > 1)}.",
            {"origin": a, "destination": b, "date": when, "cabin": cabin, "passengers": n})  # fmt: skip


def _translate(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    phrase, lang = rng.choice(PHRASES), rng.choice(LANGUAGES)
    return f'Translate "{phrase}" into {lang}.', {"text": phrase, "target_language": lang}


def _tip(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    bill, pct, split = (
        rng.randint(20, 400) + rng.choice((0, 0.5)),
        rng.choice((10, 15, 18, 20, 25)),
        rng.randint(1, 8),
    )
    return (f"Our bill is {bill} dollars; work out a {pct}% tip split between {split} people.",
            {"bill": bill, "percent": pct, "split": split})  # fmt: skip


def _order(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    items = [
        {"sku": f"SKU-{n}", "quantity": rng.randint(1, 9)}
        for n in rng.sample(range(100, 999), size)
    ]
    method, city = rng.choice(("standard", "express")), rng.choice(CITIES)
    street, zip_code = (
        f"{rng.randint(1, 99)} {rng.choice(('Elm', 'Oak', 'Main'))} Street",
        f"{rng.randint(10000, 99999)}",
    )
    said, customer = (
        ", ".join(f"{i['quantity']} of {i['sku']}" for i in items),
        f"{rng.choice(CITIES)} Traders",
    )
    return (f'Order {said} (in that order) for customer "{customer}", shipped {method} to {street}, {city}, {zip_code}.',
            {"customer": customer, "items": items,
             "shipping": {"method": method, "address": {"street": street, "city": city, "zip": zip_code}}})  # fmt: skip


def _meeting(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    people = rng.sample(
        ("ana@x.io", "bo@x.io", "cy@x.io", "di@x.io", "ed@x.io", "flo@x.io", "gus@x.io"),
        min(7, size + 1),
    )
    title, when, start = (
        rng.choice(("Kickoff", "Review", "Planning")),
        rng.choice(DATES),
        rng.choice(TIMES),
    )
    minutes = rng.choice((15, 30, 45, 60))
    return (f'Schedule a {minutes}-minute meeting titled "{title}" on {when} at {start} with ' + ", ".join(people) + " (in that order).",
            {"title": title, "attendees": people, "slot": {"date": when, "start": start, "duration_minutes": minutes}})  # fmt: skip


def _invoice(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    lines = [
        {"description": d, "hours": rng.randint(1, 40), "rate": rng.choice((50, 75, 90, 120))}
        for d in rng.sample(
            ("design", "testing", "support", "training", "audit", "setup", "review"), min(7, size)
        )
    ]
    client, currency = rng.choice(("Globex", "Initech", "Umbrella")), rng.choice(CURRENCIES[:3])
    said = "; ".join(
        f"{x['description']}: {x['hours']} hours at {x['rate']} per hour" for x in lines
    )
    return (f"Invoice {client} in {currency} for these lines, in this order: {said}.",
            {"client": client, "currency": currency, "lines": lines})  # fmt: skip


FLAT = (
    Function("get_weather", "Weather forecast for a city.",
             {"city": _S, "days": {"type": "integer", "minimum": 1, "maximum": 7},
              "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ("city", "days"), _weather),
    Function("convert_currency", "Convert an amount between currencies.",
             {"amount": _N, "from_currency": {"type": "string", "enum": list(CURRENCIES)},
              "to_currency": {"type": "string", "enum": list(CURRENCIES)}}, ("amount", "from_currency", "to_currency"), _currency),
    Function("book_table", "Reserve a restaurant table.",
             {"restaurant": _S, "date": _S, "time": _S, "party_size": _I}, ("restaurant", "date", "time", "party_size"), _table),
    Function("search_flights", "Search flights between two airports (IATA codes).",
             {"origin": _S, "destination": _S, "date": _S, "cabin": {"type": "string", "enum": ["economy", "premium", "business"]},
              "passengers": _I}, ("origin", "destination", "date"), _flights),
    Function("translate_text", "Translate text into another language.",
             {"text": _S, "target_language": {"type": "string", "enum": list(LANGUAGES)}}, ("text", "target_language"), _translate),
    Function("calculate_tip", "Tip per person for a bill.",
             {"bill": _N, "percent": _N, "split": _I}, ("bill", "percent"), _tip),
)  # fmt: skip

_ADDRESS = {
    "type": "object",
    "properties": {"street": _S, "city": _S, "zip": _S},
    "required": ["street", "city", "zip"],
}
NESTED = (
    Function("create_order", "Create an order with line items and shipping.",
             {"customer": _S, "items": {"type": "array", "items": {"type": "object", "properties": {"sku": _S, "quantity": _I},
                                                                    "required": ["sku", "quantity"]}},
              "shipping": {"type": "object", "properties": {"method": {"type": "string", "enum": ["standard", "express"]},
                                                           "address": _ADDRESS}, "required": ["method", "address"]}},
             ("customer", "items", "shipping"), _order),
    Function("schedule_meeting", "Schedule a meeting with attendees in a time slot.",
             {"title": _S, "attendees": {"type": "array", "items": _S},
              "slot": {"type": "object", "properties": {"date": _S, "start": _S, "duration_minutes": _I},
                       "required": ["date", "start", "duration_minutes"]}}, ("title", "attendees", "slot"), _meeting),
    Function("create_invoice", "Create an invoice made of billed lines.",
             {"client": _S, "currency": {"type": "string", "enum": list(CURRENCIES)},
              "lines": {"type": "array", "items": {"type": "object", "properties": {"description": _S, "hours": _N, "rate": _N},
                                                   "required": ["description", "hours", "rate"]}}},
             ("client", "currency", "lines"), _invoice),
)  # fmt: skip
