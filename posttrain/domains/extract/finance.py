"""Bank statements to JSON: `extract/bank-statement-v2`, a list of signed transactions.

The document is a statement with a running-balance table ("Money out" / "Money in"
columns, rows dated without the year); the record asks for the holder, the account's
last four digits, the period's end, the opening and closing balances, and every
posted transaction with its ISO date, description and signed amount (negative for
money out). See `record.py` for the prompt and the scoring. Difficulty adds rows
(3 → 12), then an available balance that differs from the closing one, a pending
card payment that is not a posted transaction, and longer date formats.

`measure` counts the values the document holds (gold values, transactions field by
field, plus distractors); it depends only on difficulty.

Not guaranteed: merchants come from a small pool; a statement never crosses a year
boundary, so rows can omit the year.
"""

from __future__ import annotations

import random

from posttrain.domains.extract import documents as d
from posttrain.domains.extract.record import Doc, ExtractDomain, Field

BANKS = ("First Harbor Bank", "Summit Credit Union", "Prairie National Bank", "Bayline Savings")
MERCHANTS = ("CARD PAYMENT TO CITY GROCERS", "CARD PAYMENT TO FUEL STOP 112", "DIRECT DEBIT METRO ENERGY",
             "TRANSFER TO SAVINGS", "CARD PAYMENT TO BOOK NOOK", "STANDING ORDER RENT",
             "CARD PAYMENT TO CAFE LUMEN", "DIRECT DEBIT FIBERNET", "ATM WITHDRAWAL")  # fmt: skip
CREDITS = ("SALARY ACME PAYROLL", "REFUND ONLINE STORE", "TRANSFER FROM J DOE", "INTEREST PAID")


class BankStatement(ExtractDomain):
    """A statement's posted transactions as signed amounts, with both balances."""

    id = "extract/bank-statement-v2"
    kind = "bank statement"
    fields = (
        Field("account_holder", "text", "the account holder's name"),
        Field("account_last4", "code", "the last four digits of the account number"),
        Field("period_end", "date", "the last day of the statement period"),
        Field("opening_balance", "number", "the balance at the start of the period"),
        Field("closing_balance", "number", "the balance at the end of the period"),
        Field("transactions", "list", "every posted transaction", ordered=True, items=(
            Field("date", "date", "the day it posted"),
            Field("description", "text", "the description as printed"),
            Field("amount", "number", "the amount, negative for money out, positive for money in"))),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        holder, bank = d.person(rng), rng.choice(BANKS)
        last4 = f"{rng.randint(0, 9999):04d}"
        first = d.day(rng, 2023, 2025).replace(day=1)
        month_end = d.shifted(first.replace(day=28), 4).replace(day=1)
        end = d.shifted(month_end, -1)
        style = rng.choice(d.date_styles(difficulty))
        opening = d.cents(rng, 200, 5000)
        n_rows = 2 + difficulty
        days = sorted(rng.randint(1, end.day) for _ in range(n_rows))
        balance, rows, table = opening, [], []
        for day_of_month in days:
            when = first.replace(day=day_of_month)
            if rng.random() < 0.25:
                text, amount = rng.choice(CREDITS), d.cents(rng, 20, 2500)
            else:
                text, amount = rng.choice(MERCHANTS), -d.cents(rng, 3, 400)
            balance = round(balance + amount, 2)
            rows.append({"date": d.iso(when), "description": text, "amount": amount})
            out, into = (f"{-amount:,.2f}", "") if amount < 0 else ("", f"{amount:,.2f}")
            table.append(f"{when.day:02d} {d.MONTHS[when.month - 1][:3]} | {text} | {out} | {into} | {balance:,.2f}")  # fmt: skip
        lines = [f"{bank} - Account statement", f"Account holder: {holder}",
                 f"Account number: **** **** {last4}",
                 f"Statement period: {d.date_text(first, style)} to {d.date_text(end, style)}", "",
                 f"Opening balance: ${opening:,.2f}", "",
                 "Date | Description | Money out | Money in | Balance", *table, "",
                 f"Closing balance: ${balance:,.2f}"]  # fmt: skip
        distractors: dict[str, object] = {"closing_balance": opening}
        pending = d.cents(rng, 5, 90)
        if difficulty >= 4:
            lines.append(f"Available balance: ${balance - pending:,.2f} (includes pending items)")
            distractors["closing_balance"] = round(balance - pending, 2)
        if difficulty >= 6:
            lines += ["", "Pending (not yet posted):",
                      f"{d.date_text(end, style)} | CARD PAYMENT TO CORNER DELI | {pending:.2f}"]  # fmt: skip
            distractors["transactions"] = [*rows, {"date": d.iso(end), "description": "CARD PAYMENT TO CORNER DELI", "amount": -pending}]  # fmt: skip
        lines += ["", *d.filler(rng, difficulty // 4)]
        gold = {"account_holder": holder, "account_last4": last4, "period_end": d.iso(end),
                "opening_balance": opening, "closing_balance": balance, "transactions": rows}  # fmt: skip
        measure = 5 + 3 * n_rows + (difficulty >= 4) + 3 * (difficulty >= 6)
        return Doc("\n".join(lines), gold, measure, distractors)


DOMAINS = (BankStatement(),)
