"""The bank service: its tools, its policy checker and its three task kinds."""

from __future__ import annotations

import random

import pytest

from posttrain.domains.agents import bank
from posttrain.domains.agents.db import Database, ToolError
from posttrain.domains.agents.episode_tasks import days_before


def _db() -> Database:
    return Database(bank.build(random.Random(0), 4))


def _two_accounts(db: Database) -> tuple[dict, dict]:
    customer = db.rows("customers")[0]["id"]
    mine = [a for a in db.rows("accounts") if a["customer_id"] == customer]
    return mine[0], mine[1]


def test_a_transfer_moves_cents_and_refuses_overdrafts() -> None:
    db = _db()
    a, b = _two_accounts(db)
    bank.transfer(db, {"from_account_id": a["id"], "to_account_id": b["id"], "amount": 10.25})
    assert db.get("accounts", a["id"])["balance_cents"] == a["balance_cents"] - 1025
    assert db.get("accounts", b["id"])["balance_cents"] == b["balance_cents"] + 1025
    with pytest.raises(ToolError, match="insufficient funds"):
        bank.transfer(db, {"from_account_id": a["id"], "to_account_id": b["id"], "amount": 10**7})


def test_the_policy_forbids_big_and_cross_customer_transfers() -> None:
    db = _db()
    a, b = _two_accounts(db)
    other = next(x for x in db.rows("accounts") if x["customer_id"] != a["customer_id"])
    ok = {"from_account_id": a["id"], "to_account_id": b["id"], "amount": 2500}
    assert bank.violation(db, "transfer", ok) is None
    assert bank.violation(db, "transfer", {**ok, "amount": 2500.01}) is not None
    assert bank.violation(db, "transfer", {**ok, "to_account_id": other["id"]}) is not None


def test_the_policy_forbids_old_or_repeated_disputes() -> None:
    db = _db()
    tx = db.rows("transactions")[0]
    tx.update(date=days_before(10), disputed=False)
    db.put("transactions", tx)
    args = {"transaction_id": tx["id"], "reason": "fraud"}
    assert bank.violation(db, "dispute_transaction", args) is None
    bank.dispute_transaction(db, args)
    assert "already disputed" in str(bank.violation(db, "dispute_transaction", args))
    tx = db.get("transactions", tx["id"])
    tx.update(date=days_before(61), disputed=False)
    db.put("transactions", tx)
    assert bank.violation(db, "dispute_transaction", args) is not None


def test_the_spending_answer_is_the_sum_of_matching_charges() -> None:
    db = _db()
    scenario = bank.spending_task(random.Random(5), 4, db)
    assert scenario.writes == [] and scenario.reads[0].name == "find_customer"
    assert float(scenario.reply) >= 0 and scenario.reply != scenario.wrong_reply


def test_the_dispute_task_disputes_exactly_the_eligible_charges() -> None:
    for seed in range(10):
        db = Database(bank.build(random.Random(seed), 7))
        scenario = bank.dispute_task(random.Random(seed), 7, db)
        gold = Database(scenario.tables or {})
        for write in scenario.writes:
            assert bank.violation(gold, write.name, write.arguments) is None
        refused = [c for c in scenario.naive if c not in scenario.writes]
        assert all(bank.violation(gold, c.name, c.arguments) for c in refused)
