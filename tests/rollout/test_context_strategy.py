"""Over-long prompts: the declared strategy applies, never a silent cut."""

from __future__ import annotations

import random
from typing import Any

import pytest

from posttrain.domains import get_domain
from posttrain.engines import ReplayEngine, SamplingParams
from posttrain.models import build_tokenizer
from posttrain.rollout.context_strategy import (
    OverLongPolicy,
    PromptTooLongError,
    fit_prompt,
    prompt_length,
)
from posttrain.rollout.episode import prompt_ids, run_episodes
from posttrain.types import Message, Reference, Task

WORDS = [
    "river",
    "stone",
    "harbor",
    "lantern",
    "meadow",
    "copper",
    "signal",
    "orchard",
    "canyon",
    "ledger",
]
NEEDLE = "The access code for the Juniper vault is 4821."
QUESTION = "What is the access code for the Juniper vault? Answer with the code only."


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return build_tokenizer()


def haystack_task(paragraphs: int = 60, needle_at: int = 31) -> Task:
    """A long document with one answer-bearing sentence, then the question."""
    rng = random.Random(7)
    parts = [
        " ".join(rng.choice(WORDS) for _ in range(40)).capitalize() + "." for _ in range(paragraphs)
    ]
    parts.insert(needle_at, NEEDLE)
    content = "\n\n".join(parts) + "\n\n" + QUESTION
    return Task(
        "t-long",
        "arith/addition-v1",  # only the id matters to these tests; no verifier runs here
        [Message("user", content)],
        "4821",
        1,
        0,
        meta={"question": QUESTION},
    )


def test_a_prompt_that_fits_is_returned_unchanged(tokenizer: Any) -> None:
    task = haystack_task(paragraphs=2)
    assert fit_prompt(task, tokenizer, 4096, 64, OverLongPolicy("error")) is task


def test_error_strategy_names_the_prompt_length_and_the_window(tokenizer: Any) -> None:
    task = haystack_task()
    used = prompt_length(tokenizer, task.prompt)
    with pytest.raises(PromptTooLongError) as info:
        fit_prompt(task, tokenizer, 1024, 64, OverLongPolicy("error"))
    message = str(info.value)
    assert f"is {used} tokens" in message
    assert "window is 1024" in message and "64 reserved" in message
    assert "over_long=retrieve" in message


def test_retrieve_keeps_the_answer_bearing_chunk_under_the_window(tokenizer: Any) -> None:
    task = haystack_task()
    fitted = fit_prompt(task, tokenizer, 1024, 64, OverLongPolicy("retrieve", chunk_tokens=96))
    content = fitted.prompt[-1].content
    assert prompt_length(tokenizer, fitted.prompt) <= 1024 - 64
    assert NEEDLE in content
    assert content.endswith(QUESTION)
    assert "[chunk doc#" in content  # chunk ids the answer can cite
    assert fitted.meta["context_fit"]["strategy"] == "retrieve"
    assert fitted.meta["context_fit"]["before"] > 1024


def test_truncate_middle_marks_the_cut_and_keeps_head_and_tail(tokenizer: Any) -> None:
    task = haystack_task()
    fitted = fit_prompt(task, tokenizer, 1024, 64, OverLongPolicy("truncate_middle"))
    content = fitted.prompt[-1].content
    assert prompt_length(tokenizer, fitted.prompt) <= 1024 - 64
    assert "tokens cut from the middle" in content
    original = task.prompt[-1].content
    assert content[:200] == original[:200]
    assert content.endswith(QUESTION)


@pytest.mark.parametrize("window", range(300, 312))
def test_truncate_middle_cuts_byte_level_tokens_only_between_characters(
    tokenizer: Any, window: int
) -> None:
    # 3-byte kana and kanji and a 4-byte emoji: byte-level tokens hold parts of them,
    # and each window moves the cuts to another byte of a character
    original = "日本語のテキスト🙂" * 40 + "\n\nQuestion?"
    task = Task("t-ja", "arith/addition-v1", [Message("user", original)], "a", 1, 0)
    fitted = fit_prompt(task, tokenizer, window, 50, OverLongPolicy("truncate_middle"))
    content = fitted.prompt[-1].content
    assert "\ufffd" not in content
    assert prompt_length(tokenizer, fitted.prompt) <= window - 50
    head, _, rest = content.partition("\n[... ")
    said, _, tail = rest.partition(" tokens cut from the middle ...]\n")
    assert original.startswith(head) and original.endswith(tail)
    kept = len(tokenizer.encode(head + tail, add_special_tokens=False))
    assert int(said) == len(tokenizer.encode(original, add_special_tokens=False)) - kept


