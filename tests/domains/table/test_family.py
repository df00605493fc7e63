"""The `table` family: every domain passes the self-check and keeps the family's promises."""

from __future__ import annotations

from posttrain.domains.check import check_domains
from posttrain.domains.table import DOMAINS


def test_every_domain_passes_the_self_check() -> None:
    results = check_domains(DOMAINS, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


def test_ids_are_unique_and_in_the_family() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(set(ids)) == len(ids) and all(i.startswith("table/") and i.endswith("-v1") for i in ids)  # fmt: skip


def test_every_domain_is_a_single_turn_table_task_without_tools() -> None:
    assert {(d.axes.modality, d.axes.tools, d.axes.rounds) for d in DOMAINS} == {("table", "none", "single")}  # fmt: skip


def test_the_family_uses_four_verification_methods() -> None:
    assert {d.axes.verification for d in DOMAINS} == {"exact", "numeric", "set_match", "structure"}  # fmt: skip


def test_every_task_offers_three_corruptions_one_scoring_at_most_a_fifth() -> None:
    for domain in DOMAINS:
        for difficulty in (1, 4, 7, 10):
            for seed in range(4):
                task = domain.generate(seed, difficulty)
                wrong = domain.wrong(task)
                assert len(wrong) >= 3, (task.id, wrong)
                scores = [domain.judge(task, w) for w in wrong]
                assert not any(v.passed for v in scores), task.id
                assert min(v.reward for v in scores) <= 0.2, task.id


def test_the_rendering_varies_with_the_seed_and_is_recorded() -> None:
    formats = {DOMAINS[0].generate(seed, 3).meta["format"] for seed in range(20)}
    assert formats == {"markdown", "html", "csv"}


def test_the_measure_is_the_number_of_cells_shown() -> None:
    task = DOMAINS[0].generate(0, 10)
    assert task.meta["measure"] == 40 * 8
