"""The `text` family (`posttrain/domains/text_ops`): every domain passes the self-check."""

from __future__ import annotations

from posttrain.domains.text_ops import DOMAINS
from tests.domains.family_contract import (
    assert_echo_scores_zero,
    assert_self_check_passes,
    assert_three_rejected_corruptions,
)


def test_every_domain_passes_the_self_check() -> None:
    assert_self_check_passes(DOMAINS)


def test_ids_are_unique_in_the_family_and_leave_reverse_alone() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(set(ids)) == len(ids) and all(i.startswith("text/") for i in ids)
    assert "text/reverse-v1" not in ids


def test_the_family_uses_four_verification_methods() -> None:
    methods = {d.axes.verification for d in DOMAINS}
    assert methods == {"exact", "structure", "set_match", "validity"}


def test_every_task_offers_three_corruptions_the_judge_rejects() -> None:
    assert_three_rejected_corruptions(DOMAINS)


def test_the_answer_never_equals_the_echoed_input() -> None:
    assert_echo_scores_zero(DOMAINS)
