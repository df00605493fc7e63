"""Commerce documents to JSON: `extract/invoice-v2`, `extract/receipt-v2`,
`extract/shipping-notice-v2`.

Each domain writes one document and asks for its record (see `record.py` for the
prompt and the scoring). What difficulty adds, per domain:

- invoice: more line items (1 → 6), then a PO number, tax, shipping, a discount and a
  note about a previous invoice (distractors for the number, date and total), longer
  date formats and currency codes;
- receipt: more lines (2 → 10), then quantity lines ("3 @ 0.99"), a cash tendered /
  change pair, a return-by date and loyalty savings;
- shipping notice: the order date and order number, a return address, weights in
  grams instead of kilograms, package counts in words and an earlier shipment's
  tracking number.

`measure` counts the values the document holds: gold values (list items field by
field) plus distractors; it depends only on difficulty.

Not guaranteed: products, stores and carriers come from small fixed pools; tracking
numbers look like each carrier's but are not check-digit valid.
"""

from __future__ import annotations

import random

from posttrain.domains.extract import documents as d
from posttrain.domains.extract.record import Doc, ExtractDomain, Field

PRODUCTS = (
    ("Steel hinge 40 mm", 2.0, 9.0), ("Printer paper, A4 ream", 4.0, 8.0),
    ("Label roll 500 ct", 6.0, 15.0), ("Oak shelf bracket", 3.0, 12.0),
    ("USB-C cable 2 m", 5.0, 18.0), ("Safety gloves (pair)", 2.0, 7.0),
    ("Toner cartridge TN-630", 40.0, 95.0), ("Packing tape 48 mm", 1.5, 4.0),
    ("Desk lamp LED", 18.0, 60.0), ("Consulting hour", 80.0, 180.0),
    ("Whiteboard marker set", 5.0, 14.0), ("Ergonomic keyboard", 35.0, 120.0),
)  # fmt: skip
GROCERIES = (
    "ORG BANANAS", "WHOLE MILK 1GAL", "SOURDOUGH LOAF", "CHEDDAR BLOCK", "BROWN EGGS 12CT",
    "OLIVE OIL 500ML", "BASMATI RICE 2LB", "GREEK YOGURT", "COFFEE BEANS", "PASTA PENNE",
    "TOMATO SAUCE", "SPINACH BAG", "GRANOLA BAR 6PK", "SPARKLING WATER", "DARK CHOC BAR",
)  # fmt: skip
STORES = ("Greenleaf Market", "Corner Pantry", "FreshWay Grocers", "Harvest Basket", "Urban Larder")  # fmt: skip
CARRIERS = ("UPS", "FedEx", "USPS", "DHL")
NUMBER_WORDS = ("one", "two", "three", "four", "five", "six")


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    return [" | ".join(row) for row in rows]


