"""`docqa/handbook-owner-v1` (retrieval, multi-turn): find one fact in a long handbook.

An operations handbook has numbered sections, one per internal system, each naming
the system's current owner and its escalation contact; the prompt shows only the
question. The model reads the handbook through two tools: `search(query)` (the
numbers and titles of sections whose text contains every word of the query) and
`read_section(section)` (one section's text). The question asks who currently owns
one system; the reference searches for the system, reads its section and answers.

Distractors grow with difficulty: more sections; from difficulty 3 a "history"
section says who owned the asked system before (a stale owner, found by the same
search); escalation contacts whose names look like the owners'. The verdict needs
the name (case and whitespace folded) and a successful `read_section` of the
system's own section (`used_tool`). `measure` is the number of sections.

Not guaranteed: `used_tool` checks that the right section was read, not that the
answer came from it; search is plain word containment, no ranking beyond order.
"""

from __future__ import annotations

import random
import re
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.docqa import corpus as c
from posttrain.domains.extract import documents as d
from posttrain.domains.tools_api.framework import (
    FinalAnswerApiDomain,
    Plan,
    Scenario,
    ToolError,
    ToolSpec,
    Trace,
    call,
    graded,
)
from posttrain.types import Task, Verdict

SEARCH = ToolSpec(
    "search",
    "Numbers and titles of the sections containing every word of the query (at most 8).",
    (("query", "string", "words to look for"),),
)
READ_SECTION = ToolSpec(
    "read_section",
    "The full text of one numbered section.",
    (("section", "integer", "its number"),),
)
_WORD = re.compile(r"[\w']+")


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


class HandbookOwnerDomain(FinalAnswerApiDomain):
    """Who owns one system, according to a handbook read through search and read tools."""

    id = "docqa/handbook-owner-v1"
    axes = Axes("document", "retrieval", "multi", "exact")
    tools = (SEARCH, READ_SECTION)

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        n = 3 + 2 * difficulty  # system sections; a history section joins from d=3
        names = c.systems(rng, n)
        owners = d.people(rng, n)
        contacts = [
            c.lookalike(rng, o, owners) if i < difficulty else d.person(rng)
            for i, o in enumerate(owners)
        ]
        sections = []
        for i, system in enumerate(names):
            filler = " ".join(c.chatter(rng, 2))
            sections.append(
                {
                    "title": f"{system} operations",
                    "text": (
                        f"{system} is currently owned by {owners[i]}. Escalations outside "
                        f"business hours go to {contacts[i]}. {filler}"
                    ),
                }
            )
        target = rng.randrange(n)
        stale = None
        if difficulty >= 3:
            stale = d.person(rng)
            while stale in owners or stale in contacts:
                stale = d.person(rng)
            history = {
                "title": "History of system ownership",
                "text": (
                    f"Before the 2024 reorganisation, {names[target]} was owned by {stale}. "
                    "Ownership of every system is reviewed each year."
                ),
            }
            sections.insert(rng.randrange(len(sections) + 1), history)
        numbered = {str(k): s for k, s in enumerate(sections, 1)}
        home = next(k for k, s in numbered.items() if s["title"] == f"{names[target]} operations")
        world = {"sections": numbered}
        prompt = (
            f"The operations handbook has {len(numbered)} numbered sections, which you can "
            "only read through the tools below. According to the handbook, who currently "
            f"owns {names[target]}?\nWhen you know, reply with the person's full name only "
            "(for example: Grace Novak)."
        )
        answer = owners[target]
        plan: Plan = [
            [call("search", query=names[target])],
            [call("read_section", section=int(home))],
            answer,
        ]
        meta = {
            "home": int(home),
            "system": names[target],
            "contact": contacts[target],
            "stale": stale,
            "other": owners[(target + 1) % n],
        }
        return Scenario(prompt, answer, world, plan, len(numbered), meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        sections = world["sections"]
        if name == "read_section":
            key = str(int(arguments["section"]))
            if key not in sections:
                raise ToolError(f"no section {key}; sections are 1..{len(sections)}")
            section = sections[key]
            return f"Section {key}. {section['title']}\n{section['text']}"
        wanted = _words(arguments["query"])
        if not wanted:
            raise ToolError("the query has no words")
        hits = [
            {"section": int(k), "title": s["title"]}
            for k, s in sections.items()
            if wanted <= _words(s["title"] + " " + s["text"])
        ]
        return {"results": hits[:8]}

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        read = {record.arguments.get("section") for record in trace.ok("read_section")}
        used = task.meta["home"] in read
        text = final.strip()
        return graded(
            c.is_name(text),
            c.same_name(text, task.answer),
            used,
            "the system's current owner",
            "the system's own section read",
        )

    def wrong(self, task: Task) -> list[Plan]:
        meta, plan = task.meta, task.meta["plan"]
        out = [
            [*plan[:-1], meta["contact"]],
            [task.answer],
            [*plan[:-1], meta["other"]],
            [plan[0], task.answer],
        ]
        if meta["stale"]:
            out.insert(0, [*plan[:-1], meta["stale"]])
        return out


DOMAINS = (HandbookOwnerDomain(),)
