"""The simulated support desk: tickets, support agents, customers' plans, two task kinds.

Tools: `list_tickets`, `get_ticket`, `get_customer`, `list_agents`, `assign_ticket`,
`set_priority`, `close_ticket` (plus the shared `wait`). The written policy
(`POLICY`) assigns tickets only to an agent of the ticket's team who is below their
open-ticket limit, and ties the highest allowed priority to the customer's plan.

Task kinds (templates):
- `triage_task` — assign a team's unassigned open tickets, lowest id first, each to
  the team agent with the fewest open tickets (the loads change as you go); reply
  with the ticket=agent pairs.
- `priority_task` — set the priorities the user asks for; some exceed what the
  customer's plan allows and must be refused; reply with the changed ids or NONE.

Not guaranteed: subjects are drawn from a short fixed list and play no part in
the tasks.
"""

from __future__ import annotations

import random
from typing import Any

from posttrain.domains.agents.db import Database, Tables, ToolError, ToolSpec
from posttrain.domains.agents.episode_tasks import Scenario, Service, call, people

TEAMS = ("billing", "hardware", "network", "accounts")
PRIORITIES = ("low", "normal", "high", "urgent")
PLAN_CAP = {"free": "normal", "pro": "high", "enterprise": "urgent"}
SUBJECTS = ("Cannot log in", "Invoice is wrong", "Router keeps rebooting", "Refund request", "Slow VPN",
            "Laptop will not charge", "Password reset", "Duplicate charge", "Wi-Fi drops")  # fmt: skip

POLICY = """- Assign a ticket only if its status is "open", and only to an agent of the ticket's team whose open_tickets is below their max_open.
- The priority of a ticket may be at most "normal" for customers on the free plan, "high" on the pro plan, "urgent" on the enterprise plan; refuse anything higher.
- Never change data the user did not ask to change."""


