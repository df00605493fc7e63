"""The whole `dialog` family passes the domain self-check."""

from __future__ import annotations

import re

from posttrain.domains.check import check_domains
from posttrain.domains.dialog import DOMAINS


def test_every_domain_passes_the_self_check_at_difficulties_1_and_5() -> None:
    failed = [r for r in check_domains(DOMAINS, difficulties=(1, 5)) if not r.ok]
    assert failed == []


def test_the_family_has_six_conversation_domains_in_three_or_more_cells() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(ids) == len(set(ids)) == 6
    assert all(re.fullmatch(r"dialog/[a-z-]+-v[0-9]+", i) for i in ids)
    assert all(d.axes.modality == "conversation" and d.axes.tools == "none" for d in DOMAINS)
    assert len({d.axes.verification for d in DOMAINS}) >= 3


def test_every_budget_fits_max_turns_and_covers_the_reference() -> None:
    for domain in DOMAINS:
        for difficulty in (1, 10):
            for seed in range(3):
                task = domain.generate(seed, difficulty)
                turns = len(domain.reference(task).turns)
                assert turns <= task.meta["budget"] <= domain.max_turns, task.id
