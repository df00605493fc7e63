"""The `coding/*` family: every domain passes the self-check (generation speed: `posttrain domains bench`)."""

from __future__ import annotations

import pytest

from posttrain.domains.check import check_domains
from posttrain.domains.coding import DOMAINS
from posttrain.sandbox import layers


def test_twelve_domains_with_distinct_ids() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(ids) >= 12 and len(set(ids)) == len(ids)


@pytest.mark.slow  # make test runs it too, in tests/domains/test_check.py over every domain
@pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")
def test_every_domain_passes_the_self_check() -> None:
    results = check_domains(DOMAINS, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []
