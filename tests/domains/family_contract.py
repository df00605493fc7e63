"""Checks every AnswerDomain family's test file runs over its `DOMAINS` (shared, not a test)."""

from __future__ import annotations

from collections.abc import Sequence

from posttrain.domains.answer_domain import AnswerDomain
from posttrain.domains.check import check_domains


def assert_self_check_passes(domains: Sequence[AnswerDomain]) -> None:
    results = check_domains(domains, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


def assert_three_rejected_corruptions(domains: Sequence[AnswerDomain]) -> None:
    for domain in domains:
        for difficulty in (1, 4, 7, 10):
            for seed in range(5):
                task = domain.generate(seed, difficulty)
                wrong = domain.wrong(task)
                assert len(wrong) >= 3, (task.id, wrong)
                assert not any(domain.judge(task, w).passed for w in wrong), task.id


def assert_echo_scores_zero(domains: Sequence[AnswerDomain]) -> None:
    for domain in domains:
        for seed in range(5):
            task = domain.generate(seed, 3)
            assert domain.judge(task, task.prompt[0].content).reward == 0.0, task.id