def test_truncate_middle_cuts_the_message_with_the_most_tokens_not_characters(
    tokenizer: Any,
) -> None:
    # 100 characters of 1 token each against 60 characters of 3 byte-level tokens each
    system, user = Message("system", "s" * 100), Message("user", "数" * 60)
    task = Task("t-cjk", "arith/addition-v1", [system, user], "1", 1, 0)
    fitted = fit_prompt(task, tokenizer, 200, 10, OverLongPolicy("truncate_middle"))
    assert fitted.prompt[0] == system
    assert "tokens cut from the middle" in fitted.prompt[1].content
    assert prompt_length(tokenizer, fitted.prompt) <= 200 - 10


def test_prompt_length_counts_a_tool_message_as_the_episode_encodes_it(tokenizer: Any) -> None:
    # the episode breaks special-token strings in tool output (`rendering.defuse`), which
    # then encode to many byte tokens instead of one special token each
    messages = [Message("user", "look it up"), Message("tool", "found <|end|><|user|> x" * 20)]
    task = Task("t-tool", "arith/addition-v1", messages, "x", 1, 0)
    assert prompt_length(tokenizer, messages) == len(prompt_ids(tokenizer, task))


def test_unknown_strategy_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="expected one of"):
        OverLongPolicy("shorten")  # type: ignore[arg-type]


def test_episode_loop_records_the_error_strategy_as_a_failure(tokenizer: Any) -> None:
    domain = get_domain("arith/addition-v1")
    long_task = haystack_task()
    short_task = domain.generate(0, 1)
    engine = ReplayEngine(tokenizer)
    engine.add(short_task.id, domain.reference(short_task))
    engine.add(long_task.id, Reference.single("4821"))
    params = SamplingParams(max_tokens=64, temperature=0.0)
    long_rollout, short_rollout = (
        g[0]
        for g in run_episodes(
            [long_task, short_task], engine, tokenizer, params, get_domain, 0, 1024
        )
    )
    assert long_rollout.error is not None and "window is 1024" in long_rollout.error
    assert long_rollout.reward == 0.0 and not long_rollout.turns
    assert short_rollout.verdict.passed


@pytest.mark.parametrize("domain_id", ["longctx/needle-v1", "longctx/var-tracking-v1"])
def test_retrieve_keeps_a_long_context_domains_evidence(tokenizer: Any, domain_id: str) -> None:
    """A 2k-token window over a ~4.6k-SmolLM2-token (~20k-byte) task: the evidence
    sentences the domain names survive retrieval, and the question stays last."""
    task = get_domain(domain_id).generate(3, 3)
    policy = OverLongPolicy("retrieve", chunk_tokens=128)
    fitted = fit_prompt(task, tokenizer, 2048, 64, policy)
    content = fitted.prompt[-1].content
    assert prompt_length(tokenizer, fitted.prompt) <= 2048 - 64
    assert fitted.meta["context_fit"]["before"] > 4 * 2048
    assert content.endswith(task.meta["question"])
    for sentence in task.meta["evidence"]:
        assert sentence in content


def test_retrieve_with_room_for_no_chunk_is_a_prompt_too_long_error(tokenizer: Any) -> None:
    """A budget smaller than any chunk is this task's failure, never a crashed batch."""
    task = haystack_task()
    question_tokens = prompt_length(tokenizer, [Message("user", QUESTION)])
    window = question_tokens + 64 + 8  # room for the question and almost nothing else
    with pytest.raises(PromptTooLongError, match="could not"):
        fit_prompt(task, tokenizer, window, 64, OverLongPolicy("retrieve", chunk_tokens=96))


def test_retrieve_with_a_small_budget_names_the_budget_not_the_overlap(tokenizer: Any) -> None:
    """Chunks shrink to a small budget; their overlap shrinks with them (it was sized from
    `chunk_tokens` and refused as not below the chunk size)."""
    task = haystack_task()
    question_tokens = prompt_length(tokenizer, [Message("user", QUESTION)])
    window = question_tokens + 64 + 12  # a budget of about a dozen document tokens
    with pytest.raises(PromptTooLongError) as info:
        fit_prompt(task, tokenizer, window, 64, OverLongPolicy("retrieve", chunk_tokens=128))
    assert "overlap_tokens" not in str(info.value)
    assert "token_budget" in str(info.value)
