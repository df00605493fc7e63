"""OpenAIEngine's reading of replies: server logprobs kept only when they are valid and
belong to the local tokens; structured tool calls, bodies that do not decode and
failures that no request escapes named as such."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from posttrain.engines.base import EngineUnavailable
from posttrain.engines.openai import EndpointError
from tests.engines.test_openai import ask, engine_for, fake, reply


def with_logprobs(text: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    answer = reply(text)
    answer["choices"][0]["logprobs"] = {"content": entries}
    return answer


def test_server_logprobs_of_the_local_tokens_are_kept() -> None:
    # 1e-7 is a near-certain token's logprob rounded above 0 by the server's float math
    entries = [{"token": "h", "logprob": -0.5}, {"token": "i", "logprob": 1e-7}]
    handler, _ = fake(lambda r: httpx.Response(200, json=with_logprobs("hi", entries)))
    with engine_for(handler) as engine:
        [completion] = ask(engine)
    assert completion.logprobs == [-0.5, 0.0] and completion.extra["server_logprobs"] == 1.0


@pytest.mark.parametrize(
    "entries",
    [
        # as many entries as local tokens, but "é" is one server token, two local ones
        [
            {"token": "h", "logprob": -0.1},
            {"token": "é", "logprob": -0.2},
            {"token": "?", "logprob": -5.0},
        ],  # fmt: skip
        # the same count and text, other boundaries: "hé" is h + two bytes locally
        [
            {"token": "hé", "logprob": -0.1},
            {"token": "", "logprob": -0.2},
            {"token": "", "logprob": -0.3},
        ],  # fmt: skip
        [{"logprob": -0.1}, {"logprob": -0.2}, {"logprob": -0.3}],  # no tokens to compare
    ],
    ids=["other-tokens", "other-boundaries", "no-tokens"],
)
def test_server_logprobs_of_other_tokens_are_dropped(entries: list[dict[str, Any]]) -> None:
    handler, _ = fake(lambda r: httpx.Response(200, json=with_logprobs("hé", entries)))
    with engine_for(handler) as engine:
        [completion] = ask(engine)
    assert completion.token_ids == [104, 195, 169]  # the byte-level tokenizer's encoding
    assert completion.logprobs == [0.0, 0.0, 0.0] and completion.extra["server_logprobs"] == 0.0


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "0.5"])
def test_a_logprob_that_is_not_a_finite_number_at_most_zero_is_refused(bad: str) -> None:
    body = (
        '{"choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop", '
        '"logprobs": {"content": [{"token": "h", "logprob": -1.0}, '
        f'{{"token": "i", "logprob": {bad}}}]}}}}]}}'
    )
    handler, _ = fake(lambda r: httpx.Response(200, content=body.encode()))
    with engine_for(handler) as engine, pytest.raises(EndpointError, match="for token 1: a logprob"):  # fmt: skip
        ask(engine)


def test_structured_tool_calls_are_refused_rather_than_read_as_an_empty_turn() -> None:
    answer = reply("")
    answer["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "calc", "arguments": "{}"}}
        ],  # fmt: skip
    }
    handler, _ = fake(lambda r: httpx.Response(200, json=answer))
    with engine_for(handler) as engine, pytest.raises(EndpointError, match="structured tool_calls"):
        ask(engine)


def test_a_body_that_does_not_decode_is_an_endpoint_error_naming_the_url() -> None:
    def garbled(request: httpx.Request) -> httpx.Response:  # read by the client, not here
        stream = httpx.ByteStream(b"\x00\x01garbage")
        return httpx.Response(200, headers={"Content-Encoding": "gzip"}, stream=stream)

    handler, seen = fake(garbled)
    with engine_for(handler) as engine, pytest.raises(EndpointError, match=r"POST http://127\.0\.0\.1:9/v1/chat/completions failed: DecodingError"):  # fmt: skip
        ask(engine)
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("status", "unavailable"),
    [(400, False), (413, False), (422, False), (401, True), (404, True), (503, True)],
)
def test_only_refusals_that_may_be_one_requests_leave_the_engine_available(
    status: int, unavailable: bool
) -> None:
    handler, _ = fake(lambda r: httpx.Response(status, json={"error": {"message": "no"}}))
    with engine_for(handler, max_retries=0) as engine, pytest.raises(EndpointError) as raised:
        ask(engine)
    assert isinstance(raised.value, EngineUnavailable) == unavailable
