"""The OpenAI-compatible server, driven by the official `openai` client over loopback,
streaming included (and its incremental text, `SampleText`); checkpoint resolution;
the `serve` command's refusals."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import typer
from typer.testing import CliRunner

from posttrain.engines.base import Completion, GenerationRequest, SamplingParams
from posttrain.engines.hf import HFEngine
from posttrain.rollout.episode import encode, render
from posttrain.serve import CheckpointNotFoundError, resolve_checkpoint
from posttrain.serve.app import RunningServer, create_app, run_in_thread
from posttrain.serve.streaming import SampleText
from posttrain.types import Message

USER = [{"role": "user", "content": "12+30"}]


@pytest.fixture(scope="module")
def policy() -> Any:
    import torch

    from posttrain.models.loading import load_policy

    torch.set_num_threads(1)
    return load_policy("tiny", seed=0)


@pytest.fixture(scope="module")
def server(policy: Any) -> Iterator[RunningServer]:
    engine = HFEngine(policy.model, policy.tokenizer, seed=0)
    app = create_app(engine, policy.tokenizer, "tiny", max_context=512)
    with run_in_thread(app) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)


def direct(policy: Any, messages: list[Message], max_tokens: int) -> tuple[str, list[float]]:
    """Greedy text and logprobs of the model run in-process on the loop's rendering."""
    ids = encode(policy.tokenizer, render(policy.tokenizer, messages, add_generation_prompt=True))
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
    done = HFEngine(policy.model, policy.tokenizer).generate([GenerationRequest(ids, params)])
    return done[0][0].text, done[0][0].logprobs


def greedy(client: openai.OpenAI, messages: Any, **kw: Any) -> Any:
    return client.chat.completions.create(
        model="tiny", messages=messages, temperature=0, max_tokens=24, **kw
    )


def test_models_lists_the_served_model(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["tiny"]


def test_n_samples_come_back_with_usage(client: openai.OpenAI, policy: Any) -> None:
    out = client.chat.completions.create(
        model="tiny", messages=USER, n=3, temperature=1.0, max_tokens=8
    )
    assert [c.index for c in out.choices] == [0, 1, 2]
    prompt = encode(policy.tokenizer, render(policy.tokenizer, [Message("user", "12+30")], True))
    assert out.usage is not None and out.usage.prompt_tokens == len(prompt)
    assert out.usage.completion_tokens <= 3 * 8


def test_greedy_is_deterministic_and_equals_the_model_run_directly(
    client: openai.OpenAI, policy: Any
) -> None:
    first, second = greedy(client, USER), greedy(client, USER)
    expected, _ = direct(policy, [Message("user", "12+30")], 24)
    assert first.choices[0].message.content == second.choices[0].message.content == expected


def test_concurrent_clients_all_get_the_greedy_text(client: openai.OpenAI, policy: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: greedy(client, USER), range(6)))
    expected, _ = direct(policy, [Message("user", "12+30")], 24)
    assert [o.choices[0].message.content for o in outs] == [expected] * 6


def test_logprobs_are_the_sampled_tokens_logprobs(client: openai.OpenAI, policy: Any) -> None:
    out = greedy(client, USER, logprobs=True)
    _, expected = direct(policy, [Message("user", "12+30")], 24)
    got = [entry.logprob for entry in out.choices[0].logprobs.content]
    assert got == pytest.approx(expected[: len(got)], abs=1e-5)
    assert len(got) == 24  # every token is part of the text: the budget ran out


def test_max_tokens_ends_with_finish_reason_length(client: openai.OpenAI) -> None:
    out = client.chat.completions.create(
        model="tiny", messages=USER, temperature=0, max_completion_tokens=3
    )
    assert out.choices[0].finish_reason == "length"
    assert out.usage is not None and out.usage.completion_tokens == 3


def test_a_stop_string_cuts_the_text(client: openai.OpenAI) -> None:
    full = greedy(client, USER).choices[0].message.content
    stop = full[5:9]
    out = greedy(client, USER, stop=[stop])
    assert out.choices[0].message.content == full[: full.index(stop)]
    assert out.choices[0].finish_reason == "stop"


