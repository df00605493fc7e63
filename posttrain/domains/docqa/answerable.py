"""`docqa/answerable-v1` (validity): answer from a status report, or say it cannot be.

A project status report names each project's lead, deputy and target date; the
question asks who leads one project. About a quarter of the questions cannot be
answered from the document (few enough that always replying `unanswerable` passes
about 25% of tasks): the project is not in it (a project with a similar code name is),
or the report says its lead has not been named yet (its deputy is). The answer is the
lead's full name, or exactly `unanswerable`.

The verdict first checks the decision (answer vs. `unanswerable`, the `decision`
component), then the value (`value`); reward is 1 only when both hold. Difficulty
adds projects, deputies whose names look like the leads', leads handed over
("handed over by A to B": B leads), and from difficulty 3 the not-yet-named case.
`measure` is the number of projects in the report, fixed by difficulty.

Not guaranteed: `unanswerable` folds case and surrounding whitespace only, so
"Unanswerable." or "not stated" score 0; names fold case and whitespace only.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.docqa import corpus as c
from posttrain.domains.extract import documents as d
from posttrain.types import Task, Verdict

UNANSWERABLE = "unanswerable"
SUFFIXES = ("II", "Next", "Lite", "Labs", "Prime")
# 3 : 0.5 : 0.5, so a quarter of the tasks are unanswerable and the constant reply
# `unanswerable` cannot beat reading the report.
KINDS, KIND_WEIGHTS = ("answerable", "absent", "unnamed"), (6, 1, 1)


class AnswerableDomain(AnswerDomain):
    """Who leads one project, or `unanswerable` when the report does not say."""

    id = "docqa/answerable-v1"
    axes = Axes("document", "none", "single", "validity")
    instructions = (
        "If the document states the answer, reply with the person's full name only, "
        "exactly as written (for example: Grace Novak). If it does not, reply with the "
        "single word unanswerable."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 2 + difficulty
        projects = rng.sample(c.PROJECTS, n + 1)
        absent, projects = projects[-1], projects[:n]
        leads = d.people(rng, n)
        taken = list(leads)
        deputies = []
        for i in range(n):
            twin = i < difficulty // 2
            deputy = c.lookalike(rng, leads[i], taken) if twin else d.people(rng, 1)[0]
            while deputy in taken:
                deputy = d.person(rng)
            taken.append(deputy)
            deputies.append(deputy)
        kind = rng.choices(KINDS, weights=KIND_WEIGHTS)[0]
        if kind == "unnamed" and difficulty < 3:
            kind = "absent"
        # The asked project is projects[0]; for "absent" the report holds a look-alike.
        asked = projects[0]
        if kind == "absent":
            asked = f"{projects[0]} {rng.choice(SUFFIXES)}" if difficulty >= 2 else absent
        handed = difficulty >= 5
        former = d.person(rng)
        while former in taken:
            former = d.person(rng)
        lines = [f"Quarterly project status report — {d.date_text(d.day(rng), 'uk')}"]
        lines.append(c.chatter(rng, 1)[0])
        for i in rng.sample(range(n), n):
            due = d.date_text(d.day(rng, 2025, 2026), "us")
            if i == 0 and kind == "unnamed":
                who = f"A lead for Project {projects[i]} has not been named yet; {deputies[i]} is deputy"
            elif i == 1 and handed:
                who = (
                    f"Project {projects[i]} was led by {former} until March, then handed "
                    f"over to {leads[i]}; {deputies[i]} is deputy"
                )
            else:
                who = f"Project {projects[i]} is led by {leads[i]}, with {deputies[i]} as deputy"
            lines.append(f"{who}. Target completion: {due}.")
        lines.append(c.chatter(rng, 2)[1])
        question = f"Who is the lead of Project {asked}?"
        answer = leads[0] if kind == "answerable" else UNANSWERABLE
        meta = {
            "kind": kind,
            "deputy": deputies[0],
            "other_lead": leads[1],
            "lead0": leads[0],
        }
        return Problem(c.frame("\n\n".join(lines), question), answer, meta, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        said_no = text.strip().casefold() == UNANSWERABLE
        should_no = task.answer == UNANSWERABLE
        decision = said_no == should_no
        value = decision and (said_no or c.same_name(text, task.answer))
        components = {"decision": float(decision), "value": float(value)}
        if not decision:
            why = "the document does not state it" if should_no else "the document states it"
            return verdict(False, "the right decision", components=components, why=why)
        return verdict(value, "the lead's full name", components=components, why="wrong name")

    def wrong(self, task: Task) -> list[str]:
        meta = task.meta
        if task.answer == UNANSWERABLE:
            return [meta["lead0"], meta["deputy"], meta["other_lead"], "not stated"]
        return [UNANSWERABLE, meta["deputy"], meta["other_lead"], meta["lead0"].split()[0]]


DOMAINS = (AnswerableDomain(),)
