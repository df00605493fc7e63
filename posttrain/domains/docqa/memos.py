"""Span and set questions over memos and meeting notes.

- `docqa/approver-v1` (exact) — a capital-requests memo lists requests by project and
  year, each requested by one person and approved or declined by another; the question
  asks who approved one request. Difficulty adds requests, requesters whose names look
  like the approver's, the same project in another year, and approvals that were
  withdrawn and re-issued by someone else (the re-issuer is the answer).
- `docqa/open-actions-v1` (set_match) — meeting notes with attendees and action items,
  each open or done; the question asks for everyone who owns an open item. Difficulty
  adds items, done items, and items reassigned from one person to another (the new
  owner owns it). Reward is the F1 of the name sets; passing needs the exact set.

`measure` is the number of requests or action items, fixed by difficulty.

Not guaranteed: names compare after folding case and whitespace only, so a name with
a typo fails; a set answer with any item that is not a name-like string scores 0.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.docqa import corpus as c
from posttrain.domains.extract import documents as d
from posttrain.types import Task, Verdict
from posttrain.verify.sets import parse_items, set_f1, set_match

PURPOSES = (
    "replacement laptops", "a warehouse racking upgrade", "a new loading ramp",
    "security cameras", "an electric delivery van", "solar panels for the depot",
    "a conference-room refit", "backup generators", "a forklift", "server hardware",
)  # fmt: skip


class ApproverDomain(AnswerDomain):
    """Who approved one request in a capital-requests memo."""

    id = "docqa/approver-v1"
    axes = Axes("document", "none", "single", "exact")
    instructions = (
        "Reply with the person's full name only, exactly as the document writes it "
        "(for example: Grace Novak)."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 2 + difficulty
        names = d.people(rng, 2 * n + 1)
        approvers, requesters, superseded = names[:n], names[n : 2 * n], names[2 * n]
        # Requesters whose names look like the approvers next to them.
        for i in range(min(n, difficulty // 2)):
            requesters[i] = c.lookalike(rng, approvers[i], names + requesters)
        projects = rng.sample(c.PROJECTS, n)
        years = [rng.choice((2023, 2024, 2025)) for _ in range(n)]
        if difficulty >= 6:  # the asked project also appears in another year
            projects[1], years[1] = projects[0], (2023 if years[0] != 2023 else 2024)
        styles = d.money_styles(difficulty)
        withdrawn = difficulty >= 4
        lines = [
            f"MEMO — Capital requests review, {d.date_text(d.day(rng), 'us')}",
            c.chatter(rng, 1)[0],
        ]
        order = rng.sample(range(n), n)
        for i in order:
            amount = d.cents(rng, 2_000, 90_000)
            head = (
                f"{projects[i]} ({years[i]}): {requesters[i]} requested "
                f"{d.money_text(amount, rng.choice(styles))} for {rng.choice(PURPOSES)}."
            )
            if i == 0 and withdrawn:
                tail = (
                    f" It was first approved by {superseded}; that approval was withdrawn "
                    f"after the budget review and re-issued by {approvers[0]}."
                )
            elif i != 0 and rng.random() < 0.3:
                tail = f" The request was declined by {approvers[i]}."
            else:
                tail = f" The request was approved by {approvers[i]}."
            lines.append(head + tail)
        lines.append(c.chatter(rng, 2)[1])
        question = (
            f"Who approved the {years[0]} request for {projects[0]}? If an approval was "
            "withdrawn and re-issued, give the person whose approval stands."
        )
        meta = {
            "requester": requesters[0],
            "others": approvers[1:],
            "superseded": superseded if withdrawn else None,
        }
        return Problem(c.frame("\n\n".join(lines), question), approvers[0], meta, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        ok = c.same_name(text, task.answer)
        return verdict(ok, "the approver's full name", why=f"got {text.strip()[:40]!r}")

    def wrong(self, task: Task) -> list[str]:
        meta = task.meta
        first = task.answer.split()[0]
        out = [meta["requester"], meta["others"][0], first, f"{task.answer} (approver)"]
        if meta["superseded"]:
            out.insert(0, meta["superseded"])
        return out


class OpenActionsDomain(AnswerDomain):
    """Everyone who owns an open action item in a set of meeting notes."""

    id = "docqa/open-actions-v1"
    axes = Axes("document", "none", "single", "set_match")
    instructions = (
        "Reply with the full names only, separated by commas, in any order "
        "(for example: Grace Novak, Luis Moreno)."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 3 + difficulty
        people = c.cast(rng, 3 + (n + 1) // 2, twins=min(3, difficulty // 3))
        idle, active = people[-1], people[:-1]  # idle owns only a done item
        tasks = rng.sample(c.TASKS, n)
        owners = [active[i % len(active)] for i in range(n)]
        rng.shuffle(owners)
        done = [False] * n
        for i in rng.sample(range(n), n // 3):
            done[i] = True
        done[0] = done[1] = False
        owners[1] = next(p for p in active if p != owners[0])
        owners[n - 1], done[n - 1] = idle, True
        reassigned: list[str | None] = [None] * n
        if difficulty >= 4:
            for i in rng.sample(range(n), 1 + difficulty // 4):
                reassigned[i] = rng.choice([p for p in people if p != owners[i]])
        gold = sorted(dict.fromkeys(owners[i] for i in range(n) if not done[i]))
        date = d.day(rng)
        lines = [
            f"Meeting notes — operations sync, {d.date_text(date, 'uk')}",
            "Attendees: " + ", ".join(people) + ".",
            *c.chatter(rng, 2),
            "Action items:",
        ]
        for i in range(n):
            due = d.date_text(d.shifted(date, rng.randint(3, 40)), "iso")
            status = "done" if done[i] else "open"
            if reassigned[i] is not None:
                line = (
                    f"- {reassigned[i]} to {tasks[i]} by {due} (reassigned to "
                    f"{owners[i]}, who now owns it). Status: {status}."
                )
            else:
                line = f"- {owners[i]} to {tasks[i]} by {due}. Status: {status}."
            lines.append(line)
        lines.append(c.chatter(rng, 3)[2])
        question = (
            "Which people currently own at least one action item whose status is open? "
            "List every such person."
        )
        moved = [p for p in reassigned if p is not None and p not in gold]
        meta = {"gold": gold, "idle": [idle], "moved": moved}
        return Problem(c.frame("\n".join(lines), question), ", ".join(gold), meta, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        items = parse_items(text)
        gold: list[str] = task.meta["gold"]
        if not items or len(items) > 2 * len(gold) + 5 or not all(map(c.is_name, items)):
            return verdict(False, "a comma-separated list of full names", why="not that format")
        score = set_f1(items, gold)
        return verdict(
            set_match(items, gold),
            "exactly the owners of open items",
            components={"f1": score},
            reward=score,
            why=f"set F1 {score:.2f}",
        )

    def wrong(self, task: Task) -> list[str]:
        gold: list[str] = task.meta["gold"]
        extra = task.meta["moved"][0] if task.meta["moved"] else task.meta["idle"][0]
        return [
            ", ".join(gold[1:]),
            ", ".join([*gold, task.meta["idle"][0]]),
            ", ".join([*gold[:-1], extra]),
            task.meta["idle"][0],
        ]


DOMAINS = (ApproverDomain(), OpenActionsDomain())
