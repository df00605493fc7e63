"""The support desk: agent loads, plan-capped priorities, and the triage order."""

from __future__ import annotations

import random

from posttrain.domains.agents import tickets
from posttrain.domains.agents.db import Database


def _db() -> Database:
    return Database(tickets.build(random.Random(3), 4))


def test_assigning_moves_load_between_agents() -> None:
    db = _db()
    ticket = db.rows("tickets")[0]
    crew = [a for a in db.rows("agents") if a["team"] == ticket["team"]]
    tickets.assign_ticket(db, {"ticket_id": ticket["id"], "agent_id": crew[0]["id"]})
    tickets.assign_ticket(db, {"ticket_id": ticket["id"], "agent_id": crew[1]["id"]})
    assert db.get("agents", crew[0]["id"])["open_tickets"] == crew[0]["open_tickets"]
    assert db.get("agents", crew[1]["id"])["open_tickets"] == crew[1]["open_tickets"] + 1


def test_priority_is_capped_by_the_customers_plan() -> None:
    db = _db()
    ticket = db.rows("tickets")[0]
    for plan, highest in (("free", "normal"), ("pro", "high"), ("enterprise", "urgent")):
        db.tables["customers"][ticket["customer_id"]]["plan"] = plan
        allowed = [p for p in tickets.PRIORITIES if tickets.violation(db, "set_priority", {"ticket_id": ticket["id"], "priority": p}) is None]  # fmt: skip
        assert allowed[-1] == highest


def test_triage_assigns_to_the_least_loaded_agent_lowest_id_first() -> None:
    db = _db()
    scenario = tickets.triage_task(random.Random(4), 7, db)
    ids = [w.arguments["ticket_id"] for w in scenario.writes]
    assert ids == sorted(ids) and len(ids) == 3
    gold = Database(scenario.tables or {})
    for write in scenario.writes:
        team = gold.get("tickets", write.arguments["ticket_id"])["team"]
        free = [
            a
            for a in gold.rows("agents")
            if a["team"] == team and a["open_tickets"] < a["max_open"]
        ]
        assert (
            write.arguments["agent_id"]
            == min(free, key=lambda a: (a["open_tickets"], a["id"]))["id"]
        )
        tickets.assign_ticket(gold, write.arguments)
