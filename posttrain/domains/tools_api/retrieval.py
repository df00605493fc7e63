"""Retrieval tasks: answer from a generated fact base or search index, never from memory.

- `tools/fact-lookup-v1` — report one to three fields of people in a fictional
  encyclopedia full of look-alike names (`lookup`, `search_names`); the answer is
  the values in order, separated by "; ". `measure` = records + fields asked.
- `tools/chained-lookup-v1` — start at a person and follow link fields
  (employer → headquarters → mayor ...) record by record, then report a field of
  the last record. `measure` = hops.
- `tools/counterfactual-lookup-v1` — the capitals of real countries as an archive of
  an alternate world records them; the remembered real capital is wrong (the
  verdict's `memorized` component flags it). `measure` = countries asked + records.
- `tools/search-set-v1` — list every company that opened a site in a city in a year,
  found by paging through keyword search over generated news snippets with
  near-miss distractors ("closed", other year, other city); set-match with F1 as
  partial credit. `measure` = documents.

Each needs its lookups or searches to have been made (`used_tool`).

Not guaranteed: `used_tool` checks that the needed records were fetched, not that
the answer was read off them; exact answers fold case and whitespace only.
"""

from __future__ import annotations

import random
import re
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.tools_api import services
from posttrain.domains.tools_api.framework import (
    ApiDomain,
    FinalAnswerApiDomain,
    Plan,
    Scenario,
    ToolSpec,
    Trace,
    call,
    graded,
    same_text,
)
from posttrain.types import Task, Verdict

LOOKUP = ToolSpec(
    "lookup", "The record with this exact name.", (("name", "string", "a record's name"),)
)
SEARCH_NAMES = ToolSpec(
    "search_names", "Record names containing this text.", (("text", "string", "part of a name"),)
)
FIELD_WORDS = {
    "born": "birth year",
    "role": "profession",
    "employer": "employer",
    "hometown": "hometown",
}


