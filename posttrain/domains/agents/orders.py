"""The simulated shop: a product catalogue with stock, customers' orders, and two task kinds.

Tools: `search_products`, `get_product`, `list_orders`, `get_order`, `place_order`,
`cancel_order`, `refund_order` (plus the shared `wait`). The written policy (`POLICY`)
caps an order at 5 units per product, allows cancelling only pending orders, and
refunds only orders delivered in the last 30 days and not refunded before.

Task kinds (templates):
- `purchase_task` — order a few products named exactly (the catalogue holds look-alike
  names, so the skus must be looked up); reply with the order total.
- `refund_task` — refund the orders the user names; some are not eligible (not
  delivered, delivered too long ago, already refunded) and must be refused; reply
  with the refunded ids or NONE.

Not guaranteed: product names are built from short fixed word lists.
"""

from __future__ import annotations

import random
from typing import Any

from posttrain.domains.agents.db import Database, Tables, ToolError, ToolSpec
from posttrain.domains.agents.episode_tasks import (
    Scenario,
    Service,
    call,
    days_before,
    dollars,
    people,
)
from posttrain.types import ToolCall

MAX_UNITS = 5
REFUND_DAYS = 30
GOODS = ("Desk Lamp", "Water Bottle", "Backpack", "Headphones", "Coffee Grinder", "Yoga Mat",
         "Phone Stand", "Notebook", "Kettle", "Office Chair", "Monitor Arm", "Table Fan")  # fmt: skip
VARIANTS = ("", " Pro", " Mini", " XL")

POLICY = f"""- At most {MAX_UNITS} units of one product per order.
- Only orders with status "pending" may be cancelled.
- A refund is allowed only for an order with status "delivered", delivered on or after {days_before(REFUND_DAYS)} (30 days), that has not been refunded; refuse anything else.
- Never change data the user did not ask to change."""


def _order_view(o: dict[str, Any]) -> dict[str, Any]:
    return {"order_id": o["id"], "customer": o["customer"], "status": o["status"], "items": o["items"],
            "total": o["total_cents"] / 100, "delivered_on": o["delivered_on"], "refunded": o["refunded"]}  # fmt: skip


