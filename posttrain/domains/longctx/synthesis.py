"""Synthesis families: combine facts spread across a long document.

- `longctx/aggregation-v1` — shipment reports scattered across chapters ("In week 12,
  the North depot shipped 41 crates."), with look-alike depots (Northeast) and other
  verbs (received); the answer is the total shipped by one depot (2 reports at d1 to
  6 at d10), read as a number ("1,234" is accepted).
- `longctx/contradictions-v1` — site staff counts, some restated consistently and
  some (1 at d1 to 4 at d10) restated later with a different value; the answer is a
  JSON list of the contradicted site names, scored by set F1.
- `longctx/event-order-v1` — dated events placed out of order; the answer is a JSON
  list of the ids of 3 (d1) to 6 (d10) named events in chronological order. The exact
  order passes; a permutation of the right ids earns half the share of pairs it
  orders correctly.

Not guaranteed: values are small integers and dates are in the Gregorian calendar
between 1850 and 1990; the "later chapter" of a contradiction is later in the
document, not always in another chapter at short lengths.
"""

from __future__ import annotations

import datetime
import itertools
import random

from posttrain.domains.answer_domain import verdict
from posttrain.domains.base import Axes
from posttrain.domains.longctx.framework import Case, DocumentDomain, depths, json_list
from posttrain.domains.longctx.haystack import length_scale
from posttrain.types import Task, Verdict
from posttrain.verify import normalize_item, set_f1, strict_number

_DEPOTS = (
    ("North", "Northeast"), ("South", "Southwest"), ("East", "Eastgate"), ("West", "Westbrook"),
    ("Central", "Centralia"), ("Harbor", "Harborside"), ("Upland", "Uplands"),
)  # fmt: skip
_SITES = (
    "Ashford", "Belmont", "Carrow", "Dunmore", "Elmstead", "Fenwick", "Glenrock", "Hartwell",
    "Ivybridge", "Kelso", "Lowther", "Marden", "Northam", "Oxley", "Penrith", "Redruth",
    "Selby", "Thirsk", "Ulverston", "Wexcombe", "Yeovil", "Brora", "Cawdor", "Dornoch",
)  # fmt: skip
_EVENTS = (
    "bridge opening", "river charter", "guild hall founding", "first railway run",
    "lower town flood", "hill farm census", "ferry launch", "granary fire", "mayoral election",
    "clock tower completion", "tin mine closure", "surveyor's visit", "canal frost",
    "chapel roof rebuilding", "telegraph arrival", "school founding",
)  # fmt: skip
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_FIRST_DAY = datetime.date(1850, 1, 1).toordinal()