def test_streamed_chunks_concatenate_to_the_greedy_text(client: openai.OpenAI) -> None:
    full = greedy(client, USER).choices[0].message.content
    chunks = list(greedy(client, USER, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 24


def test_the_stream_ends_with_done(server: RunningServer) -> None:
    body = {"model": "tiny", "messages": USER, "max_tokens": 4, "stream": True}
    text = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=30).text
    events = [line for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[0][6:])["object"] == "chat.completion.chunk"


def test_a_wrong_api_key_is_refused_and_the_right_one_accepted(policy: Any) -> None:
    engine = HFEngine(policy.model, policy.tokenizer, seed=0)
    app = create_app(engine, policy.tokenizer, "tiny", api_key="sekret")
    with run_in_thread(app) as running:
        wrong = openai.OpenAI(base_url=running.base_url, api_key="nope", max_retries=0)
        with pytest.raises(openai.AuthenticationError, match="API key"):
            wrong.models.list()
        right = openai.OpenAI(base_url=running.base_url, api_key="sekret", max_retries=0)
        assert [m.id for m in right.models.list()] == ["tiny"]
        # a key outside ASCII (headers arrive as latin-1) is refused, not a 500
        odd = httpx.get(running.base_url + "/models", headers={"Authorization": b"Bearer s\xe9"})
        assert odd.status_code == 401 and "API key" in odd.text


def test_an_unknown_model_is_not_found_and_the_served_one_named(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError, match="'gpt-5'.*serves 'tiny'"):
        client.chat.completions.create(model="gpt-5", messages=USER, max_tokens=2)


def test_a_bad_body_is_a_400_naming_the_field(server: RunningServer) -> None:
    body = {"model": "tiny", "messages": [{"role": "wizard", "content": "hi"}]}
    response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=30)
    assert response.status_code == 400
    assert "messages.0.role" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_tokens", "3"), ("stream", "true"), ("n", 2.5), ("temperature", True), ("logprobs", 1)],
)
def test_a_field_of_the_wrong_json_type_is_a_400_not_coerced(
    server: RunningServer, field: str, value: Any
) -> None:
    # pydantic's default (lax) mode took "3" as 3 and "true" as True; OpenAI's API refuses both.
    body = {"model": "tiny", "messages": USER, "max_tokens": 3, field: value}
    response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=30)
    assert response.status_code == 400, response.text
    assert field in response.json()["error"]["message"]


def test_an_integer_temperature_is_still_a_number(server: RunningServer) -> None:
    body = {"model": "tiny", "messages": USER, "max_tokens": 3, "temperature": 0}
    response = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=30)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("field", "body"),
    [
        ("messages.0.content", '"messages": [{"role": "user", "content": "a\\ud800"}]'),
        ("messages.1.content", '"messages": [{"role": "system", "content": "x"},'
                               ' {"role": "user", "content": [{"type": "text", "text": "\\udc00"}]}]'),
        ("stop", '"messages": [{"role": "user", "content": "hi"}], "stop": ["\\ud800"]'),
    ],
)  # fmt: skip
def test_a_lone_surrogate_is_a_400_naming_the_field(
    server: RunningServer, field: str, body: str
) -> None:
    # JSON may escape a lone surrogate; UTF-8 cannot encode it: the prompt's tokenizer
    # raised (an unhandled 500) and a stop string failed the generation (a 500).
    raw = '{"model": "tiny", "max_tokens": 3, ' + body + "}"
    response = httpx.post(f"{server.base_url}/chat/completions", content=raw, timeout=30,
                          headers={"content-type": "application/json"})  # fmt: skip
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == field and "lone surrogate" in error["message"]


