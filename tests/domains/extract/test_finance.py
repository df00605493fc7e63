"""Bank statement: signed amounts, the closing balance among distractors, pending items."""

from __future__ import annotations

import json
from typing import Any

from posttrain.domains.extract.finance import BankStatement
from posttrain.types import Task

DOMAIN = BankStatement()


def _with(task: Task, **changes: Any) -> tuple[float, bool]:
    v = DOMAIN.judge(task, json.dumps({**json.loads(task.answer), **changes}))
    return v.reward, v.passed


def test_money_out_must_be_negative() -> None:
    task = DOMAIN.generate(0, 5)
    rows = json.loads(task.answer)["transactions"]
    unsigned = [{**row, "amount": abs(row["amount"])} for row in rows]
    reward, passed = _with(task, transactions=unsigned)
    assert not passed and reward < 1.0


def test_the_available_balance_is_not_the_closing_balance() -> None:
    task = DOMAIN.generate(1, 5)
    assert "Available balance" in task.prompt[0].content
    assert not _with(task, closing_balance=task.meta["distractors"]["closing_balance"])[1]


def test_a_pending_payment_is_not_a_posted_transaction() -> None:
    task = DOMAIN.generate(0, 7)
    reward, passed = _with(task, transactions=task.meta["distractors"]["transactions"])
    assert not passed and reward > 0.5


def test_the_rows_add_up_to_the_closing_balance() -> None:
    gold = json.loads(DOMAIN.generate(2, 8).answer)
    total = gold["opening_balance"] + sum(row["amount"] for row in gold["transactions"])
    assert abs(total - gold["closing_balance"]) < 0.005
