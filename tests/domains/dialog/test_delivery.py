"""delivery-slot: revealed constraints, violations and the earliest-slot rule."""

from __future__ import annotations

from posttrain.domains.dialog.delivery import SLOTS, DeliverySlotDomain, allows, slot_text
from posttrain.types import Message


def test_a_rejected_proposal_reveals_one_constraint() -> None:
    domain = DeliverySlotDomain()
    task = domain.generate(0, 5)
    session = domain.open(task)
    reply = session.user_turn(Message("assistant", domain.solve(task)[0]))
    assert reply is not None and reply.content.startswith("That doesn't work.")
    assert len(session.state["revealed"]) == 1


def test_proposing_a_slot_that_breaks_a_revealed_constraint_is_a_violation() -> None:
    domain = DeliverySlotDomain()
    task = domain.generate(1, 4)
    first = domain.solve(task)[0]
    state = domain.play(task, [first, first])
    assert state["violations"] == 1


def test_a_later_feasible_slot_is_booked_but_fails() -> None:
    domain = DeliverySlotDomain()
    for seed in range(20):
        task = domain.generate(seed, 3)
        rules = task.meta["world"]["rules"]
        feasible = [s for s in SLOTS if all(allows(r, *s) for r in rules)]
        if len(feasible) >= 2:
            break
    assert len(feasible) >= 2
    verdict = domain.judge(task, domain.play(task, [slot_text(*feasible[-1])]))
    assert not verdict.passed and "earlier slot" in verdict.reason


def test_hour_outside_opening_times_is_malformed() -> None:
    domain = DeliverySlotDomain()
    task = domain.generate(0, 1)
    assert domain.play(task, ["PROPOSE: Mon 19:00"])["malformed"] == 1
