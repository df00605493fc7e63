"""The `longctx-search/*` domains: self-check, references through the episode loop, near-misses."""

from __future__ import annotations

import json
import re

import pytest

from posttrain.domains.check import check_domains, replay_solutions
from posttrain.domains.longctx_search import DOMAINS
from posttrain.domains.longctx_search.framework import READ, SEARCH, calls_turn
from posttrain.domains.longctx_search.haystack import Fact, HaystackSpec, build_haystack
from posttrain.domains.longctx_search.multihop import MultiHop
from posttrain.domains.longctx_search.needle import Needle
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


@pytest.mark.parametrize("difficulty", [1, 5])
def test_references_pass_through_the_episode_loop(difficulty: int, tokenizer) -> None:  # type: ignore[no-untyped-def]
    tasks = [d.generate(7, difficulty) for d in DOMAINS]
    rollouts = replay_references(tasks, tokenizer, BY_ID.__getitem__)
    assert [(r.domain, r.reward) for r in rollouts] == [(t.domain, 1.0) for t in tasks]


def test_references_pass_at_a_million_tokens(tokenizer) -> None:  # type: ignore[no-untyped-def]
    tasks = [d.generate(0, 10) for d in DOMAINS]
    assert all(t.meta["tokens"] == 1_000_000 for t in tasks)
    rollouts = replay_references(tasks, tokenizer, BY_ID.__getitem__)
    assert [r.reward for r in rollouts] == [1.0, 1.0]


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.id)
def test_the_reference_searches_then_reads_the_cited_chunks(domain) -> None:  # type: ignore[no-untyped-def]
    task = domain.generate(2, 3)
    reference = domain.reference(task)
    calls = [c for m in reference.turns[:-1] for c in m.tool_calls]
    assert calls[0].name == SEARCH
    final = json.loads(reference.final)
    cited = [final["chunk"]] if "chunk" in final else final["chunks"]
    read = [c.arguments["id"] for c in calls if c.name == READ]
    assert set(cited) <= set(read)
    corpus = domain.corpus(task)
    for i, chunk_id in enumerate(cited):
        assert corpus.covers(chunk_id, "needle" if "chunk" in final else f"hop{i}")
        # the id was served by a search the reference made
        searches = [c.arguments for c in calls if c.name == SEARCH]
        assert any(chunk_id in corpus.hits(a["query"], a["k"]) for a in searches)


def test_a_guessed_answer_without_searching_fails(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = Needle()
    task = domain.generate(4, 2)
    reference = domain.reference(task)
    assert play(task, Reference.single(reference.final), tokenizer) == 0.0
    read_only = Reference([reference.turns[1], Message("assistant", reference.final)])
    assert play(task, read_only, tokenizer) == 1.0  # reading the right chunk is what counts


def test_citing_a_lookalike_chunk_fails(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = Needle()
    task = domain.generate(5, 4)
    corpus = domain.corpus(task)
    decoy = next(c for c in corpus.chunks if corpus.covers(c, "decoy0") and not corpus.covers(c, "needle"))  # fmt: skip
    search = calls_turn([ToolCall(SEARCH, {"query": task.meta["query"], "k": 20})])
    read = calls_turn([ToolCall(READ, {"id": decoy})])
    right_value = json.dumps({"value": task.answer, "chunk": decoy})
    decoy_value = json.dumps({"value": task.meta["decoys"][0], "chunk": decoy})
    assert play(task, Reference([search, read, Message("assistant", right_value)]), tokenizer) == 0.5  # fmt: skip
    assert play(task, Reference([search, read, Message("assistant", decoy_value)]), tokenizer) == 0.0  # fmt: skip


def test_the_needle_value_may_be_an_integer_but_extra_keys_fail(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = Needle()
    task = domain.generate(1, 1)
    reference = domain.reference(task)
    final = json.loads(reference.final)
    tools = reference.turns[:-1]
    as_int = json.dumps({"value": int(final["value"]), "chunk": final["chunk"]})
    extra = json.dumps({**final, "note": "found it"})
    assert play(task, Reference([*tools, Message("assistant", as_int)]), tokenizer) == 1.0
    assert play(task, Reference([*tools, Message("assistant", extra)]), tokenizer) == 0.0


def test_multi_hop_credits_each_cited_hop(tokenizer) -> None:  # type: ignore[no-untyped-def]
    domain = MultiHop()
    task = domain.generate(3, 6)
    assert task.meta["hops"] == 3
    reference = domain.reference(task)
    final = json.loads(reference.final)
    tools = reference.turns[:-1]
    swapped = json.dumps({"value": final["value"], "chunks": final["chunks"][::-1]})
    short = json.dumps({"value": final["value"], "chunks": final["chunks"][:2]})
    assert play(task, Reference([*tools, Message("assistant", swapped)]), tokenizer) < 1.0
    assert 0.5 < play(task, Reference([*tools, Message("assistant", short)]), tokenizer) < 1.0


def test_multi_hop_has_two_hops_up_to_difficulty_5_then_three() -> None:
    domain = MultiHop()
    assert [domain.generate(0, d).meta["hops"] for d in (1, 5, 6, 10)] == [2, 2, 3, 3]


def test_the_haystack_grows_geometrically_from_10k_to_1m_tokens() -> None:
    sizes = [Needle().generate(0, d).meta["tokens"] for d in range(1, 11)]
    assert sizes[0] == 10_000 and sizes[-1] == 1_000_000
    assert all(b > a for a, b in zip(sizes, sizes[1:], strict=False))


def test_haystack_filler_has_no_digits_and_facts_sit_at_their_spans() -> None:
    facts = (Fact("The archive at Velmere is run by Ada Rusk.", "Ada Rusk", 0.5),
             Fact("Ada Rusk's staff badge number is 4821.", "4821", 0.9))  # fmt: skip
    hay = build_haystack(HaystackSpec(3, 20_000, facts))
    assert len(hay.text) >= 80_000
    assert [hay.text[s:e] for s, e in hay.spans] == ["Ada Rusk", "4821"]
    assert re.findall(r"[0-9]+", hay.text) == ["4821"]
    assert hay.text.isascii()
    assert build_haystack(HaystackSpec(3, 20_000, facts)) == hay


def test_the_prompt_holds_the_tools_and_format_but_not_the_document() -> None:
    task = Needle().generate(0, 1)
    prompt = task.prompt[0].content
    assert "search_document" in prompt and "read_chunk" in prompt and '"chunk"' in prompt
    assert task.answer not in prompt and len(prompt) < 3_000
