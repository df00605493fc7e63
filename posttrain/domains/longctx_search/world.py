"""Names and fact templates the long-context search tasks plant in their haystacks.

    place = new_place(rng, taken)                 # "Harrowgate"
    twin = lookalike_place(rng, place, taken)     # "Harrowmere" or "Dungate"
    ATTRIBUTES[0].needle.format(f="archive", p=place, v="4821")

Places are a prefix and a suffix ("Harrow" + "gate"); a look-alike shares one of the
two. People are a first and a last name; a look-alike shares the last name. Each
`Attribute` says one numeric fact about a facility three ways: the needle, a stale
version (what it used to be: a distractor) and a paraphrased question that shares
only the facility and place names with the needle.

Not guaranteed: names are invented from small pools, so two tasks often share them;
`values` draws four-digit numbers from 2000-9999 (filler prose holds no digits).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

PREFIXES = ("Harrow", "Vel", "Ash", "Thorn", "Marl", "Brig", "Cal", "Dun", "Elm", "Fen", "Gal",
            "Hol", "Ivor", "Kel", "Lor", "Mor", "Nor", "Pell", "Quen", "Ros", "Sel", "Tarn",
            "Ulm", "Vard", "Wex", "Yar")  # fmt: skip
SUFFIXES = ("gate", "mere", "ford", "wick", "holm", "stead", "ton", "by", "moor", "vale",
            "crest", "haven")  # fmt: skip
FACILITIES = ("storeroom", "archive", "boathouse", "signal tower", "seed vault", "pump station",
              "observatory", "granary", "customs house", "ferry office")  # fmt: skip
FIRST = ("Ada", "Bram", "Cora", "Dorian", "Edda", "Felix", "Greta", "Hugo", "Ines", "Jonas",
         "Kira", "Lukas", "Mira", "Nils", "Olga", "Pavel", "Rhea", "Silas", "Tova", "Ulric",
         "Vera", "Wendel", "Yana", "Zeno")  # fmt: skip
LAST = ("Rusk", "Castell", "Okafor", "Lindqvist", "Moreau", "Halloran", "Petrov", "Achebe",
        "Varga", "Tanaka", "Brennan", "Kowal", "Duarte", "Sorensen", "Ferrante", "Mbeki",
        "Novak", "Quist", "Reyes", "Strand")  # fmt: skip
MENTIONS = (
    "Travelers often stop at the {f} in {p} to admire the view over the water.",
    "Children in {p} like to race each other to the {f} and back.",
    "The {f} at {p} was painted a pale green after a long argument in the council.",
    "Records kept at the {f} of {p} are said to be unusually tidy.",
    "A storm once tore the shutters from the {f} at {p}, and they were never replaced.",
)  # fmt: skip


@dataclass(frozen=True)
class Attribute:
    """One numeric fact about a facility: needle, stale distractor, paraphrased question,
    and the words a searcher would try (`query`)."""

    name: str
    needle: str
    stale: str
    question: str
    query: str


ATTRIBUTES = (
    Attribute("code", "The access code for the {f} at {p} is {v}.",
              "The access code for the {f} at {p} used to be {v}, but it was replaced years ago.",
              "Which number must be keyed in today to get into the {f} of {p}?",
              "access code {f} {p}"),
    Attribute("width", "The main hall of the {f} at {p} measures {v} centimeters from wall to wall.",
              "Before the rebuilding, the main hall of the {f} at {p} measured {v} centimeters.",
              "How wide, in centimeters, is the main hall in {p}'s {f} now?",
              "main hall {f} {p} centimeters"),
    Attribute("visitors", "Last season the {f} at {p} welcomed {v} visitors.",
              "The season before last, the {f} at {p} welcomed {v} visitors.",
              "How many people came to see {p}'s {f} in the most recent season?",
              "visitors {f} {p} season"),
    Attribute("bell", "The great bell of the {f} at {p} weighs {v} kilograms.",
              "The first great bell of the {f} at {p}, long since melted down, weighed {v} kilograms.",
              "What is the mass, in kilograms, of the big bell that hangs at {p}'s {f} today?",
              "great bell {f} {p} kilograms"),
    Attribute("ledger", "The ledger kept at the {f} in {p} carries the serial number {v}.",
              "A previous ledger from the {f} in {p}, now lost, carried the serial number {v}.",
              "What serial number is printed on the ledger the {f} of {p} currently keeps?",
              "ledger serial number {f} {p}"),
)  # fmt: skip


def new_place(rng: random.Random, taken: set[str]) -> str:
    """A place name not in `taken` (added to it)."""
    while True:
        name = rng.choice(PREFIXES) + rng.choice(SUFFIXES)
        if name not in taken:
            taken.add(name)
            return name


def lookalike_place(rng: random.Random, place: str, taken: set[str]) -> str:
    """A new place sharing `place`'s prefix or suffix (added to `taken`)."""
    prefix = next(p for p in PREFIXES if place.startswith(p))
    suffix = place[len(prefix) :]
    for _ in range(100):
        name = (
            prefix + rng.choice(SUFFIXES) if rng.random() < 0.5 else rng.choice(PREFIXES) + suffix
        )
        if name not in taken:
            taken.add(name)
            return name
    return new_place(rng, taken)


def new_person(rng: random.Random, taken: set[str], last: str | None = None) -> str:
    """A person not in `taken` (added to it); with `last`, a look-alike of that surname."""
    while True:
        name = f"{rng.choice(FIRST)} {last or rng.choice(LAST)}"
        if name not in taken:
            taken.add(name)
            return name


def values(rng: random.Random, n: int) -> list[str]:
    """`n` distinct four-digit values."""
    return [str(v) for v in rng.sample(range(2000, 10000), n)]


def mention(rng: random.Random, facility: str, place: str) -> str:
    """A digit-free sentence naming the facility and place: search noise."""
    return rng.choice(MENTIONS).format(f=facility, p=place)
