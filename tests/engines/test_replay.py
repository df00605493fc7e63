"""ReplayEngine: scripted assistant turns played through the Engine interface."""

from __future__ import annotations

from typing import Any

import pytest

from posttrain.engines import Engine, GenerationRequest, ReplayEngine, SamplingParams
from posttrain.types import Message, Reference

PARAMS = SamplingParams(max_tokens=8, temperature=0.0)


def play(engine: ReplayEngine, key: str, turn: int, n: int = 1) -> list[Any]:
    params = SamplingParams(max_tokens=8, temperature=0.0, n=n)
    [completions] = engine.generate([GenerationRequest([1], params, key=key, turn=turn)])
    return completions


def test_replay_engine_satisfies_the_engine_protocol(tokenizer: Any) -> None:
    assert isinstance(ReplayEngine(tokenizer), Engine)


def test_turns_are_played_in_order_and_closed_with_eos(tokenizer: Any) -> None:
    engine = ReplayEngine(tokenizer, {"ep": ["first", "second"]})
    eos = tokenizer.eos_token_id
    for turn, text in enumerate(["first", "second"]):
        [completion] = play(engine, "ep", turn)
        assert completion.text == text
        assert completion.token_ids == [*tokenizer.encode(text, add_special_tokens=False), eos]
        assert completion.logprobs == [0.0] * len(completion.token_ids)
        assert completion.finish_reason == "stop"


def test_a_turn_past_the_script_is_empty(tokenizer: Any) -> None:
    engine = ReplayEngine(tokenizer, {"ep": ["only"]})
    [completion] = play(engine, "ep", 1)
    assert completion.text == ""
    assert completion.token_ids == [tokenizer.eos_token_id]
    assert completion.finish_reason == "stop"


def test_an_unknown_episode_key_raises_key_error(tokenizer: Any) -> None:
    engine = ReplayEngine(tokenizer, {"ep": ["only"]})
    with pytest.raises(KeyError, match="no-such-episode"):
        play(engine, "no-such-episode", 0)


def test_added_references_play_their_assistant_turns(tokenizer: Any) -> None:
    engine = ReplayEngine(tokenizer)
    engine.add("ep", Reference([Message("assistant", "call"), Message("assistant", "42")]))
    assert [play(engine, "ep", t)[0].text for t in range(3)] == ["call", "42", ""]


def test_n_copies_of_the_turn_come_back(tokenizer: Any) -> None:
    engine = ReplayEngine(tokenizer, {"ep": ["same"]})
    assert [c.text for c in play(engine, "ep", 0, n=3)] == ["same"] * 3


def test_requests_are_answered_each_from_its_own_script(tokenizer: Any) -> None:
    engine = ReplayEngine(tokenizer, {"a": ["one", "two"], "b": ["three"]})
    requests = [
        GenerationRequest([1], PARAMS, key="a", turn=1),
        GenerationRequest([1], PARAMS, key="b", turn=0),
        GenerationRequest([1], PARAMS, key="a", turn=0),
    ]
    texts = [completions[0].text for completions in engine.generate(requests)]
    assert texts == ["two", "three", "one"]
