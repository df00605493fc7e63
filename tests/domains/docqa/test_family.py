"""The `docqa/*` family: every domain passes the self-check and declares its cell."""

from __future__ import annotations

from posttrain.domains.check import check_domains
from posttrain.domains.docqa import DOMAINS


def test_every_domain_passes_the_self_check() -> None:
    failures = [r for r in check_domains(DOMAINS, difficulties=(1, 5)) if not r.ok]
    assert failures == []


def test_ids_are_unique_and_versioned() -> None:
    ids = [domain.id for domain in DOMAINS]
    assert len(set(ids)) == len(ids) == 6
    assert all(i.startswith("docqa/") and i.endswith("-v1") for i in ids)


def test_each_domain_has_its_own_cell_or_task_kind() -> None:
    cells = [(x.axes.modality, x.axes.tools, x.axes.rounds, x.axes.verification) for x in DOMAINS]
    assert sorted(set(cells)) == sorted(
        [
            ("document", "none", "single", "exact"),
            ("document", "none", "single", "numeric"),
            ("document", "none", "single", "set_match"),
            ("document", "none", "single", "fields_citations"),
            ("document", "none", "single", "validity"),
            ("document", "retrieval", "multi", "exact"),
        ]
    )