def list_tickets(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    team, status = args["team"], args.get("status")
    rows = [t for t in db.rows("tickets") if t["team"] == team and status in (None, t["status"])]
    return {"items": rows}


def get_ticket(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return db.get("tickets", args["ticket_id"])


def get_customer(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return db.get("customers", args["customer_id"])


def list_agents(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return {"items": [a for a in db.rows("agents") if a["team"] == args["team"]]}


def assign_ticket(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    ticket, agent = db.get("tickets", args["ticket_id"]), db.get("agents", args["agent_id"])
    if ticket["assignee"] is not None:
        previous = db.get("agents", ticket["assignee"])
        previous["open_tickets"] -= 1
        db.put("agents", previous)
        agent = db.get("agents", args["agent_id"])
    ticket["assignee"] = agent["id"]
    agent["open_tickets"] += 1
    db.put("tickets", ticket)
    db.put("agents", agent)
    return {
        "ticket_id": ticket["id"],
        "assignee": agent["id"],
        "agent_open_tickets": agent["open_tickets"],
    }


def set_priority(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    ticket = db.get("tickets", args["ticket_id"])
    if args["priority"] not in PRIORITIES:
        raise ToolError(f"priority must be one of {', '.join(PRIORITIES)}")
    ticket["priority"] = args["priority"]
    db.put("tickets", ticket)
    return {"ticket_id": ticket["id"], "priority": ticket["priority"]}


def close_ticket(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    ticket = db.get("tickets", args["ticket_id"])
    ticket["status"] = "closed"
    db.put("tickets", ticket)
    return {"ticket_id": ticket["id"], "status": "closed"}


def violation(db: Database, name: str, args: dict[str, Any]) -> str | None:
    ticket = db.tables.get("tickets", {}).get(args["ticket_id"])
    if ticket is None:
        return None
    if name == "assign_ticket":
        agent = db.tables.get("agents", {}).get(args["agent_id"])
        if agent is None:
            return None
        if ticket["status"] != "open":
            return "only open tickets may be assigned"
        if agent["team"] != ticket["team"] or agent["open_tickets"] >= agent["max_open"]:
            return "the agent is not on the ticket's team or is at their limit"
    if name == "set_priority" and args["priority"] in PRIORITIES:
        plan = db.tables["customers"][ticket["customer_id"]]["plan"]
        if PRIORITIES.index(args["priority"]) > PRIORITIES.index(PLAN_CAP[plan]):
            return f"{args['priority']} is above what the {plan} plan allows"
    return None


_S = {"type": "string"}
TOOLS = (
    ToolSpec(
        "list_tickets",
        "A team's tickets, optionally only those with one status.",
        {
            "team": {"type": "string", "enum": list(TEAMS)},
            "status": {"type": "string", "enum": ["open", "closed"]},
        },
        ("team",),
        "list",
        list_tickets,
    ),  # fmt: skip
    ToolSpec("get_ticket", "One ticket.", {"ticket_id": _S}, ("ticket_id",), "read", get_ticket),
    ToolSpec(
        "get_customer",
        "One customer with their plan.",
        {"customer_id": _S},
        ("customer_id",),
        "read",
        get_customer,
    ),  # fmt: skip
    ToolSpec(
        "list_agents",
        "A team's support agents with their loads.",
        {"team": {"type": "string", "enum": list(TEAMS)}},
        ("team",),
        "list",
        list_agents,
    ),  # fmt: skip
    ToolSpec(
        "assign_ticket",
        "Assign a ticket to a support agent.",
        {"ticket_id": _S, "agent_id": _S},
        ("ticket_id", "agent_id"),
        "write",
        assign_ticket,
    ),  # fmt: skip
    ToolSpec(
        "set_priority",
        "Set a ticket's priority.",
        {"ticket_id": _S, "priority": {"type": "string", "enum": list(PRIORITIES)}},
        ("ticket_id", "priority"),
        "write",
        set_priority,
    ),  # fmt: skip
    ToolSpec(
        "close_ticket", "Close a ticket.", {"ticket_id": _S}, ("ticket_id",), "write", close_ticket
    ),
)


def build(rng: random.Random, difficulty: int) -> Tables:
    """4 + d customers, 3 + d/3 agents per team, 6 + 2d tickets."""
    customers = {f"U-{11 + i}": {"id": f"U-{11 + i}", "name": name, "plan": rng.choice(("free", "pro", "enterprise"))}
                 for i, name in enumerate(people(rng, 4 + difficulty))}  # fmt: skip
    agents: dict[str, dict[str, Any]] = {}
    tickets: dict[str, dict[str, Any]] = {}
    for team in TEAMS:
        for name in people(rng, 3 + difficulty // 3):
            agent_id = f"G-{21 + len(agents)}"
            limit = rng.randint(3, 6)
            agents[agent_id] = {"id": agent_id, "name": name, "team": team, "open_tickets": rng.randint(0, limit - 1),
                                "max_open": limit}  # fmt: skip
    for i in range(6 + 2 * difficulty):
        ticket_id = f"K-{301 + i}"
        tickets[ticket_id] = {"id": ticket_id, "customer_id": rng.choice(sorted(customers)), "team": rng.choice(TEAMS),
                              "subject": rng.choice(SUBJECTS), "status": rng.choice(("open", "open", "closed")),
                              "priority": rng.choice(PRIORITIES[:2]), "assignee": None}  # fmt: skip
    return {"customers": customers, "agents": agents, "tickets": tickets}


def triage_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    team = rng.choice(TEAMS)
    want = 1 + (difficulty - 1) // 3
    for ticket in db.rows("tickets"):  # the team gets exactly `want` unassigned open tickets
        if ticket["team"] == team and ticket["status"] == "open":
            ticket["team"] = rng.choice([t for t in TEAMS if t != team])
            db.put("tickets", ticket)
    for ticket in rng.sample(db.rows("tickets"), want):
        ticket.update(team=team, status="open", assignee=None)
        db.put("tickets", ticket)
    tables = db.snapshot()
    pairs, writes, naive = [], [], []
    crew = [a["id"] for a in db.rows("agents") if a["team"] == team]
    for ticket in [t for t in db.rows("tickets") if t["team"] == team and t["status"] == "open"]:
        agents = [db.get("agents", a) for a in crew]
        free = [a for a in agents if a["open_tickets"] < a["max_open"]]
        if not free:
            break
        agent = min(free, key=lambda a: (a["open_tickets"], a["id"]))
        args = {"ticket_id": ticket["id"], "agent_id": agent["id"]}
        assign_ticket(db, args)
        writes.append(call("assign_ticket", **args))
        naive.append(call("assign_ticket", ticket_id=ticket["id"], agent_id=crew[0] if agent["id"] != crew[0] else crew[-1]))  # fmt: skip
        pairs.append(f"{ticket['id']}={agent['id']}")
    return Scenario(
        f"Please triage the {team} queue: take its open tickets that have no assignee, lowest ticket id first, and assign "
        "each to the agent of that team with the fewest open tickets who is below their limit (ties: lowest agent id).",
        "the assignments as TICKET=AGENT pairs, comma-separated in the order you made them (e.g. K-301=G-22, K-305=G-21)",
        [call("list_tickets", team=team, status="open"), call("list_agents", team=team)], writes, ", ".join(pairs),
        ", ".join(f"{c.arguments['ticket_id']}={c.arguments['agent_id']}" for c in naive) or "NONE", naive,
        confirm="I will make the assignments worked out above. Shall I go ahead?", measure=2 + want, tables=tables,
    )  # fmt: skip


def priority_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    picked = rng.sample(db.rows("tickets"), 1 + (difficulty - 1) // 3)
    asks, reads, writes, naive, changed = [], [], [], [], []
    for ticket in picked:
        ticket["priority"] = "low"  # so that every request is a change
        db.put("tickets", ticket)
        cap = PRIORITIES.index(PLAN_CAP[db.get("customers", ticket["customer_id"])["plan"]])
        if cap < 3 and rng.random() < 0.5:  # a priority above the plan's cap: to be refused
            priority = PRIORITIES[rng.randint(cap + 1, 3)]
        else:
            priority = PRIORITIES[rng.randint(min(cap, 2), cap)]
        args = {"ticket_id": ticket["id"], "priority": priority}
        asks.append(f"{ticket['id']} to {priority}")
        reads += [
            call("get_ticket", ticket_id=ticket["id"]),
            call("get_customer", customer_id=ticket["customer_id"]),
        ]
        naive.append(call("set_priority", **args))
        if violation(db, "set_priority", args) is None:
            writes.append(call("set_priority", **args))
            changed.append(ticket["id"])
    wrong = ", ".join(t["id"] for t in picked) if len(changed) < len(picked) else "NONE"
    return Scenario(
        "Customers asked us to raise the priority of some tickets. Please set " + "; ".join(asks) + ".",
        "the ids of the tickets whose priority you changed, comma-separated in the order I listed them, or NONE",
        reads, writes, ", ".join(changed) or "NONE", wrong, naive,
        confirm="I will change the priorities that the policy allows. Shall I go ahead?", measure=3 * len(picked),
        tables=db.snapshot(),
    )  # fmt: skip


DESK = Service("tickets", "Helpwise Support Desk", POLICY, TOOLS, violation, build)
