"""The `geo` family: every domain passes the self-check and its matrix cells are honest."""

from __future__ import annotations

from posttrain.domains.check import check_domains
from posttrain.domains.geo import DOMAINS


def test_every_domain_passes_the_self_check() -> None:
    results = check_domains(DOMAINS, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


def test_ids_are_unique_and_in_the_family() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(set(ids)) == len(ids) and all(i.startswith("geo/") and i.endswith("-v1") for i in ids)  # fmt: skip


def test_cells_are_geometry_input_without_tools_in_one_round() -> None:
    assert {(d.axes.modality, d.axes.tools, d.axes.rounds) for d in DOMAINS} == {("geometry", "none", "single")}  # fmt: skip


def test_verification_spreads_over_the_geometric_methods() -> None:
    methods = {d.axes.verification for d in DOMAINS}
    assert methods == {"geometry", "validity", "numeric", "exact", "set_match"}


def test_every_task_offers_three_corruptions_the_judge_rejects() -> None:
    for domain in DOMAINS:
        for difficulty in (1, 4, 7, 10):
            for seed in range(4):
                task = domain.generate(seed, difficulty)
                wrong = domain.corrupt(task, domain.reference(task))
                assert len(wrong) >= 3, task.id
                for ref in wrong:
                    assert not domain.judge(task, ref.final).passed, (task.id, ref.final)
