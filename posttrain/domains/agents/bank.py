"""The simulated bank: customers, accounts and card transactions, and three task kinds.

Tools: `find_customer`, `list_accounts`, `get_account`, `list_transactions`,
`transfer`, `dispute_transaction`, `freeze_account` (plus the shared `wait`). Money is
kept in integer cents and shown in dollars. The written policy (`POLICY`) limits
transfers to one customer's own active accounts and $2,500.00 each, and disputes to
card charges of the last 60 days that are not already disputed.

Task kinds (templates):
- `transfer_task` — move money between the customer's accounts (some amounts are
  "half of my X balance", so the balance must be read first); reply with one balance.
- `dispute_task` — dispute the charges the user names; some break the policy (too
  old, already disputed) and must be refused; reply with the disputed ids or NONE.
- `spending_task` — a read-only question: the total card spending at one merchant
  since a date, across all accounts (lists may come back partial).

Not guaranteed: names and merchants come from short fixed lists, so the data is
varied in values and sizes more than in vocabulary.
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

LIMIT_CENTS = 250_000
DISPUTE_DAYS = 60
REASONS = ("fraud", "not_received", "duplicate", "wrong_amount")
MERCHANTS = ("Blue Bottle", "CityMart", "FlyAway Air", "GreenGrocer", "MovieMax", "PetPal",
             "QuickFuel", "ReadMore Books", "SoundWave", "TechHub")  # fmt: skip
KINDS = ("checking", "savings", "travel", "emergency", "credit")

POLICY = f"""- Transfers only between two active accounts of the same customer, at most $2,500.00 per transfer; refuse anything else.
- A card charge may be disputed only if it is dated on or after {days_before(DISPUTE_DAYS)} (60 days), is not already disputed, and its account is active.
- Never change data the user did not ask to change."""


def _money(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
        raise ToolError("amount must be a positive number of dollars")
    return round(value * 100)


def _account_view(a: dict[str, Any]) -> dict[str, Any]:
    return {"account_id": a["id"], "customer_id": a["customer_id"], "kind": a["kind"],
            "balance": a["balance_cents"] / 100, "status": a["status"]}  # fmt: skip


def _tx_view(t: dict[str, Any]) -> dict[str, Any]:
    return {"transaction_id": t["id"], "account_id": t["account_id"], "date": t["date"],
            "merchant": t["merchant"], "amount": t["amount_cents"] / 100, "type": t["type"],
            "disputed": t["disputed"]}  # fmt: skip


def find_customer(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    name = str(args["name"]).strip().casefold()
    for c in db.rows("customers"):
        if c["name"].casefold() == name:
            return {"customer_id": c["id"], "name": c["name"]}
    raise ToolError(f"no customer named {str(args['name'])[:40]!r}")


def list_accounts(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    db.get("customers", args["customer_id"])
    rows = db.rows("accounts", lambda a: a["customer_id"] == args["customer_id"])
    return {"items": [_account_view(a) for a in rows]}


def get_account(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return _account_view(db.get("accounts", args["account_id"]))


def list_transactions(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    db.get("accounts", args["account_id"])
    rows = db.rows("transactions", lambda t: t["account_id"] == args["account_id"])
    return {"items": [_tx_view(t) for t in rows]}


def transfer(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    source, target = (
        db.get("accounts", args["from_account_id"]),
        db.get("accounts", args["to_account_id"]),
    )
    cents = _money(args["amount"])
    if source["id"] == target["id"]:
        raise ToolError("the two accounts are the same")
    if source["balance_cents"] < cents:
        raise ToolError(f"insufficient funds in {source['id']}")
    source["balance_cents"] -= cents
    target["balance_cents"] += cents
    db.put("accounts", source)
    db.put("accounts", target)
    transfer_id = db.next_id("transfers", "X", 9001)
    db.put(
        "transfers", {"id": transfer_id, "from": source["id"], "to": target["id"], "cents": cents}
    )
    return {"transfer_id": transfer_id, "from_balance": source["balance_cents"] / 100,
            "to_balance": target["balance_cents"] / 100}  # fmt: skip


def dispute_transaction(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    tx = db.get("transactions", args["transaction_id"])
    if args["reason"] not in REASONS:
        raise ToolError(f"reason must be one of {', '.join(REASONS)}")
    tx["disputed"] = True
    db.put("transactions", tx)
    dispute_id = db.next_id("disputes", "D", 301)
    db.put("disputes", {"id": dispute_id, "transaction_id": tx["id"], "reason": args["reason"]})
    return {"dispute_id": dispute_id, "transaction_id": tx["id"], "status": "opened"}


def freeze_account(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    account = db.get("accounts", args["account_id"])
    account["status"] = "frozen"
    db.put("accounts", account)
    return {"account_id": account["id"], "status": "frozen"}


def violation(db: Database, name: str, args: dict[str, Any]) -> str | None:
    accounts = db.tables.get("accounts", {})
    if name == "transfer":
        source, target = accounts.get(args["from_account_id"]), accounts.get(args["to_account_id"])
        if source is None or target is None:
            return None
        if source["customer_id"] != target["customer_id"]:
            return "transfers only between one customer's own accounts"
        if "frozen" in (source["status"], target["status"]):
            return "transfers only between active accounts"
        if _money(args["amount"]) > LIMIT_CENTS:
            return "transfers are limited to $2,500.00"
    if name == "dispute_transaction":
        tx = db.tables.get("transactions", {}).get(args["transaction_id"])
        if tx is None:
            return None
        if tx["date"] < days_before(DISPUTE_DAYS) or tx["type"] != "card":
            return "only card charges of the last 60 days may be disputed"
        if tx["disputed"]:
            return "the charge is already disputed"
        if accounts[tx["account_id"]]["status"] != "active":
            return "the charge's account is not active"
    return None


_S, _N, _I = {"type": "string"}, {"type": "number"}, {"type": "integer"}
TOOLS = (
    ToolSpec(
        "find_customer",
        "Look a customer up by full name.",
        {"name": _S},
        ("name",),
        "read",
        find_customer,
    ),  # fmt: skip
    ToolSpec(
        "list_accounts",
        "List a customer's accounts with balances.",
        {"customer_id": _S},
        ("customer_id",),
        "list",
        list_accounts,
    ),  # fmt: skip
    ToolSpec(
        "get_account",
        "One account with its balance and status.",
        {"account_id": _S},
        ("account_id",),
        "read",
        get_account,
    ),  # fmt: skip
    ToolSpec(
        "list_transactions",
        "List an account's transactions.",
        {"account_id": _S},
        ("account_id",),
        "list",
        list_transactions,
    ),  # fmt: skip
    ToolSpec(
        "transfer",
        "Move an amount in dollars between two accounts.",
        {"from_account_id": _S, "to_account_id": _S, "amount": _N},
        ("from_account_id", "to_account_id", "amount"),
        "write",
        transfer,
    ),  # fmt: skip
    ToolSpec(
        "dispute_transaction",
        "Open a dispute on a card charge.",
        {"transaction_id": _S, "reason": {"type": "string", "enum": list(REASONS)}},
        ("transaction_id", "reason"),
        "write",
        dispute_transaction,
    ),  # fmt: skip
    ToolSpec(
        "freeze_account",
        "Freeze an account.",
        {"account_id": _S},
        ("account_id",),
        "write",
        freeze_account,
    ),  # fmt: skip
)


def build(rng: random.Random, difficulty: int) -> Tables:
    """Customers (3 + d), each with 2..5 accounts (a credit card from d=4); card charges on
    checking and credit."""
    tables: Tables = {"customers": {}, "accounts": {}, "transactions": {}}
    n_accounts = 2 + min(3, (difficulty - 1) // 3)
    account_no, tx_no = 1001, 5001
    for i, name in enumerate(people(rng, 3 + difficulty)):
        customer_id = f"C-{101 + i}"
        tables["customers"][customer_id] = {"id": customer_id, "name": name}
        extra = rng.sample(("travel", "emergency"), 2)
        for kind in ("checking", "savings", "credit", *extra)[:n_accounts]:
            account_id = f"A-{account_no}"
            account_no += 1
            balance = rng.randint(300, 4000) * 100 + rng.randint(0, 99)
            tables["accounts"][account_id] = {"id": account_id, "customer_id": customer_id, "kind": kind,
                                              "balance_cents": balance, "status": "active"}  # fmt: skip
            if kind not in ("checking", "credit"):
                continue
            for _ in range(3 + difficulty):
                tx_id = f"T-{tx_no}"
                tx_no += 1
                tables["transactions"][tx_id] = {
                    "id": tx_id, "account_id": account_id, "date": days_before(rng.randint(1, 120)),
                    "merchant": rng.choice(MERCHANTS), "amount_cents": rng.randint(300, 30000),
                    "type": "card", "disputed": rng.random() < 0.1}  # fmt: skip
    return tables


def _customer(rng: random.Random, db: Database) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    customer = rng.choice(db.rows("customers"))
    accounts = {a["kind"]: a for a in db.rows("accounts") if a["customer_id"] == customer["id"]}
    return customer, accounts


def transfer_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    customer, accounts = _customer(rng, db)
    steps, writes, naive, touched = [], [], [], []
    for _ in range(1 + (difficulty - 1) // 3):
        src, dst = rng.sample(sorted(accounts), 2)
        touched += [src, dst]
        balance = db.get("accounts", accounts[src]["id"])["balance_cents"]
        if difficulty >= 4 and rng.random() < 0.5:
            cents = min(balance // 2, LIMIT_CENTS)
            steps.append(f"move half of my {src} balance to my {dst} account")
        else:
            cents = min(rng.randint(2, 40) * 2500, balance // 2)
            steps.append(f"move ${dollars(cents)} from my {src} account to my {dst} account")
        args = {
            "from_account_id": accounts[src]["id"],
            "to_account_id": accounts[dst]["id"],
            "amount": cents / 100,
        }
        transfer(db, args)
        writes.append(call("transfer", **args))
        naive.append(call("transfer", **{**args, "from_account_id": args["to_account_id"], "to_account_id": args["from_account_id"]}))  # fmt: skip
    asked = rng.choice(sorted(set(touched)))
    final = db.get("accounts", accounts[asked]["id"])["balance_cents"]
    request = (f"Hi, I'm {customer['name']}. Please " + ", then ".join(steps)
               + f". Afterwards, tell me the balance of my {asked} account.")  # fmt: skip
    return Scenario(
        request, "that account's balance after the transfers, in dollars with two decimals and no $ sign (e.g. 1234.50)",
        [call("find_customer", name=customer["name"]), call("list_accounts", customer_id=customer["id"])],
        writes, dollars(final), dollars(final + 1000), naive,
        confirm="I will make the transfers you listed. Shall I go ahead?", measure=2 + len(writes),
    )  # fmt: skip


def dispute_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    customer, accounts = _customer(rng, db)
    checking = accounts["checking"]["id"]
    charges = [t for t in db.rows("transactions") if t["account_id"] == checking]
    picked = rng.sample(charges, 1 + (difficulty - 1) // 3)
    asks, writes, naive, disputed = [], [], [], []
    for tx in picked:
        reason = rng.choice(REASONS)
        if rng.random() < 0.5:  # make this one eligible; otherwise break one rule on purpose
            tx.update(date=days_before(rng.randint(1, DISPUTE_DAYS)), disputed=False)
        elif rng.random() < 0.5:
            tx.update(date=days_before(rng.randint(DISPUTE_DAYS + 1, 120)))
        else:
            tx.update(disputed=True)
        db.put("transactions", tx)
        asks.append(
            f"the ${dollars(tx['amount_cents'])} charge at {tx['merchant']} on {tx['date']} ({reason.replace('_', ' ')})"
        )
        args = {"transaction_id": tx["id"], "reason": reason}
        naive.append(call("dispute_transaction", **args))
        if violation(db, "dispute_transaction", args) is None:
            writes.append(call("dispute_transaction", **args))
            disputed.append(tx["id"])
    wrong = ", ".join(t["id"] for t in picked) if len(disputed) < len(picked) else "NONE"
    return Scenario(
        f"Hello, this is {customer['name']}. I want to dispute these charges on my checking account: " + "; ".join(asks) + ".",
        "the ids of the transactions you disputed, comma-separated in the order I listed them, or NONE if you disputed none",
        [call("find_customer", name=customer["name"]), call("list_accounts", customer_id=customer["id"]),
         call("list_transactions", account_id=checking)],
        writes, ", ".join(disputed) or "NONE", wrong, naive,
        confirm="I will open disputes on the eligible charges. Shall I go ahead?", measure=3 + len(picked),
        tables=db.snapshot(),
    )  # fmt: skip


def spending_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    customer, accounts = _customer(rng, db)
    since = days_before(rng.randint(20, 100))
    card_accounts = [a["id"] for a in accounts.values() if a["kind"] in ("checking", "credit")]
    charges = [t for t in db.rows("transactions") if t["account_id"] in card_accounts]
    merchant = rng.choice(charges)["merchant"]
    matching = [t for t in charges if t["merchant"] == merchant and t["date"] >= since]
    total = sum(t["amount_cents"] for t in matching)
    reads = [
        call("find_customer", name=customer["name"]),
        call("list_accounts", customer_id=customer["id"]),
    ]
    reads += [call("list_transactions", account_id=a) for a in sorted(card_accounts)]
    return Scenario(
        f"Hi, I'm {customer['name']}. How much have I spent in total at {merchant} since {since} (that day included), across all my accounts?",
        "the total in dollars with two decimals and no $ sign (e.g. 1234.50)",
        reads, [], dollars(total), dollars(total + (matching[0]["amount_cents"] if matching else 1000)),
        measure=float(len(reads)),
    )  # fmt: skip


BANK = Service("bank", "Northwind Bank", POLICY, TOOLS, violation, build)
