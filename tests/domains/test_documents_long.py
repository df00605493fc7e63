"""The long `documents/*` variants behind retrieval tools: self-check, episode loop, near-misses."""

from __future__ import annotations

import json

import pytest

from posttrain.domains.check import check_domains, replay_solutions
from posttrain.domains.documents.long_filing import (
    DOMAINS,
    LongCitedExtraction,
    LongMetric,
    company_of,
    filing_tokens,
    prints,
)
from posttrain.domains.documents.narrative import long_filing
from posttrain.domains.longctx_search.framework import READ, SEARCH, calls_turn
from posttrain.models import build_tokenizer
from posttrain.rollout.episode import replay_references
from posttrain.types import Message, Reference, Task, ToolCall

BY_ID = {d.id: d for d in DOMAINS}


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    tok = build_tokenizer()
    tok.model_max_length = 1 << 30
    return tok


def play(task: Task, reference: Reference, tokenizer) -> float:  # type: ignore[no-untyped-def]
    (rollout,) = replay_solutions(BY_ID[task.domain], [(task, reference)], tokenizer)
    assert rollout.verdict.error is None
    return rollout.verdict.reward


def test_every_domain_passes_the_self_check() -> None:
    results = check_domains(DOMAINS, difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


@pytest.mark.parametrize("difficulty", [1, 5, 10])
def test_references_pass_through_the_episode_loop(difficulty: int, tokenizer) -> None:  # type: ignore[no-untyped-def]
    tasks = [d.generate(s, difficulty) for d in DOMAINS for s in (11, 12)]
    rollouts = replay_references(tasks, tokenizer, BY_ID.__getitem__)
    assert [r.reward for r in rollouts] == [1.0] * len(tasks)


def test_the_filing_grows_from_10k_to_200k_tokens() -> None:
    assert filing_tokens(1) == 10_000 and filing_tokens(10) == 200_000
    task = LongMetric().generate(0, 10)
    text = LongMetric().corpus(task).text
    assert 180_000 <= len(text) / 4 <= 220_000


def test_the_cheap_company_matches_the_long_filing() -> None:
    company, unit = company_of(123)
    filing, _ = long_filing(123, 10_000)
    assert filing.company == company.name and filing.unit == unit


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.id)
def test_the_reference_reads_every_chunk_it_cites(domain) -> None:  # type: ignore[no-untyped-def]
    task = domain.generate(3, 4)
    reference = domain.reference(task)
    calls = [c for m in reference.turns[:-1] for c in m.tool_calls]
    assert calls[0].name == SEARCH
    final = json.loads(reference.final)
    cited = final["citations"] if "citations" in final else [v["chunk"] for v in final.values()]
    assert set(cited) <= {c.arguments["id"] for c in calls if c.name == READ}


def test_a_guessed_extraction_without_reading_fails(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = LongCitedExtraction()
    task = domain.generate(4, 2)
    reference = domain.reference(task)
    assert play(task, Reference.single(reference.final), tokenizer) == 0.0
    searched_only = Reference([reference.turns[0], Message("assistant", reference.final)])
    assert play(task, searched_only, tokenizer) == 0.0


def test_extraction_citing_a_chunk_without_the_value_gets_half(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = LongCitedExtraction()
    task = domain.generate(6, 3)
    corpus = domain.corpus(task)
    reference = domain.reference(task)
    final = json.loads(reference.final)
    miss = next(c for c in corpus.chunks if not any(prints(corpus, c, v["value"]) for v in final.values()))  # fmt: skip
    moved = {n: {"value": v["value"], "chunk": miss} for n, v in final.items()}
    tools = [*reference.turns[:-1], calls_turn([ToolCall(READ, {"id": miss})])]
    assert play(task, Reference([*tools, Message("assistant", json.dumps(moved))]), tokenizer) == 0.5  # fmt: skip


def test_extraction_accepts_values_written_as_printed(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = LongCitedExtraction()
    task = domain.generate(5, 2)
    reference = domain.reference(task)
    final = json.loads(reference.final)
    printed = {n: {"value": f"({-v['value']:,})" if v["value"] < 0 else f"{v['value']:,}", "chunk": v["chunk"]} for n, v in final.items()}  # fmt: skip
    assert play(task, Reference([*reference.turns[:-1], Message("assistant", json.dumps(printed))]), tokenizer) == 1.0  # fmt: skip


def test_metric_needs_the_number_within_rounding_and_every_operand_cited(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = LongMetric()
    task = domain.generate(8, 3)
    reference = domain.reference(task)
    final = json.loads(reference.final)
    tools = reference.turns[:-1]
    as_text = json.dumps({"answer": f"{final['answer']:.2f}", "citations": final["citations"]})
    partial = json.dumps({"answer": final["answer"], "citations": final["citations"][:1]})
    off = json.dumps({"answer": round(final["answer"] + 0.01, 2), "citations": final["citations"]})
    assert play(task, Reference([*tools, Message("assistant", as_text)]), tokenizer) == 1.0
    if len(set(task.meta["operands"])) > 1 and len(final["citations"]) > 1:
        assert 0.5 < play(task, Reference([*tools, Message("assistant", partial)]), tokenizer) < 1.0  # fmt: skip
    assert play(task, Reference([*tools, Message("assistant", off)]), tokenizer) == 0.5


def test_extraction_with_a_list_for_a_chunk_is_uncited_not_a_verifier_error(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = LongCitedExtraction()
    task = domain.generate(5, 2)
    reference = domain.reference(task)
    final = json.loads(reference.final)
    listed = {n: {"value": v["value"], "chunk": [v["chunk"]]} for n, v in final.items()}
    assert play(task, Reference([*reference.turns[:-1], Message("assistant", json.dumps(listed))]), tokenizer) == 0.5  # fmt: skip