def search_products(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    query = str(args["query"]).casefold().strip()
    found = [p for p in db.rows("products") if query and query in p["name"].casefold()]
    return {"items": [{"sku": p["id"], "name": p["name"], "price": p["price_cents"] / 100, "stock": p["stock"]}
                      for p in found]}  # fmt: skip


def get_product(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    p = db.get("products", args["sku"])
    return {"sku": p["id"], "name": p["name"], "price": p["price_cents"] / 100, "stock": p["stock"]}


def list_orders(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    name = str(args["customer"]).casefold().strip()
    return {
        "items": [_order_view(o) for o in db.rows("orders") if o["customer"].casefold() == name]
    }


def get_order(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return _order_view(db.get("orders", args["order_id"]))


def place_order(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    items = args["items"]
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise ToolError("items must be a non-empty list of {sku, quantity} objects")
    lines: dict[str, int] = {}
    for item in items:
        qty = item.get("quantity")
        if type(qty) is not int or qty < 1:
            raise ToolError("each quantity must be a positive integer")
        sku = item.get("sku")
        db.get("products", sku)
        lines[sku] = lines.get(sku, 0) + qty
    total = 0
    for sku in sorted(lines):
        product = db.get("products", sku)
        if product["stock"] < lines[sku]:
            raise ToolError(f"only {product['stock']} of {sku} in stock")
    for sku in sorted(lines):
        product = db.get("products", sku)
        product["stock"] -= lines[sku]
        total += product["price_cents"] * lines[sku]
        db.put("products", product)
    order_id = db.next_id("orders", "O", 2001)
    known = {o["customer"].casefold(): o["customer"] for o in db.rows("orders")}
    customer = known.get(str(args["customer"]).strip().casefold(), str(args["customer"]))
    db.put("orders", {"id": order_id, "customer": customer, "status": "pending",
                      "items": [{"sku": s, "quantity": lines[s]} for s in sorted(lines)], "total_cents": total,
                      "delivered_on": None, "refunded": False})  # fmt: skip
    return {"order_id": order_id, "total": total / 100, "status": "pending"}


def cancel_order(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    order = db.get("orders", args["order_id"])
    order["status"] = "cancelled"
    db.put("orders", order)
    return {"order_id": order["id"], "status": "cancelled"}


def refund_order(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    order = db.get("orders", args["order_id"])
    order["refunded"] = True
    db.put("orders", order)
    return {"order_id": order["id"], "refunded": order["total_cents"] / 100}


def violation(db: Database, name: str, args: dict[str, Any]) -> str | None:
    if name == "place_order":
        for item in args["items"]:
            if (
                isinstance(item, dict)
                and isinstance(item.get("quantity"), int)
                and item["quantity"] > MAX_UNITS
            ):
                return f"at most {MAX_UNITS} units of one product per order"
        return None
    order = db.tables.get("orders", {}).get(args["order_id"])
    if order is None:
        return None
    if name == "cancel_order" and order["status"] != "pending":
        return "only pending orders may be cancelled"
    if name == "refund_order":
        if order["status"] != "delivered" or order["refunded"]:
            return "only delivered orders not yet refunded may be refunded"
        if order["delivered_on"] < days_before(REFUND_DAYS):
            return "refunds only within 30 days of delivery"
    return None


_S = {"type": "string"}
_ITEMS = {"type": "array", "items": {"type": "object", "properties": {"sku": _S, "quantity": {"type": "integer"}},
                                     "required": ["sku", "quantity"]}}  # fmt: skip
TOOLS = (
    ToolSpec(
        "search_products",
        "Products whose name contains the query.",
        {"query": _S},
        ("query",),
        "list",
        search_products,
    ),  # fmt: skip
    ToolSpec(
        "get_product",
        "One product with price and stock.",
        {"sku": _S},
        ("sku",),
        "read",
        get_product,
    ),  # fmt: skip
    ToolSpec(
        "list_orders", "A customer's orders.", {"customer": _S}, ("customer",), "list", list_orders
    ),  # fmt: skip
    ToolSpec("get_order", "One order.", {"order_id": _S}, ("order_id",), "read", get_order),
    ToolSpec(
        "place_order",
        "Place an order for a customer (by full name).",
        {"customer": _S, "items": _ITEMS},
        ("customer", "items"),
        "write",
        place_order,
    ),  # fmt: skip
    ToolSpec(
        "cancel_order", "Cancel an order.", {"order_id": _S}, ("order_id",), "write", cancel_order
    ),  # fmt: skip
    ToolSpec(
        "refund_order",
        "Refund an order in full.",
        {"order_id": _S},
        ("order_id",),
        "write",
        refund_order,
    ),  # fmt: skip
)


def build(rng: random.Random, difficulty: int) -> Tables:
    """4 + d goods, each in 2..4 look-alike variants; 2 + d/2 orders per customer."""
    tables: Tables = {"products": {}, "orders": {}}
    n_variants = 2 + min(2, (difficulty - 1) // 4)
    sku = 101
    for good in rng.sample(GOODS, min(len(GOODS), 4 + difficulty)):
        for variant in VARIANTS[:n_variants]:
            tables["products"][f"P-{sku}"] = {"id": f"P-{sku}", "name": good + variant,
                                              "price_cents": rng.randint(5, 300) * 100 - rng.choice((0, 1, 5)),
                                              "stock": rng.randint(6, 40)}  # fmt: skip
            sku += 1
    skus = sorted(tables["products"])
    order_no = 1001
    for name in people(rng, 3 + difficulty // 2):
        for _ in range(2 + difficulty // 2):
            lines = sorted(rng.sample(skus, rng.randint(1, 3)))
            items: list[dict[str, Any]] = [{"sku": s, "quantity": rng.randint(1, 3)} for s in lines]
            total = sum(tables["products"][i["sku"]]["price_cents"] * i["quantity"] for i in items)
            status = rng.choice(("pending", "shipped", "delivered", "delivered"))
            delivered = days_before(rng.randint(1, 60)) if status == "delivered" else None
            tables["orders"][f"O-{order_no}"] = {"id": f"O-{order_no}", "customer": name, "status": status,
                                                 "items": items, "total_cents": total, "delivered_on": delivered,
                                                 "refunded": status == "delivered" and rng.random() < 0.2}  # fmt: skip
            order_no += 1
    return tables


def purchase_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    customer = rng.choice(db.rows("orders"))["customer"]
    products = db.rows("products")
    chosen = rng.sample(products, min(len(products), 1 + (difficulty - 1) // 3))
    reads: list[ToolCall] = []
    items: list[dict[str, Any]] = []
    naive_items: list[dict[str, Any]] = []
    asks: list[str] = []
    for product in chosen:
        qty = rng.randint(1, min(MAX_UNITS, product["stock"]))
        base = product["name"].removesuffix(" Pro").removesuffix(" Mini").removesuffix(" XL")
        if all(r.arguments["query"] != base for r in reads):
            reads.append(call("search_products", query=base))
        items.append({"sku": product["id"], "quantity": qty})
        look_alike = [
            p for p in products if p["name"].startswith(base) and p["id"] != product["id"]
        ]
        naive_items.append({"sku": rng.choice(look_alike)["id"] if look_alike else product["id"], "quantity": qty + 1})  # fmt: skip
        asks.append(f"{qty} x {product['name']}")
    write = call("place_order", customer=customer, items=sorted(items, key=lambda i: i["sku"]))
    total = place_order(db, write.arguments)["total"]
    cents = round(total * 100)
    return Scenario(
        f"Hi, this is {customer}. Please place one order for me with exactly these products: " + "; ".join(asks)
        + ". Then tell me the order total.",
        "the order total in dollars with two decimals and no $ sign (e.g. 1234.50)",
        reads, [write], dollars(cents), dollars(cents + chosen[0]["price_cents"]),
        [call("place_order", customer=customer, items=naive_items)],
        confirm="I will place the order you described. Shall I go ahead?", measure=len(chosen) + 1,
    )  # fmt: skip


def refund_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    customer = rng.choice(db.rows("orders"))["customer"]
    mine = [o for o in db.rows("orders") if o["customer"] == customer]
    picked = rng.sample(mine, min(len(mine), 1 + (difficulty - 1) // 3))
    asks, writes, naive, refunded = [], [], [], []
    for order in picked:
        if rng.random() < 0.5:  # make this one eligible; otherwise leave it to chance (mostly not)
            order.update(
                status="delivered",
                delivered_on=days_before(rng.randint(1, REFUND_DAYS)),
                refunded=False,
            )
        elif order["status"] == "delivered" and rng.random() < 0.5:
            order.update(delivered_on=days_before(rng.randint(REFUND_DAYS + 1, 90)))
        db.put("orders", order)
        asks.append(order["id"])
        naive.append(call("refund_order", order_id=order["id"]))
        if violation(db, "refund_order", {"order_id": order["id"]}) is None:
            writes.append(call("refund_order", order_id=order["id"]))
            refunded.append(order["id"])
    wrong = ", ".join(asks) if len(refunded) < len(asks) else "NONE"
    return Scenario(
        f"Hello, I'm {customer}. Please refund these orders of mine: {', '.join(asks)}.",
        "the ids of the orders you refunded, comma-separated in the order I listed them, or NONE if you refunded none",
        [call("list_orders", customer=customer)], writes, ", ".join(refunded) or "NONE", wrong, naive,
        confirm="I will refund the eligible orders. Shall I go ahead?", measure=1 + len(picked), tables=db.snapshot(),
    )  # fmt: skip


SHOP = Service("orders", "Acme Online Shop", POLICY, TOOLS, violation, build)