def test_null_n_stream_and_logprobs_mean_unset(server: RunningServer) -> None:
    """OpenAI's API takes null for every optional field; some clients send it."""
    body = {"model": "tiny", "messages": USER, "max_tokens": 3, "temperature": 0}
    plain = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=30).json()
    nulls = {**body, "n": None, "stream": None, "logprobs": None}
    response = httpx.post(f"{server.base_url}/chat/completions", json=nulls, timeout=30)
    assert response.status_code == 200
    answer = response.json()
    assert len(answer["choices"]) == 1 and answer["choices"][0]["logprobs"] is None
    assert answer["choices"][0]["message"] == plain["choices"][0]["message"]


def test_a_wrong_method_is_a_405_with_allow(server: RunningServer) -> None:
    response = httpx.get(f"{server.base_url}/chat/completions", timeout=30)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_request_beyond_the_context_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="context is 512 tokens"):
        client.chat.completions.create(model="tiny", messages=USER, max_tokens=600)


def test_messages_far_past_the_context_are_refused_before_tokenizing(client: openai.OpenAI) -> None:
    long = [{"role": "user", "content": "x" * (32 * 512 + 1)}]  # 32 characters per token
    with pytest.raises(openai.BadRequestError, match="16385 characters; the model's context"):
        client.chat.completions.create(model="tiny", messages=long, max_tokens=2)


def test_a_body_over_the_limit_is_a_413_before_it_is_read_or_its_key_checked(
    policy: Any,
) -> None:
    engine = HFEngine(policy.model, policy.tokenizer, seed=0)
    app = create_app(engine, policy.tokenizer, "tiny", max_context=512, api_key="sekret")
    big = b'{"model": "tiny", "messages": [' + b" " * (8 << 20) + b"]}"
    with run_in_thread(app) as running:
        url = f"{running.base_url}/chat/completions"
        response = httpx.post(url, content=big, timeout=30)
        assert response.status_code == 413, response.text
        assert "at most 8388608 are accepted" in response.json()["error"]["message"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it is read
            yield from (big[i : i + (1 << 20)] for i in range(0, len(big), 1 << 20))

        headers = {"Authorization": "Bearer sekret"}
        response = httpx.post(url, content=chunks(), headers=headers, timeout=30)
        assert response.status_code == 413, response.text
        assert response.json()["error"]["message"].startswith("the body takes over")


def test_a_chat_template_that_refuses_the_messages_is_a_400(policy: Any) -> None:
    class Strict:  # a template that needs user/assistant turns to alternate
        def __getattr__(self, name: str) -> Any:
            return getattr(policy.tokenizer, name)

        def apply_chat_template(self, *args: Any, **kwargs: Any) -> Any:
            raise ValueError("Conversation roles must alternate user/assistant/user/...")

    engine = HFEngine(policy.model, policy.tokenizer, seed=0)
    app = create_app(engine, Strict(), "tiny", max_context=512)
    with run_in_thread(app) as running:
        body = {"model": "tiny", "messages": USER + USER, "max_tokens": 2}
        response = httpx.post(f"{running.base_url}/chat/completions", json=body, timeout=30)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == "messages" and "roles must alternate" in error["message"]


def test_a_tool_conversation_renders_as_the_episode_loop_renders_it(
    client: openai.OpenAI, policy: Any
) -> None:
    call = '<tool_call>{"name":"calculator","arguments":{"expression":"18*7"}}</tool_call>'
    conversation = [
        Message("system", "use the calculator"),
        Message("user", "calc 18*7"),
        Message("assistant", call),
        Message("tool", "126", name="calculator"),
    ]
    sent = [{"role": m.role, "content": m.content} for m in conversation]
    sent[-1]["tool_call_id"] = "call_0"
    out = greedy(client, sent)
    prompt = encode(policy.tokenizer, render(policy.tokenizer, conversation, True))
    assert out.usage is not None and out.usage.prompt_tokens == len(prompt)
    assert out.choices[0].message.content == direct(policy, conversation, 24)[0]


# ---- checkpoint resolution and the command -------------------------------------------------


def fake_checkpoint(path: Path, complete: bool = True) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    if complete:
        (path / "COMPLETE").write_text("")
    return path


def test_a_run_directory_resolves_to_its_latest_stage(tmp_path: Path) -> None:
    fake_checkpoint(tmp_path / "checkpoints" / "sft")
    fake_checkpoint(tmp_path / "checkpoints" / "dpo")
    fake_checkpoint(tmp_path / "checkpoints" / "grpo", complete=False)  # still being written
    assert resolve_checkpoint(tmp_path) == tmp_path / "checkpoints" / "dpo"


def test_a_model_directory_resolves_to_itself(tmp_path: Path) -> None:
    model = fake_checkpoint(tmp_path / "model", complete=False)
    assert resolve_checkpoint(model) == model


def test_a_run_without_checkpoints_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "checkpoints").mkdir()
    with pytest.raises(CheckpointNotFoundError, match="no complete checkpoint.*grpo"):
        resolve_checkpoint(tmp_path)


def test_a_directory_that_is_neither_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointNotFoundError, match="neither a model directory"):
        resolve_checkpoint(tmp_path)


def serve_command() -> typer.Typer:
    from posttrain.cli_serve import serve

    app = typer.Typer()
    app.command()(serve)
    return app


def test_serving_a_missing_checkpoint_exits_2_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(serve_command(), [str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_an_unset_api_key_variable_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POSTTRAIN_TEST_KEY", raising=False)
    result = CliRunner().invoke(serve_command(), ["tiny", "--api-key-env", "POSTTRAIN_TEST_KEY"])
    assert result.exit_code == 2
    assert "$POSTTRAIN_TEST_KEY is not set" in result.output


# ---- streaming as tokens are sampled ----------------------------------------------------


class GatedEngine:
    """Plays `text` one byte token at a time; before its last token it waits (up to
    10 s) for `gate`, and records whether the gate was open by then."""

    def __init__(self, tokenizer: Any, text: str) -> None:
        self.text = text
        self.ids = list(tokenizer.encode(text, add_special_tokens=False))
        self.gate = threading.Event()
        self.gate_was_open: bool | None = None

    def generate(
        self, requests: list[GenerationRequest], on_token: Any = None
    ) -> list[list[Completion]]:
        for k, token in enumerate(self.ids):
            if k == len(self.ids) - 1:
                self.gate_was_open = self.gate.wait(10)
            if on_token is not None:
                on_token(0, 0, token, -1.0)
        return [[Completion(self.ids, [-1.0] * len(self.ids), self.text, "length")]]

    def update_weights(self, state_dict: Any) -> None:
        raise NotImplementedError


def streamed_text(chunks: list[Any], index: int = 0) -> str:
    return "".join(
        c.choices[0].delta.content or ""
        for c in chunks
        if c.choices and c.choices[0].index == index
    )


def test_the_first_chunk_arrives_before_the_last_token_is_sampled(policy: Any) -> None:
    engine = GatedEngine(policy.tokenizer, "hello world")
    with run_in_thread(create_app(engine, policy.tokenizer, "gated")) as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0)
        chunks = []
        for chunk in client.chat.completions.create(model="gated", messages=USER, stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                engine.gate.set()  # the client holds text while the engine still waits
            chunks.append(chunk)
    assert engine.gate_was_open is True
    assert streamed_text(chunks) == "hello world"


def test_a_streamed_stop_string_cuts_the_text_as_the_non_streamed_one(
    client: openai.OpenAI,
) -> None:
    full = greedy(client, USER).choices[0].message.content
    stop = "|><|as"  # spans two tokens: the first token's tail must be held back
    assert stop in full
    whole = greedy(client, USER, stop=[stop]).choices[0]
    chunks = list(greedy(client, USER, stop=[stop], stream=True))
    assert streamed_text(chunks) == whole.message.content == full[: full.index(stop)]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_n_streamed_samples_each_concatenate_to_their_text(client: openai.OpenAI) -> None:
    whole = greedy(client, USER, n=2)
    chunks = list(greedy(client, USER, n=2, stream=True))
    assert {c.choices[0].index for c in chunks if c.choices} == {0, 1}
    for index in (0, 1):
        assert streamed_text(chunks, index) == whole.choices[index].message.content


def test_streamed_logprobs_equal_the_non_streamed_ones(client: openai.OpenAI) -> None:
    whole = greedy(client, USER, logprobs=True).choices[0].logprobs.content
    chunks = list(greedy(client, USER, logprobs=True, stream=True))
    streamed = [
        e
        for c in chunks
        if c.choices and c.choices[0].logprobs
        for e in c.choices[0].logprobs.content
    ]
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in whole]


def test_a_client_leaving_mid_stream_leaves_the_server_serving(policy: Any) -> None:
    engine = GatedEngine(policy.tokenizer, "hello world")
    with run_in_thread(create_app(engine, policy.tokenizer, "gated")) as running:
        body = {"model": "gated", "messages": USER, "stream": True}
        url = f"{running.base_url}/chat/completions"
        with httpx.Client(timeout=30) as http, http.stream("POST", url, json=body) as response:
            for line in response.iter_lines():
                if '"content": "h"' in line:
                    break  # leave with the stream half read
        engine.gate.set()
        body["stream"] = False  # the lock was released: the next request is answered
        again = httpx.post(url, json=body, timeout=30).json()
    assert again["choices"][0]["message"]["content"] == "hello world"


class HeldEngine:
    """The tiny model's HFEngine behind a gate: `generate` signals `entered` (the
    request's body was read and the worker holds the lock), waits for `go`, then
    generates, sampling a token every 20 ms; `outcome` says how it ended."""

    def __init__(self, engine: HFEngine) -> None:
        self.engine, self.stop_ids = engine, engine.stop_ids
        self.entered, self.go, self.ended = threading.Event(), threading.Event(), threading.Event()
        self.outcome: str | None = None

    def generate(
        self, requests: list[GenerationRequest], on_token: Any = None
    ) -> list[list[Completion]]:
        self.entered.set()
        self.go.wait(10)

        def slowly(*token: Any) -> None:
            time.sleep(0.02)  # room for the server to react between tokens
            on_token(*token)

        try:
            done = self.engine.generate(requests, on_token=slowly if on_token else None)
        except Exception:
            self.outcome = "abandoned"
            raise
        finally:
            self.ended.set()
        self.outcome = "finished"
        return done

    def update_weights(self, state_dict: Any) -> None:
        raise NotImplementedError


def test_a_client_gone_before_the_first_chunk_abandons_the_generation(policy: Any) -> None:
    """Only `sse_events`' `finally` abandons a generation. It runs even for a client gone
    before the body is first iterated: Starlette's disconnect cancel lands, at the
    earliest, at the stream's first `await` (anyio starts a task before cancelling it,
    and uvicorn's `send` returns quietly on a closed connection), inside `sse_events`."""
    engine = HeldEngine(HFEngine(policy.model, policy.tokenizer, seed=0))
    app = create_app(engine, policy.tokenizer, "tiny", max_context=512)
    with run_in_thread(app) as running:
        body = {"model": "tiny", "messages": USER, "stream": True, "temperature": 0}
        body["max_tokens"] = 100
        raw = json.dumps(body).encode()
        address = ("127.0.0.1", httpx.URL(running.base_url).port)
        with socket.create_connection(address, timeout=10) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(raw)}\r\n\r\n".encode()
                + raw
            )
            assert engine.entered.wait(10)  # the handler waits for the first token
        time.sleep(0.5)  # the server sees the connection closed before it answers
        engine.go.set()
        assert engine.ended.wait(30)
        assert engine.outcome == "abandoned"  # not 100 tokens sampled for nobody
        body["stream"] = False  # and the lock was released: the next request is answered
        again = httpx.post(f"{running.base_url}/chat/completions", json=body, timeout=30)
    assert again.status_code == 200 and engine.outcome == "finished"