class AggregationDomain(DocumentDomain):
    """The total shipped by one depot, summed over reports across the document."""

    base_id = "longctx/aggregation-v1"
    axes = Axes("document", "none", "single", "numeric")

    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        pair = rng.choice(_DEPOTS)
        depot, alike = pair if rng.random() < 0.5 else pair[::-1]
        others = [p[0] for p in _DEPOTS if p != pair]
        reports = 2 + (difficulty - 1) // 2
        decoys = 2 + length_scale(tokens)

        def shipped(who: str, amount: int) -> str:
            return f"In week {rng.randint(1, 52)}, the {who} depot shipped {amount} crates."

        amounts = [rng.randint(10, 99) for _ in range(reports)]
        evidence = [shipped(depot, a) for a in amounts]
        alike_amount, received = rng.randint(10, 99), rng.randint(10, 99)
        sentences = evidence + [
            shipped(alike, alike_amount),
            f"In week {rng.randint(1, 52)}, the {depot} depot received {received} crates.",
        ]
        sentences += [shipped(rng.choice(others), rng.randint(10, 99)) for _ in range(decoys)]
        facts = list(zip(depths(rng, len(sentences)), sentences, strict=True))
        question = (
            f"What is the total number of crates shipped by the {depot} depot, over all reports "
            "in the document? Answer with the integer only."
        )
        meta = {"amounts": amounts, "decoy_amounts": [alike_amount, received], "depot": depot}
        return Case(facts, question, str(sum(amounts)), evidence, meta)

    def score(self, task: Task, text: str) -> Verdict:
        got = strict_number(text)
        return verdict(got == float(task.answer), f"the total {task.answer}", why=f"got {text[:20]!r}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        total, amounts = int(task.answer), task.meta["amounts"]
        alike, received = task.meta["decoy_amounts"]
        return [str(total + 1), str(total - amounts[-1]), str(total + alike), str(total + received)]


class ContradictionsDomain(DocumentDomain):
    """The sites whose staff count is restated later with a different value."""

    base_id = "longctx/contradictions-v1"
    axes = Axes("document", "none", "single", "set_match")
    max_answer_chars = 300

    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        contradicted = 1 + (difficulty - 1) // 3
        consistent = 1 + length_scale(tokens) // 3
        single = 1 + length_scale(tokens) // 2
        sites = rng.sample(_SITES, contradicted + consistent + single)
        facts: list[tuple[float, str]] = []
        evidence: list[str] = []
        for i, site in enumerate(sites):
            count = rng.randint(12, 480)
            first = f"Site {site} has a staff count of {count}."
            early, late = rng.uniform(0.02, 0.5), rng.uniform(0.55, 0.98)
            facts.append((early, first))
            if i < contradicted:
                delta = rng.randint(1, 40)
                changed = (
                    count - delta if count - delta >= 1 and rng.random() < 0.5 else count + delta
                )
                restated = f"The staff count at Site {site} is {changed}."
                facts.append((late, restated))
                evidence += [first, restated]
            elif i < contradicted + consistent:
                facts.append((late, f"The staff count at Site {site} is {count}."))
        question = (
            "Some sites are given two different staff counts in the document. Which sites? "
            'Answer with a JSON list of the site names in any order, for example ["Alpha", '
            '"Beta"], and nothing else.'
        )
        gold = sites[:contradicted]
        meta = {"sites": gold, "consistent": sites[contradicted : contradicted + consistent]}
        return Case(facts, question, _json_strings(gold), evidence, meta)

    def score(self, task: Task, text: str) -> Verdict:
        got = json_list(text, str)
        if got is None:
            return Verdict(0.0, False, "Wrong format: not a JSON list of strings.", {"format": 0.0, "f1": 0.0})  # fmt: skip
        gold = task.meta["sites"]
        f1 = set_f1(got, gold)
        exact = {normalize_item(s) for s in got} == {normalize_item(s) for s in gold}
        return verdict(exact, f"the {len(gold)} contradicted site(s)",
                       components={"format": 1.0, "f1": f1}, reward=f1, why=f"set F1 {f1:.2f}")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        gold, consistent = task.meta["sites"], task.meta["consistent"]
        out = [_json_strings(gold + consistent[:1]), _json_strings(consistent), "[]"]
        return out + ([_json_strings(gold[:-1])] if len(gold) > 1 else [])


def _json_strings(values: list[str]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


def _date_text(ordinal: int) -> str:
    day = datetime.date.fromordinal(ordinal)
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


class EventOrderDomain(DocumentDomain):
    """Named events' ids in chronological order, from dates scattered out of order."""

    base_id = "longctx/event-order-v1"
    axes = Axes("document", "none", "single", "exact")
    max_answer_chars = 200

    def case(self, rng: random.Random, difficulty: int, tokens: int) -> Case:
        k = 3 + (difficulty - 1) // 3
        decoys = 1 + length_scale(tokens)
        ids = [f"EV-{n}" for n in rng.sample(range(100, 999), k + decoys)]
        # Later difficulties squeeze the dates together, down to two years.
        window = 365 * max(2, 60 - 6 * difficulty)
        start = _FIRST_DAY + rng.randint(0, 140 * 365 - window)
        days = rng.sample(range(start, start + window), k + decoys)
        sentences = [
            f"Record {i}: the {rng.choice(_EVENTS)}, on {_date_text(day)}."
            for i, day in zip(ids, days, strict=True)
        ]
        facts = list(zip(depths(rng, len(sentences)), sentences, strict=True))
        named = ids[:k]
        chronological = [i for _, i in sorted(zip(days[:k], named, strict=True))]
        asked = named if named != chronological else named[::-1]
        question = (
            f"Order these records from earliest to latest date: {', '.join(asked)}. Answer "
            'with a JSON list of the record ids, for example ["EV-000", "EV-999"], and nothing else.'
        )
        meta = {"asked": asked}
        return Case(facts, question, _json_strings(chronological), sentences[:k], meta)

    def score(self, task: Task, text: str) -> Verdict:
        got = json_list(text, str)
        if got is None:
            return Verdict(0.0, False, "Wrong format: not a JSON list of strings.", {"format": 0.0, "order": 0.0})  # fmt: skip
        gold = json_list(task.answer, str) or []
        got = [g.strip() for g in got]
        if sorted(got) != sorted(gold):
            return verdict(False, f"the {len(gold)} asked record ids", components={"format": 1.0, "order": 0.0}, why="not the asked ids")  # fmt: skip
        rank = {g: i for i, g in enumerate(got)}
        pairs = list(itertools.combinations(gold, 2))
        right = sum(rank[a] < rank[b] for a, b in pairs) / len(pairs)
        return verdict(got == gold, "the asked ids in chronological order",
                       components={"format": 1.0, "order": right},
                       reward=None if got == gold else 0.5 * right,
                       why=f"{right:.0%} of pairs in order")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        gold = json_list(task.answer, str) or []
        swapped = [gold[1], gold[0], *gold[2:]]
        return [_json_strings(gold[::-1]), _json_strings(swapped), _json_strings(gold[:-1])]


DOMAINS: tuple[DocumentDomain, ...] = (
    AggregationDomain(),
    ContradictionsDomain(),
    EventOrderDomain(),
)
