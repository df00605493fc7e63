"""`longctx` prompt lengths in SmolLM2-135M tokens, and generation time at 100k and 1M tokens."""

from __future__ import annotations

import time
from typing import Any

import pytest

from posttrain.domains.longctx import DOMAINS
from posttrain.domains.longctx.lookup import NeedleDomain
from posttrain.models import smollm2_tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return smollm2_tokenizer()


def _prompt_tokens(tokenizer: Any, domain: Any, seed: int, difficulty: int) -> tuple[int, int]:
    task = domain.generate(seed, difficulty)
    # Goal retention spreads its length over the later user turns of the script.
    texts = [m.content for m in task.prompt] + list(task.meta.get("user_turns", []))
    count = sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    return count, domain.tokens(difficulty)


@pytest.mark.parametrize("difficulty", [1, 4, 7])
def test_prompt_tokens_are_within_15_percent_of_the_target(tokenizer: Any, difficulty: int) -> None:
    for domain in DOMAINS:
        count, target = _prompt_tokens(tokenizer, domain, 0, difficulty)
        assert abs(count - target) <= 0.15 * target, (domain.id, count, target)


def test_spanned_prompt_tokens_follow_the_span(tokenizer: Any) -> None:
    for domain in DOMAINS:
        spanned = domain.with_span(256, 2048)
        for difficulty in (1, 10):
            count, target = _prompt_tokens(tokenizer, spanned, 1, difficulty)
            assert abs(count - target) <= 0.3 * target, (spanned.id, count, target)


def test_a_64_token_span_stays_short(tokenizer: Any) -> None:
    for domain in DOMAINS:
        count, _ = _prompt_tokens(tokenizer, domain.with_span(64, 512), 2, 1)
        assert count <= 200, (domain.id, count)


def test_a_100k_token_task_generates_in_under_5_seconds() -> None:
    for domain in DOMAINS:
        start = time.perf_counter()
        domain.generate(3, 7)
        assert time.perf_counter() - start < 5.0, domain.id


@pytest.mark.slow
def test_a_1m_token_task_generates_in_under_30_seconds(tokenizer: Any) -> None:
    start = time.perf_counter()
    task = NeedleDomain().generate(4, 10)
    assert time.perf_counter() - start < 30.0
    count = len(tokenizer(task.prompt[0].content, add_special_tokens=False)["input_ids"])
    assert abs(count - 1_000_000) <= 150_000
