"""Shared pieces of the `docqa/*` documents: look-alike names, project and system names,
the prompt frame, and the answer checks several domains use.

    rng = random.Random(0)
    twin = lookalike(rng, "Grace Novak", taken=[])   # "Grace Lund" or "Emeka Novak"
    prompt = frame("MEMO ...", "Who approved ...?")  # document in <document> tags

People, companies, dates and amounts come from `posttrain.domains.extract.documents`;
this module adds what question answering needs on top: distractor names that share a
first or last name with the gold one, code names for projects and systems, and the
strict name check the span answers use.

Not guaranteed: the pools are small, so tasks share names; `lookalike` may return a
name that already exists when the pools are exhausted (it then raises, a programming
error); `is_name` accepts any two or three capitalised words, not only real people.
"""

from __future__ import annotations

import random
import re

from posttrain.domains.extract import documents as d

PROJECTS = (
    "Kestrel", "Lighthouse", "Bramble", "Falcon", "Meridian", "Tundra", "Quartz", "Harbor",
    "Willow", "Zephyr", "Aurora", "Basalt", "Cobalt", "Driftwood", "Ember", "Fjord",
    "Glacier", "Heron", "Indigo", "Juniper", "Lantern", "Mistral", "Nimbus", "Obsidian",
)  # fmt: skip
SYSTEM_WORDS = (
    ("Ledger", "Badge", "Payroll", "Freight", "Invoice", "Vendor", "Archive", "Inventory",
     "Travel", "Grant", "Fleet", "Asset"),
    ("Portal", "Sync", "Gateway", "Tracker", "Console", "Registry", "Pipeline", "Desk",
     "Hub", "Monitor", "Vault", "Planner"),
)  # fmt: skip
TASKS = (
    "draft the vendor shortlist", "update the risk register", "book the venue",
    "circulate the budget template", "review the data-retention clause", "schedule user interviews",
    "renew the hosting contract", "prepare the board slides", "audit the access list",
    "collect quotes for the new printers", "test the backup restore", "write the onboarding guide",
    "confirm the catering order", "migrate the shared drive", "file the grant report",
)  # fmt: skip
CHATTER = (
    "The group agreed to revisit the timeline at the next meeting.",
    "Several attendees asked for the figures to be shared ahead of time.",
    "A short discussion followed about room bookings for the quarter.",
    "It was noted that the previous minutes had been approved without changes.",
    "The chair thanked everyone for their contributions.",
    "There was no other business raised under this item.",
    "The team discussed staffing over the holiday period.",
    "Feedback from the customer survey was broadly positive.",
)  # fmt: skip
_NAME_WORD = r"[^\W\d_][\w'’\-]*"
_NAME = re.compile(rf"{_NAME_WORD}(?: {_NAME_WORD}){{1,2}}")


def lookalike(rng: random.Random, name: str, taken: list[str]) -> str:
    """A new full name sharing the first or the last name with `name`."""
    first, _, last = name.partition(" ")
    for _ in range(200):
        if rng.random() < 0.5:
            twin = f"{first} {rng.choice(d.LAST_NAMES)}"
        else:
            twin = f"{rng.choice(d.FIRST_NAMES)} {last}"
        if twin != name and twin not in taken:
            return twin
    raise ValueError(f"no look-alike left for {name!r}")


def cast(rng: random.Random, n: int, twins: int) -> list[str]:
    """`n` distinct names, of which the last `twins` each look like an earlier one."""
    base = d.people(rng, n - twins)
    out = list(base)
    for i in range(twins):
        out.append(lookalike(rng, base[i % len(base)], out))
    return out


def systems(rng: random.Random, n: int) -> list[str]:
    """`n` distinct system names such as "Ledger Portal"; many share one word."""
    return rng.sample([f"{a} {b}" for a in SYSTEM_WORDS[0] for b in SYSTEM_WORDS[1]], n)


def chatter(rng: random.Random, n: int) -> list[str]:
    """`n` sentences that answer nothing, from the meeting and office pools."""
    pool = list(CHATTER) + list(d.FILLER)
    return rng.sample(pool, min(n, len(pool)))


def frame(document: str, question: str) -> str:
    """The prompt body: the document between tags, then the question."""
    return (
        "Read the document below and answer the question using only what it says.\n\n"
        f"<document>\n{document.strip()}\n</document>\n\nQuestion: {question}"
    )


def words(text: str) -> int:
    return len(text.split())


def is_name(text: str) -> bool:
    """True when the text is one full name: two or three words of letters, ≤ 40 chars."""
    return isinstance(text, str) and len(text) <= 40 and _NAME.fullmatch(text) is not None


def same_name(text: str, expected: str) -> bool:
    """Equal after collapsing whitespace and folding case; the text must be one name."""
    if not isinstance(text, str):
        return False
    got = " ".join(text.split())
    return is_name(got) and got.casefold() == " ".join(expected.split()).casefold()
