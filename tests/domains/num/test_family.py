"""The `num` family: every domain passes the self-check and offers enough corruptions."""

from __future__ import annotations

from posttrain.domains.check import check_domains
from posttrain.domains.num import DOMAINS


def test_every_domain_passes_the_self_check() -> None:
    results = check_domains(DOMAINS, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


def test_ids_are_unique_and_in_the_family() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(set(ids)) == len(ids) and all(i.startswith("num/") for i in ids)


def test_the_family_uses_exact_numeric_and_math_verification() -> None:
    assert {d.axes.verification for d in DOMAINS} == {"exact", "numeric", "math"}


def test_every_task_offers_at_least_three_corruptions() -> None:
    for domain in DOMAINS:
        for difficulty in range(1, 11):
            for seed in range(6):
                task = domain.generate(seed, difficulty)
                wrong = domain.corrupt(task, domain.reference(task))
                assert len(wrong) >= 3, (task.id, [w.final for w in wrong])


def test_no_corruption_is_accepted_by_the_judge() -> None:
    for domain in DOMAINS:
        for seed in range(6):
            task = domain.generate(seed, 7)
            for wrong in domain.wrong(task):
                assert not domain.judge(task, wrong).passed, (task.id, wrong)
