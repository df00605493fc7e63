"""The `extract/*` family: every domain passes the self-check and declares its cell."""

from __future__ import annotations

from posttrain.domains.check import check_domains
from posttrain.domains.extract import DOMAINS


def test_every_domain_passes_the_self_check() -> None:
    failures = [r for r in check_domains(DOMAINS, difficulties=(1, 5)) if not r.ok]
    assert failures == []


def test_ids_are_unique_and_versioned() -> None:
    ids = [domain.id for domain in DOMAINS]
    assert len(set(ids)) == len(ids) == 13
    # v2: a text field's digits must match (v1 forgave "517 Mill Lane" for "516 ...")
    assert all(i.startswith("extract/") and i.endswith("-v2") for i in ids)


def test_cells_are_document_single_turn_without_tools() -> None:
    cells = {(x.axes.modality, x.axes.tools, x.axes.rounds) for x in DOMAINS}
    assert cells == {("document", "none", "single")}
    cited = [x.id for x in DOMAINS if x.axes.verification == "fields_citations"]
    assert len(cited) == 3 and all("cited" in i for i in cited)
    assert {x.axes.verification for x in DOMAINS} == {"structure", "fields_citations"}
