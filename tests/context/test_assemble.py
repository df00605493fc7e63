"""Budgeted context assembly: budget, ordering, headers, errors."""

from __future__ import annotations

from typing import Any

import pytest

from posttrain.context.assemble import assemble, order_chunks
from posttrain.context.chunking import chunk_text
from posttrain.context.tokens import token_counter


@pytest.mark.parametrize("budget", [120, 500, 2000])
def test_never_exceeds_the_budget_with_the_real_tokenizer(
    smollm2: Any, document: str, budget: int
) -> None:
    ctx = assemble(
        "copper harbor lantern", document, budget, tokenizer=smollm2, max_chunk_tokens=100
    )
    assert ctx.chunk_ids
    assert ctx.n_tokens == token_counter(smollm2).count(ctx.text) <= budget


def test_fills_the_budget_nearly(smollm2: Any, document: str) -> None:
    ctx = assemble("river stone", document, 1000, tokenizer=smollm2, max_chunk_tokens=100)
    assert ctx.n_tokens > 1000 - 130  # room for less than one more chunk and its header


def test_each_chunk_appears_under_its_header(smollm2: Any, document: str) -> None:
    ctx = assemble("meadow canal", {"book": document}, 600, tokenizer=smollm2)
    chunks = {c.id: c for c in chunk_text(document, "book", smollm2, 200, 30)}
    for cid in ctx.chunk_ids:
        assert f"[chunk {cid}]\n{chunks[cid].text}" in ctx.text
    assert ctx.text.startswith(f"[chunk {ctx.chunk_ids[0]}]")


def test_edges_order_puts_the_best_at_both_ends() -> None:
    ranked = chunk_text("\n\n".join(f"Para {i}." for i in range(5)), "d", None, 3, 0)
    ordered = [c.index for c in order_chunks(ranked, "edges")]
    assert ordered == [0, 2, 4, 3, 1]


def test_relevance_order_is_best_first(smollm2: Any, document: str) -> None:
    rel = assemble("winter signal", document, 800, tokenizer=smollm2, order="relevance")
    edges = assemble("winter signal", document, 800, tokenizer=smollm2, order="edges")
    assert rel.chunk_ids[0] == edges.chunk_ids[0]
    assert len(rel.chunk_ids) < 2 or rel.chunk_ids[1] == edges.chunk_ids[-1]


def test_document_order_follows_the_text(smollm2: Any, document: str) -> None:
    ctx = assemble("bridge ledger", document, 800, tokenizer=smollm2, order="document")
    indices = [int(cid.split("#")[1]) for cid in ctx.chunk_ids]
    assert indices == sorted(indices)


def test_document_order_keeps_the_documents_in_the_order_given() -> None:
    # ids that sort differently as strings ("d10" < "d2") than as given
    docs = {"d2": "river one", "d10": "river two", "a": "river three"}
    ctx = assemble("river", docs, 100, order="document")
    assert ctx.chunk_ids == ["d2#0", "d10#0", "a#0"]


def test_document_order_of_several_documents_needs_their_order() -> None:
    chunks = chunk_text("river one", "d2", None, 50, 0) + chunk_text(
        "river two", "d10", None, 50, 0
    )
    with pytest.raises(ValueError, match="needs doc_ids"):
        order_chunks(chunks, "document")
    with pytest.raises(ValueError, match=r"\['d2'\] are not in doc_ids"):
        order_chunks(chunks, "document", ["d10"])


def test_several_documents_keep_their_ids(document: str) -> None:
    ctx = assemble("orchard", {"a": document, "b": "An orchard of pears."}, 3000)
    assert any(cid.startswith("b#") for cid in ctx.chunk_ids)


def test_empty_query_is_refused(document: str) -> None:
    with pytest.raises(ValueError, match="query is empty"):
        assemble("  ", document, 1000)


def test_budget_below_the_smallest_chunk_names_both(smollm2: Any, document: str) -> None:
    with pytest.raises(ValueError, match=r"token_budget=5 .*smallest chunk takes \d+ tokens"):
        assemble("river", document, 5, tokenizer=smollm2)


def test_unknown_retriever_is_refused(document: str) -> None:
    with pytest.raises(ValueError, match="retriever"):
        assemble("river", document, 1000, retriever="magic")  # type: ignore[arg-type]


def test_a_large_budget_takes_every_matching_chunk() -> None:
    """No retrieval depth cap: 300 matching chunks all fit in a 32k budget."""
    text = "\n\n".join(f"Log entry {i}: the generator was serviced at {i} psi." for i in range(300))
    ctx = assemble("generator psi", text, token_budget=32000, max_chunk_tokens=20, overlap_tokens=0)
    assert len(chunk_text(text, "doc", None, 20, 0)) == len(ctx.chunk_ids) == 300


def test_a_short_id_chunk_that_fits_is_used_when_long_ids_do_not() -> None:
    """The smallest block is found over every document, whose ids (headers) differ."""
    long_id = "reports/2019/annual/generator_maintenance_log_final_v2.md"
    docs = {long_id: "\n\n".join(["gen"] * 10), "faq": "pump"}
    ctx = assemble("pump", docs, token_budget=10, max_chunk_tokens=1, overlap_tokens=0)
    assert ctx.chunk_ids == ["faq#0"] and ctx.n_tokens <= 10


def test_document_ids_must_be_strings_so_chunk_ids_stay_unique() -> None:
    with pytest.raises(ValueError, match="document ids must be non-empty strings, got 1"):
        assemble("pump", {1: "The pump failed.", "1": "The pump works."}, 100)  # type: ignore[dict-item]


def test_an_overlap_as_large_as_the_chunks_names_both_arguments() -> None:
    with pytest.raises(
        ValueError, match=r"overlap_tokens=30 must be in \[0, max_chunk_tokens=20\)"
    ):
        assemble("pump", "The pump failed.", 100, max_chunk_tokens=20)
    assert assemble(
        "pump", "The pump failed.", 100, max_chunk_tokens=20, overlap_tokens=4
    ).chunk_ids
