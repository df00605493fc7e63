"""Token counting: the model's tokenizer, and the chars/4 estimate."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from posttrain.context.tokens import TokenCounter, token_counter, token_spans


def test_estimate_is_chars_over_four_rounded_up() -> None:
    counter = token_counter(None)
    assert [counter.count(t) for t in ("", "abc", "abcd", "abcde")] == [0, 1, 1, 2]


def test_tokenizer_count_excludes_special_tokens(smollm2: Any) -> None:
    text = "The Marlow warehouse's backup generator."
    expected = len(smollm2(text, add_special_tokens=False)["input_ids"])
    assert token_counter(smollm2).count(text) == expected


def test_byte_level_tokenizer_counts_bytes(tokenizer: Any) -> None:
    assert token_counter(tokenizer).count("héllo") == len("héllo".encode())


def test_count_batch_matches_count(smollm2: Any) -> None:
    counter = token_counter(smollm2)
    texts = ["one two", "", "a longer sentence, with punctuation!"]
    assert counter.count_batch(texts) == [counter.count(t) for t in texts]  # type: ignore[attr-defined]


def test_an_object_with_count_is_used_as_it_is() -> None:
    class Words:
        def count(self, text: str) -> int:
            return len(text.split())

    counter = token_counter(Words())
    assert isinstance(counter, TokenCounter) and counter.count("a b c") == 3


def test_token_spans_start_at_token_offsets(smollm2: Any) -> None:
    text = "alpha beta\n\ngamma"
    (starts,) = token_spans(smollm2, [text])
    assert starts[0] == 0 and list(starts) == sorted(starts)
    assert len(starts) == token_counter(smollm2).count(text)


def test_a_tokenizer_left_truncating_and_padding_still_counts_every_token() -> None:
    from posttrain.models import smollm2_tokenizer

    tok = copy.deepcopy(smollm2_tokenizer())  # its own backend: the session fixture stays clean
    text = "word " * 200
    expected = token_counter(tok).count(text)
    # A trainer's padded, truncated batch leaves both switched on in the Rust backend.
    tok(["short", "a batch"], padding="max_length", truncation=True, max_length=16)
    assert tok.backend_tokenizer.truncation is not None
    counter = token_counter(tok)
    assert counter.count(text) == expected > 16
    assert counter.count_batch(["a", text]) == [1, expected]  # type: ignore[attr-defined]
    assert len(token_spans(tok, [text])[0]) == expected
    assert tok.backend_tokenizer.truncation is not None  # the tokenizer's own settings stay


def test_something_that_cannot_count_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="cannot count tokens with a function"):
        token_counter(lambda text: text.split())
