"""The whole `agent/*` family passes the domain self-check and spans several matrix cells."""

from __future__ import annotations

from posttrain.domains.agents import DOMAINS
from posttrain.domains.check import check_domains


def test_every_agent_domain_passes_the_self_check() -> None:
    results = check_domains(DOMAINS, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


def test_the_family_has_at_least_twelve_domains_in_several_cells() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(ids) >= 12 and len(set(ids)) == len(ids)
    assert all(i.startswith("agent/") and i.endswith("-v1") for i in ids)
    cells = {(d.axes.modality, d.axes.tools, d.axes.rounds, d.axes.verification) for d in DOMAINS}
    assert len(cells) >= 3


def test_references_fit_within_max_turns_at_the_hardest_difficulty() -> None:
    for domain in DOMAINS:
        for seed in range(3):
            task = domain.generate(seed, 10)
            assert len(domain.reference(task).turns) <= domain.max_turns