def test_a_client_that_gives_up_on_a_non_streamed_request_abandons_it(policy: Any) -> None:
    """An SDK's timeout closes the connection; the engine stops at its next token and the
    next request is answered at once instead of after the orphaned generation."""
    engine = HeldEngine(HFEngine(policy.model, policy.tokenizer, seed=0))
    app = create_app(engine, policy.tokenizer, "tiny", max_context=512)
    with run_in_thread(app) as running:
        body = {"model": "tiny", "messages": USER, "temperature": 0, "max_tokens": 200}
        url = f"{running.base_url}/chat/completions"

        def give_up() -> None:
            with contextlib.suppress(httpx.TimeoutException):
                httpx.post(url, json=body, timeout=0.5)

        leaving = threading.Thread(target=give_up)
        leaving.start()
        assert engine.entered.wait(10)
        engine.go.set()
        leaving.join(10)
        assert engine.ended.wait(10)  # 200 tokens at 20 ms each would take 4 s
        assert engine.outcome == "abandoned"
        again = httpx.post(url, json={**body, "max_tokens": 2}, timeout=30)
        assert again.status_code == 200, again.text


def test_a_stream_never_started_still_abandons_the_generation(policy: Any) -> None:
    """Under a server whose `send` raises on a closed connection, the response fails at
    its start and `sse_events` is never iterated: `AbandoningStream` stops the worker."""
    engine = HeldEngine(HFEngine(policy.model, policy.tokenizer, seed=0))
    app = create_app(engine, policy.tokenizer, "tiny", max_context=512)
    body = {"model": "tiny", "messages": USER, "stream": True, "temperature": 0}
    raw = json.dumps({**body, "max_tokens": 100}).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
        "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2), "headers": [(b"content-type", b"application/json")],
    }  # fmt: skip
    messages = [{"type": "http.request", "body": raw, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.sleep(60)  # the client says nothing more
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        raise OSError("the connection is closed")

    async def call() -> None:
        asgi = asyncio.create_task(app(scope, receive, send))
        await asyncio.to_thread(engine.entered.wait, 10)
        engine.go.set()
        with contextlib.suppress(Exception):
            await asgi
        # the loop stays open meanwhile (a closed loop also stops the worker)
        assert await asyncio.to_thread(engine.ended.wait, 30)

    asyncio.run(call())
    assert engine.outcome == "abandoned"


def feed(tokenizer: Any, text: str, stop: tuple[str, ...]) -> list[str]:
    """The deltas `SampleText` hands out for `text` fed one byte token at a time."""
    sample = SampleText(tokenizer, stop, frozenset({tokenizer.eos_token_id}))
    ids = list(tokenizer.encode(text, add_special_tokens=False)) + [tokenizer.eos_token_id]
    deltas = [sample.push(token, -1.0)[0] for token in ids]
    cut = text.find(stop[0]) if stop and stop[0] in text else len(text)
    return [*deltas, sample.finish(text[:cut])[0]]


def test_a_character_split_over_tokens_is_sent_whole(policy: Any) -> None:
    deltas = feed(policy.tokenizer, "é€x", stop=())
    assert [d for d in deltas if d] == ["é", "€", "x"]


def test_text_that_may_begin_a_stop_string_is_held_back(policy: Any) -> None:
    deltas = feed(policy.tokenizer, "ab xy, xyz tail", stop=("xyz",))
    assert deltas[:6] == ["a", "b", " ", "", "", "xy,"]  # "x", "xy" wait; "xy," cannot stop
    assert "".join(deltas) == "ab xy, "


def test_a_token_after_an_invalid_byte_starts_after_it(policy: Any) -> None:
    """Its text once started before the U+FFFD that stays one (an invalid byte), so the
    token of a cut stop string got a logprob entry."""
    tok = policy.tokenizer  # byte-level: token id b is byte b
    ids = [ord("x"), 0x80, ord("S"), ord("z")]
    sample = SampleText(tok, ("S",), frozenset())
    entries = [e for token in ids for e in sample.push(token, -1.0)[1]]
    text = tok.decode(ids[:2])
    entries += sample.finish(text)[1]
    assert text.endswith("\ufffd") and len(entries) == 2  # x and the invalid byte, not S
