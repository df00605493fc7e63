"""Cited domains: right values need verbatim quotes holding them; distractors fail."""

from __future__ import annotations

import json
from typing import Any

from posttrain.domains.extract.citations import (
    DOMAINS,
    AcquisitionCited,
    IncidentReportCited,
    LeaseCited,
)
from posttrain.domains.extract.record import MAX_QUOTE, CitedDomain
from posttrain.types import Task


def _judge(domain: CitedDomain, task: Task, record: dict[str, Any]) -> tuple[float, bool]:
    v = domain.judge(task, json.dumps(record))
    return v.reward, v.passed


def test_reference_quotes_are_verbatim_and_short() -> None:
    for domain in (LeaseCited(), IncidentReportCited(), AcquisitionCited()):
        for difficulty in (1, 6, 10):
            task = domain.generate(5, difficulty)
            for slot in json.loads(task.answer).values():
                assert len(slot["quote"]) <= MAX_QUOTE and slot["quote"] in task.meta["document"]


def test_references_pass_at_every_difficulty() -> None:
    for domain in DOMAINS:
        for difficulty in range(1, 11):
            for seed in range(3):
                task = domain.generate(seed, difficulty)
                assert _judge(domain, task, json.loads(task.answer)) == (1.0, True)


def test_a_shorter_verbatim_quote_passes() -> None:
    task = LeaseCited().generate(0, 5)
    gold = json.loads(task.answer)
    tenant = gold["tenant"]["value"]
    signature = f"Tenant: {tenant}"  # the whole signature line
    assert signature in task.meta["document"].splitlines()
    record = {**gold, "tenant": {"value": tenant, "quote": signature}}
    assert _judge(LeaseCited(), task, record) == (1.0, True)


def test_the_bare_value_as_every_quote_fails() -> None:
    for domain in DOMAINS:
        for difficulty in (1, 4, 7, 10):
            for seed in range(10):
                task = domain.generate(seed, difficulty)
                surfaces = task.meta["surfaces"]
                bare = {
                    name: {"value": slot["value"], "quote": surfaces[name][-1]}
                    for name, slot in json.loads(task.answer).items()
                }  # fmt: skip
                assert _judge(domain, task, bare) == (0.0, False)


def test_a_right_value_with_a_fabricated_quote_fails() -> None:
    task = IncidentReportCited().generate(0, 4)
    gold = json.loads(task.answer)
    days = gold["days_off_work"]["value"]
    forged = {"value": days, "quote": f"The worker stayed home {days} days"}
    reward, passed = _judge(IncidentReportCited(), task, {**gold, "days_off_work": forged})
    assert not passed and abs(reward - 7 / 8) < 1e-9


def test_a_quote_of_another_field_fails() -> None:
    task = AcquisitionCited().generate(0, 4)
    gold = json.loads(task.answer)
    moved = {"value": gold["price_millions"]["value"], "quote": gold["acquirer_ceo"]["quote"]}
    assert not _judge(AcquisitionCited(), task, {**gold, "price_millions": moved})[1]


def test_the_revenue_is_not_the_price() -> None:
    task = AcquisitionCited().generate(1, 6)
    gold = json.loads(task.answer)
    revenue = task.meta["distractors"]["price_millions"]
    quote = next(line for line in task.meta["document"].splitlines() if "revenue" in line)
    assert not _judge(AcquisitionCited(), task, {**gold, "price_millions": {"value": revenue, "quote": quote}})[1]  # fmt: skip


def test_a_bare_value_without_quotes_is_schema_invalid() -> None:
    task = LeaseCited().generate(0, 2)
    plain = {k: v["value"] for k, v in json.loads(task.answer).items()}
    assert _judge(LeaseCited(), task, plain) == (0.0, False)