class Invoice(ExtractDomain):
    """An invoice with line items; the total sits among subtotal, tax and shipping lines."""

    id = "extract/invoice-v2"
    kind = "invoice"
    fields = (
        Field("vendor", "text", "the company that issued the invoice"),
        Field("invoice_number", "code", "the invoice number exactly as written"),
        Field("invoice_date", "date", "the date the invoice was issued"),
        Field("due_date", "date", "the date payment is due"),
        Field("bill_to", "text", "the name of the company billed"),
        Field("line_items", "list", "one object per billed line", ordered=True, items=(
            Field("description", "text", "the line's description"),
            Field("quantity", "integer", "the quantity"),
            Field("unit_price", "number", "the price of one unit"),
            Field("amount", "number", "the line's amount"))),
        Field("total", "number", "the final amount due, after tax, shipping and discounts"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        vendor, customer = d.companies(rng, 2)
        home, away = d.addresses(rng, 2)
        issued = d.day(rng)
        due = d.shifted(issued, rng.choice((14, 30, 45)))
        style = rng.choice(d.date_styles(difficulty))
        money = rng.choice(d.money_styles(difficulty))
        number = f"INV-{issued.year}-{rng.randint(100, 9999):04d}"
        po = f"PO-{rng.randint(1000, 99999)}"
        rows: list[tuple[str, int, float, float]] = []
        for name, low, high in rng.sample(PRODUCTS, 1 + difficulty // 2):
            qty, price = rng.randint(1, 12), d.cents(rng, low, high)
            rows.append((name, qty, price, round(qty * price, 2)))
        items = [
            {"description": n, "quantity": q, "unit_price": p, "amount": a} for n, q, p, a in rows
        ]
        subtotal = round(sum(row[3] for row in rows), 2)
        rate = rng.choice((5.0, 6.25, 7.5, 8.25)) if difficulty >= 3 else 0.0
        tax = round(subtotal * rate / 100, 2)
        shipping = d.cents(rng, 8, 40) if difficulty >= 5 else 0.0
        discount = round(subtotal * 0.05, 2) if difficulty >= 7 else 0.0
        total = round(subtotal + tax + shipping - discount, 2)
        lines = [vendor, *home.lines(), f"Phone: {d.phone_text(d.phone(rng), 'dashes')}", "",
                 "INVOICE", f"Invoice number: {number}"]  # fmt: skip
        distractors: dict[str, object] = {"invoice_date": d.iso(due)}
        if difficulty >= 2:
            lines.append(f"PO number: {po}")
            distractors = {"invoice_number": po, **distractors}
        lines += [f"Invoice date: {d.date_text(issued, style)}",
                  f"Payment due: {d.date_text(due, style)}", "", "Bill to:", customer,
                  *away.lines(), "", *_table([("Description", "Qty", "Unit price", "Amount")])]  # fmt: skip
        lines += _table(
            [(n, str(q), d.money_text(p, money), d.money_text(a, money)) for n, q, p, a in rows]
        )
        lines += ["", f"Subtotal: {d.money_text(subtotal, money)}"]
        if tax:
            lines.append(f"Sales tax ({rate:g}%): {d.money_text(tax, money)}")
            distractors = {"total": subtotal, **distractors}
        if shipping:
            lines.append(f"Shipping: {d.money_text(shipping, money)}")
        if discount:
            lines.append(f"Early-payment discount (5%): -{d.money_text(discount, money)}")
        lines.append(f"Total due: {d.money_text(total, money)}")
        if difficulty >= 8:
            old = d.shifted(issued, -rng.randint(20, 60))
            lines += ["", f"Note: invoice INV-{old.year}-{rng.randint(100, 9999):04d} of "
                      f"{d.date_text(old, style)} for {d.money_text(d.cents(rng, 100, 900), money)} "
                      "has been paid in full. Thank you."]  # fmt: skip
        lines += ["", *d.filler(rng, difficulty // 3)]
        gold = {"vendor": vendor, "invoice_number": number, "invoice_date": d.iso(issued),
                "due_date": d.iso(due), "bill_to": customer, "line_items": items, "total": total}  # fmt: skip
        extras = sum((difficulty >= 2, tax > 0, shipping > 0, discount > 0, difficulty >= 8))
        return Doc("\n".join(lines), gold, 6 + 4 * len(items) + extras, distractors)


class Receipt(ExtractDomain):
    """A till receipt: items with line prices, tax, total, and how it was paid."""

    id = "extract/receipt-v2"
    kind = "store receipt"
    fields = (
        Field("store", "text", "the store's name"),
        Field("date", "date", "the date of the purchase"),
        Field("time", "time", "the time of the purchase"),
        Field("items", "list", "one object per purchased line", ordered=True, items=(
            Field("name", "text", "the item as printed"),
            Field("price", "number", "the line's total price (quantity × unit price)"))),
        Field("tax", "number", "the tax charged"),
        Field("total", "number", "the total charged"),
        Field("payment", "choice", "how the purchase was paid", choices=("cash", "card")),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        store, place = rng.choice(STORES), d.address(rng)
        when = d.day(rng)
        hour, minute = rng.randint(8, 21), rng.randint(0, 59)
        style = rng.choice(d.date_styles(difficulty))
        items: list[dict[str, object]] = []
        prices: list[float] = []
        lines_out: list[str] = []
        for name in rng.sample(GROCERIES, 2 + (difficulty - 1) * 8 // 9):
            unit = d.cents(rng, 0.5, 12)
            qty = rng.randint(2, 4) if difficulty >= 5 and rng.random() < 0.4 else 1
            price = round(unit * qty, 2)
            items.append({"name": name, "price": price})
            prices.append(price)
            if qty > 1:
                lines_out += [name, f"  {qty} @ {unit:.2f}{price:>14.2f}"]
            else:
                lines_out.append(f"{name:<20}{price:>8.2f}")
        subtotal = round(sum(prices), 2)
        tax = round(subtotal * 0.07, 2)
        total = round(subtotal + tax, 2)
        payment = rng.choice(("cash", "card")) if difficulty >= 3 else "card"
        head = [store.upper(), place.street, f"{place.city}, {place.state}",
                f"{d.date_text(when, style)}  {d.time_text(hour, minute, rng.choice(d.time_styles(difficulty)))}"]  # fmt: skip
        if difficulty >= 4:
            head.append(f"Reg 0{rng.randint(1, 9)}  Trans {rng.randint(1000, 9999)}  Cashier: {rng.choice(d.FIRST_NAMES)}")  # fmt: skip
        body = [*head, "-" * 28, *lines_out, "-" * 28, f"{'SUBTOTAL':<20}{subtotal:>8.2f}",
                f"{'TAX 7%':<20}{tax:>8.2f}", f"{'TOTAL':<20}{total:>8.2f}"]  # fmt: skip
        distractors: dict[str, object] = {"total": subtotal}
        if payment == "cash":
            tendered = float(int(total // 10 + 1) * 10)
            body += [f"{'CASH':<20}{tendered:>8.2f}", f"{'CHANGE':<20}{tendered - total:>8.2f}"]
            distractors = {"total": tendered}
        else:
            body.append(f"{'VISA **** ' + str(rng.randint(1000, 9999)):<20}{total:>8.2f}")
        if difficulty >= 6:
            body.append(f"Returns accepted until {d.date_text(d.shifted(when, 30), style)}")
            distractors["date"] = d.iso(d.shifted(when, 30))
        if difficulty >= 8:
            body.append(f"YOU SAVED {d.cents(rng, 1, 9):.2f} WITH YOUR REWARDS CARD")
        body += ["THANK YOU FOR SHOPPING WITH US"]
        gold = {"store": store, "date": d.iso(when), "time": d.clock(hour, minute),
                "items": items, "tax": tax, "total": total, "payment": payment}  # fmt: skip
        extras = 1 + (difficulty >= 3) + (difficulty >= 4) + (difficulty >= 6) + (difficulty >= 8)
        return Doc("\n".join(body), gold, 5 + 2 * len(items) + extras, distractors)


def _tracking(rng: random.Random, carrier: str) -> str:
    digits = {"FedEx": 12, "USPS": 22, "DHL": 10}.get(carrier, 0)
    if not digits:
        alnum = "0123456789ABCDEFGHJKLMNPRSTUVWXY"
        return "1Z" + "".join(rng.choice(alnum) for _ in range(16))
    return "".join(rng.choice("0123456789") for _ in range(digits))


class ShippingNotice(ExtractDomain):
    """A shipment e-mail: carrier, tracking, dates, destination and the parcel's weight."""

    id = "extract/shipping-notice-v2"
    kind = "shipping notification e-mail"
    fields = (
        Field("carrier", "choice", "the carrier delivering the shipment", choices=CARRIERS),
        Field("tracking_number", "code", "the shipment's tracking number (spaces optional)"),
        Field("ship_date", "date", "the date the shipment left"),
        Field("estimated_delivery", "date", "the expected delivery date"),
        Field("recipient", "text", "the name of the person it is shipped to"),
        Field("city", "text", "the destination city"),
        Field("postal_code", "code", "the destination postal code"),
        Field("packages", "integer", "the number of packages"),
        Field("weight_kg", "number", "the total weight in kilograms"),
    )  # fmt: skip

    def document(self, rng: random.Random, difficulty: int) -> Doc:
        carrier = rng.choice(CARRIERS)
        tracking = _tracking(rng, carrier)
        recipient, sender = d.people(rng, 2)
        dest, depot = d.addresses(rng, 2)
        ordered = d.day(rng)
        shipped = d.shifted(ordered, rng.randint(1, 4))
        arrives = d.shifted(shipped, rng.randint(2, 7))
        style = rng.choice(d.date_styles(difficulty))
        packages = rng.randint(1, 6)
        grams = rng.randint(300, 25000)
        weight = f"{grams / 1000:g} kg" if difficulty < 5 else f"{grams:,} g"
        count = str(packages) if difficulty < 6 else NUMBER_WORDS[packages - 1]
        shown = tracking if difficulty < 4 else " ".join(tracking[i : i + 4] for i in range(0, len(tracking), 4))  # fmt: skip
        order = f"#{rng.randint(100000, 999999)}"
        first = recipient.split()[0]
        lines = [f"Subject: Your order {order} is on its way", "", f"Hi {first},", ""]
        if difficulty >= 3:
            lines.append(f"Thanks for your order {order}, placed on {d.date_text(ordered, style)}.")
        lines += [f"It shipped on {d.date_text(shipped, style)} with {carrier}.",
                  f"Tracking number: {shown}",
                  f"Estimated delivery: {d.date_text(arrives, style)}", "",
                  "Shipping to:", recipient, *dest.lines(), "",
                  f"Shipment: {count} package{'s' if packages > 1 else ''}, total weight {weight}."]  # fmt: skip
        distractors: dict[str, object] = {"ship_date": d.iso(arrives)}
        if difficulty >= 3:
            distractors = {"ship_date": d.iso(ordered)}
        if difficulty >= 5:
            lines += ["", f"Returns go to: {sender}, {depot.one_line()}"]
            distractors["postal_code"] = depot.postal_code
        if difficulty >= 7:
            earlier = _tracking(rng, carrier)
            lines += [f"Your earlier shipment {earlier} was delivered on "
                      f"{d.date_text(d.shifted(ordered, -rng.randint(5, 40)), style)}."]  # fmt: skip
            distractors["tracking_number"] = earlier
        lines += ["", *d.filler(rng, difficulty // 3), "", f"- The {d.company(rng)} team"]
        gold = {"carrier": carrier, "tracking_number": tracking, "ship_date": d.iso(shipped),
                "estimated_delivery": d.iso(arrives), "recipient": recipient, "city": dest.city,
                "postal_code": dest.postal_code, "packages": packages, "weight_kg": grams / 1000}  # fmt: skip
        extras = (difficulty >= 3) * 2 + (difficulty >= 5) * 2 + (difficulty >= 7) * 2
        return Doc("\n".join(lines), gold, 9 + extras + difficulty // 3, distractors)


DOMAINS = (Invoice(), Receipt(), ShippingNotice())
