"""The shop service: orders change stock, and refunds follow the 30-day policy."""

from __future__ import annotations

import random

import pytest

from posttrain.domains.agents import orders
from posttrain.domains.agents.db import Database, ToolError
from posttrain.domains.agents.episode_tasks import days_before


def _db() -> Database:
    return Database(orders.build(random.Random(1), 5))


def test_placing_an_order_takes_stock_and_totals_the_lines() -> None:
    db = _db()
    product = db.rows("products")[0]
    result = orders.place_order(
        db, {"customer": "Someone", "items": [{"sku": product["id"], "quantity": 2}]}
    )
    assert result["total"] == 2 * product["price_cents"] / 100
    assert db.get("products", product["id"])["stock"] == product["stock"] - 2
    with pytest.raises(ToolError, match="in stock"):
        orders.place_order(
            db, {"customer": "Someone", "items": [{"sku": product["id"], "quantity": 999}]}
        )


def test_item_order_does_not_change_the_stored_order() -> None:
    one, two = _db(), _db()
    a, b = one.rows("products")[:2]
    items = [{"sku": a["id"], "quantity": 1}, {"sku": b["id"], "quantity": 2}]
    orders.place_order(one, {"customer": "X", "items": items})
    orders.place_order(two, {"customer": "X", "items": items[::-1]})
    assert one.state_hash() == two.state_hash()


def test_refunds_only_for_recent_delivered_unrefunded_orders() -> None:
    db = _db()
    order = db.rows("orders")[0]
    order.update(status="delivered", delivered_on=days_before(5), refunded=False)
    db.put("orders", order)
    args = {"order_id": order["id"]}
    assert orders.violation(db, "refund_order", args) is None
    orders.refund_order(db, args)
    assert orders.violation(db, "refund_order", args) is not None
    order = db.get("orders", order["id"])
    order.update(refunded=False, delivered_on=days_before(31))
    db.put("orders", order)
    assert orders.violation(db, "refund_order", args) is not None


def test_only_pending_orders_may_be_cancelled() -> None:
    db = _db()
    order = db.rows("orders")[0]
    for status, allowed in (("pending", True), ("shipped", False)):
        order["status"] = status
        db.put("orders", order)
        assert (orders.violation(db, "cancel_order", {"order_id": order["id"]}) is None) is allowed
