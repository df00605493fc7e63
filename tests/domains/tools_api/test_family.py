"""The whole `tools` API family passes the domain self-check."""

from __future__ import annotations

import re

from posttrain.domains.check import check_domains
from posttrain.domains.tools_api import DOMAINS


def test_every_domain_passes_the_self_check_at_difficulties_1_and_5() -> None:
    failed = [r for r in check_domains(DOMAINS, difficulties=(1, 5)) if not r.ok]
    assert failed == []


def test_the_family_has_twelve_domains_with_distinct_ids_in_four_or_more_cells() -> None:
    ids = [d.id for d in DOMAINS]
    assert len(ids) == len(set(ids)) == 12
    assert all(re.fullmatch(r"tools/[a-z0-9-]+-v[0-9]+", i) for i in ids)
    assert len({d.axes for d in DOMAINS}) >= 4


def test_every_prompt_describes_the_tools_and_the_call_syntax() -> None:
    for domain in DOMAINS:
        text = "\n".join(m.content for m in domain.generate(0, 3).prompt)
        assert "<tool_call>" in text
        assert all(f"- {spec.name}(" in text for spec in domain.tools)
