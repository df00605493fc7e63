"""Invoice, receipt and shipping notice: the distractors fail, equivalent forms pass."""

from __future__ import annotations

import json
from typing import Any

from posttrain.domains.extract.commerce import Invoice, Receipt, ShippingNotice
from posttrain.domains.extract.record import ExtractDomain
from posttrain.types import Task


def _with(domain: ExtractDomain, task: Task, **changes: Any) -> tuple[float, bool]:
    v = domain.judge(task, json.dumps({**json.loads(task.answer), **changes}))
    return v.reward, v.passed


def test_an_invoice_total_read_from_the_subtotal_fails() -> None:
    task = Invoice().generate(0, 6)
    assert "Subtotal" in task.prompt[0].content
    assert not _with(Invoice(), task, total=task.meta["distractors"]["total"])[1]


def test_an_invoice_number_read_from_the_po_line_fails() -> None:
    task = Invoice().generate(1, 4)
    assert not _with(Invoice(), task, invoice_number=task.meta["distractors"]["invoice_number"])[1]


def test_invoice_line_items_out_of_order_lose_credit() -> None:
    task = Invoice().generate(2, 9)
    items = json.loads(task.answer)["line_items"]
    reward, passed = _with(Invoice(), task, line_items=items[::-1])
    assert not passed and reward < 1.0


def test_a_cash_receipt_total_read_from_the_tendered_amount_fails() -> None:
    domain = Receipt()
    task = next(t for t in (domain.generate(s, 5) for s in range(20)) if '"cash"' in t.answer)
    assert "CHANGE" in task.prompt[0].content
    assert not _with(domain, task, total=task.meta["distractors"]["total"])[1]


def test_a_tracking_number_with_spaces_passes() -> None:
    domain = ShippingNotice()
    task = domain.generate(0, 5)
    number = json.loads(task.answer)["tracking_number"]
    spaced = " ".join(number[i : i + 4] for i in range(0, len(number), 4))
    assert _with(domain, task, tracking_number=spaced) == (1.0, True)


def test_a_weight_in_grams_must_be_converted_to_kilograms() -> None:
    domain = ShippingNotice()
    task = domain.generate(0, 6)
    kg = json.loads(task.answer)["weight_kg"]
    assert " g." in task.prompt[0].content
    assert not _with(domain, task, weight_kg=kg * 1000)[1]