def serve_encyclopedia(world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
    if name == "lookup":
        return services.lookup(world, arguments["name"])
    return {"names": services.find_names(world, arguments["text"])}


def looked_up(trace: Trace) -> list[str]:
    """The names of the records the rollout fetched successfully."""
    return [c.result["name"] for c in trace.ok("lookup")]


def split_values(final: str, count: int) -> list[str] | None:
    """The `count` values of a "v1; v2; v3" answer, or None when it is not one."""
    values = [v.strip() for v in final.strip().split(";")]
    if len(values) != count or any(not v or len(v) > 80 or "\n" in v for v in values):
        return None
    return values


def _records_of(world: dict[str, Any], kind: str) -> list[str]:
    return [n for n, r in world["records"].items() if r["type"] == kind]


def _other_value(
    rng: random.Random, world: dict[str, Any], kind: str, field: str, avoid: str
) -> str:
    """The `field` of another record of `kind` whose value differs from `avoid`."""
    values = [str(world["records"][n][field]) for n in _records_of(world, kind)]
    options = [v for v in values if v.casefold() != avoid.casefold()]
    return rng.choice(options) if options else avoid + "x"


class FactLookupDomain(FinalAnswerApiDomain):
    """Report fields of people in a fictional encyclopedia with look-alike names."""

    id = "tools/fact-lookup-v1"
    axes = Axes("text", "retrieval", "multi", "exact")
    tools = (LOOKUP, SEARCH_NAMES)

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        asked = 1 + (difficulty - 1) // 4
        world = services.fact_world(rng, 5 + 3 * difficulty, 1 + difficulty // 2)
        people = _records_of(world, "person")
        targets = rng.sample(people, asked)
        fields = [rng.choice(list(FIELD_WORDS)) for _ in targets]
        values = [str(world["records"][p][f]) for p, f in zip(targets, fields, strict=True)]
        questions = "\n".join(
            f"{i}. the {FIELD_WORDS[f]} of {p}"
            for i, (p, f) in enumerate(zip(targets, fields, strict=True), 1)
        )
        prompt = (
            "Use the encyclopedia tools (the people are fictional; names must match "
            f"exactly, and some look alike) to find:\n{questions}\n"
            f"Reply with the {asked} value(s) only, in this order, separated by '; ' "
            "(for example: 1984; weaver)."
        )
        answer = "; ".join(values)
        plan: Plan = [[call("lookup", name=p) for p in dict.fromkeys(targets)], answer]
        meta = {"targets": targets, "fields": fields, "values": values}
        return Scenario(prompt, answer, world, plan, len(world["records"]) + asked, meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        return serve_encyclopedia(world, name, arguments)

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        expected = task.meta["values"]
        got = split_values(final, len(expected))
        correct = got is not None and all(map(same_text, got, expected))
        used = set(task.meta["targets"]) <= set(looked_up(trace))
        return graded(
            got is not None, correct, used, "the asked values in order", "every person looked up"
        )

    def wrong(self, task: Task) -> list[Plan]:
        rng = random.Random(task.seed)
        world, calls = task.meta["world"], task.meta["plan"][0]
        values, fields = list(task.meta["values"]), task.meta["fields"]
        swapped = [_other_value(rng, world, "person", fields[0], values[0]), *values[1:]]
        wrong_field = "role" if fields[0] != "role" else "born"
        stale = [str(world["records"][task.meta["targets"][0]][wrong_field]), *values[1:]]
        return [
            [calls, "; ".join(swapped)],
            [task.answer],
            [calls, "; ".join(stale)],
            [calls[:1], values[0] if len(values) > 1 else f"{values[0]}; {values[0]}"],
        ]


class ChainedLookupDomain(FinalAnswerApiDomain):
    """Follow link fields from record to record, then report a field of the last one."""

    id = "tools/chained-lookup-v1"
    axes = Axes("text", "retrieval", "multi", "exact")
    tools = (LOOKUP, SEARCH_NAMES)

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        hops = 1 + (difficulty + 1) // 2
        world = services.fact_world(rng, 8 + 2 * difficulty, difficulty // 3)
        records = world["records"]
        chain = [rng.choice(_records_of(world, "person"))]
        links = []
        for _ in range(hops):
            field, _kind = rng.choice(services.LINKS[records[chain[-1]]["type"]])
            links.append(field)
            chain.append(records[chain[-1]][field])
        last = rng.choice(services.SCALARS[records[chain[-1]]["type"]])
        answer = str(records[chain[-1]][last])
        steps = " → ".join(links)
        prompt = (
            f"In the fictional encyclopedia, start at the record of {chain[0]}, follow the "
            f"fields {steps} (each names the next record to look up), and report the "
            f"field `{last}` of the last record.\nReply with that value only."
        )
        plan: Plan = [[call("lookup", name=n)] for n in chain] + [answer]
        meta = {"chain": chain, "links": links, "last": last}
        return Scenario(prompt, answer, world, plan, hops, meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        return serve_encyclopedia(world, name, arguments)

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        text = final.strip()
        format_ok = 0 < len(text) <= 80 and "\n" not in text
        used = set(task.meta["chain"]) <= set(looked_up(trace))
        return graded(
            format_ok,
            same_text(text, task.answer),
            used,
            "the field at the end of the chain",
            "every record on the chain looked up",
        )

    def wrong(self, task: Task) -> list[Plan]:
        rng = random.Random(task.seed)
        world, plan, chain = task.meta["world"], task.meta["plan"], task.meta["chain"]
        kind = world["records"][chain[-1]]["type"]
        other = _other_value(rng, world, kind, task.meta["last"], task.answer)
        early = world["records"][chain[-2]]
        stale = next(
            (str(v) for k, v in early.items() if k != "type" and str(v) != task.answer), "none"
        )
        return [
            [*plan[:-1], other],
            [task.answer],
            [*plan[:-2], stale],
            [*plan[:-2], chain[-1]],
        ]


# Real countries and capitals: the archive gives each a fictional capital instead.
REAL_CAPITALS = (
    ("France", "Paris"),
    ("Japan", "Tokyo"),
    ("Kenya", "Nairobi"),
    ("Peru", "Lima"),
    ("Canada", "Ottawa"),
    ("Egypt", "Cairo"),
    ("Norway", "Oslo"),
    ("Chile", "Santiago"),
    ("India", "New Delhi"),
    ("Spain", "Madrid"),
    ("Italy", "Rome"),
    ("Ghana", "Accra"),
    ("Poland", "Warsaw"),
    ("Greece", "Athens"),
    ("Mexico", "Mexico City"),
    ("Cuba", "Havana"),
    ("Turkey", "Ankara"),
    ("Vietnam", "Hanoi"),
    ("Sweden", "Stockholm"),
    ("Brazil", "Brasilia"),
    ("Austria", "Vienna"),
    ("Portugal", "Lisbon"),
    ("Ireland", "Dublin"),
    ("Morocco", "Rabat"),
)


class CounterfactualLookupDomain(FinalAnswerApiDomain):
    """Capitals of real countries as an alternate-world archive records them."""

    id = "tools/counterfactual-lookup-v1"
    axes = Axes("text", "retrieval", "multi", "exact")
    tools = (LOOKUP,)

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        asked = 1 + (difficulty - 1) // 3
        namer = services.Namer(rng)
        chosen = rng.sample(REAL_CAPITALS, asked + 2 * difficulty)
        records = {
            c: {"type": "country", "capital": namer.word(rng.choice((2, 3)))} for c, _ in chosen
        }
        targets = [c for c, _ in chosen[:asked]]
        values = [records[c]["capital"] for c in targets]
        prompt = (
            "The archive tool describes an alternate world in which many capitals differ "
            "from ours. Answer from the archive, not from what you know: according to "
            f"the archive, what is the capital of each of: {', '.join(targets)}?\n"
            f"Reply with the {asked} capital(s) only, in this order, separated by '; '."
        )
        answer = "; ".join(values)
        plan: Plan = [[call("lookup", name=c) for c in targets], answer]
        meta = {"targets": targets, "values": values, "real": [r for _, r in chosen[:asked]]}
        return Scenario(prompt, answer, {"records": records}, plan, asked + len(records), meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        return services.lookup(world, arguments["name"])

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        expected, real = task.meta["values"], task.meta["real"]
        got = split_values(final, len(expected))
        correct = got is not None and all(map(same_text, got, expected))
        used = set(task.meta["targets"]) <= set(looked_up(trace))
        verdict = graded(
            got is not None,
            correct,
            used,
            "the archive's capitals in order",
            "every country looked up",
        )
        memorized = got is not None and any(map(same_text, got, real))
        verdict.components["memorized"] = float(memorized)
        if memorized:
            verdict.reason = "Wrong: a capital was answered from memory, not from the archive."
        return verdict

    def wrong(self, task: Task) -> list[Plan]:
        calls, values = task.meta["plan"][0], task.meta["values"]
        records = task.meta["world"]["records"]
        others = [r["capital"] for c, r in records.items() if c not in task.meta["targets"]]
        return [
            [calls, "; ".join(task.meta["real"])],
            [task.answer],
            [calls, "; ".join([others[0], *values[1:]])],
            [calls[:1], "; ".join(values[:1] * (len(values) + 1))],
        ]


_FACILITIES = ("workshop", "warehouse", "foundry", "office", "depot", "lab")
_NAME_LIST = re.compile(r"[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)*")


class SearchSetDomain(FinalAnswerApiDomain):
    """List every company a set of news snippets says opened a site in a city in a year."""

    id = "tools/search-set-v1"
    axes = Axes("text", "retrieval", "multi", "set_match")
    tools = (
        ToolSpec(
            "search",
            f"Keyword search over news snippets; {services.PAGE_SIZE} results a page.",
            (("query", "string", "keywords"), ("page", "integer", "page number, from 1")),
        ),
    )

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        namer = services.Namer(rng)
        cities = [namer.word(2) for _ in range(3)]
        city, year = cities[0], rng.randint(2041, 2049)
        gold_n, noise = 1 + difficulty // 3, 3 + 3 * difficulty
        companies = [namer.company() for _ in range(gold_n + noise)]
        gold, others = companies[:gold_n], companies[gold_n:]
        facts = [(c, "opened", city, year) for c in gold]
        closed = others[0]
        facts.append((closed, "closed", city, year))
        for company in others[1:]:
            if rng.random() < 0.5:
                facts.append((company, "opened", city, year + rng.choice((-2, -1, 1, 2))))
            else:
                facts.append((company, "opened", rng.choice(cities[1:]), year))
        rng.shuffle(facts)
        docs = [
            {
                "id": f"doc{i}",
                "text": f"{c} {verb} a {rng.choice(_FACILITIES)} in {where} in {when}.",
            }
            for i, (c, verb, where, when) in enumerate(facts)
        ]
        world = {"docs": docs}
        query = f"opened {city} {year}"
        pages = services.search_docs(world, query, 1)["pages"]
        plan: Plan = [
            [call("search", query=query, page=p) for p in range(1, pages + 1)],
            ", ".join(gold),
        ]
        prompt = (
            f"Using the news search tool, find every company that opened a site in {city} "
            f"in {year} (the companies are fictional; read all result pages).\n"
            "Reply with the company names only, separated by commas, in any order."
        )
        meta = {"gold": gold, "closed": closed, "others": others[1:]}
        return Scenario(prompt, ", ".join(gold), world, plan, len(docs), meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        return services.search_docs(world, arguments["query"], int(arguments["page"]))

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        items = [x.strip() for x in final.strip().split(",")]
        format_ok = len(items) <= 30 and all(_NAME_LIST.fullmatch(x) for x in items)
        got = {" ".join(x.split()).casefold() for x in items}
        gold = {g.casefold() for g in task.meta["gold"]}
        hits = len(got & gold)
        f1 = 2 * hits / (len(got) + len(gold)) if format_ok else 0.0
        used = bool(trace.ok("search"))
        passed = format_ok and used and got == gold
        reward = 1.0 if passed else (min(f1, 0.99) if used else 0.0)
        components = {"format": float(format_ok), "f1": f1, "used_tool": float(used)}
        if passed:
            reason = "Correct: exactly the companies that opened a site there, found by search."
        elif not format_ok:
            reason = "The final text is not a comma-separated list of company names."
        elif not used:
            reason = "No search was made; the answer cannot come from the snippets."
        else:
            reason = f"Wrong: the list differs from the companies that opened a site (F1 {f1:.2f})."
        return Verdict(reward, passed, reason, components)

    def wrong(self, task: Task) -> list[Plan]:
        calls, gold, others = task.meta["plan"][0], task.meta["gold"], task.meta["others"]
        return [
            [calls, ", ".join([*gold[1:], others[0]])],
            [calls, ", ".join(others[:2])],
            [task.answer],
            [calls, ", ".join([*gold, task.meta["closed"]])],
        ]


DOMAINS: tuple[ApiDomain, ...] = (
    FactLookupDomain(),
    ChainedLookupDomain(),
    CounterfactualLookupDomain(),
    SearchSetDomain(),
)
