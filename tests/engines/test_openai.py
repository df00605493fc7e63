"""OpenAIEngine: evaluation through a served checkpoint equals evaluation in-process;
clear errors for unreachable servers, refused keys and unserved models; retries
only where a retry can help."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from posttrain.engines.base import GenerationRequest, SamplingParams
from posttrain.engines.openai import (
    EndpointError,
    OpenAIEngine,
    RemoteWeightsError,
    parse_openai_spec,
)
from posttrain.types import Message

URL = "http://127.0.0.1:9/v1"  # MockTransport tests never open a socket
DOMAINS = ("arith/addition-v1", "text/reverse-v1", "tools/calculator-v1")
MODELS = {"object": "list", "data": [{"id": "tiny", "object": "model"}]}


@pytest.fixture(scope="module")
def sft_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model SFT-trained for ~100 steps on the three domains' references, so it
    answers in format, calls the calculator, and (seed 0) passes a task by luck."""
    import torch

    from posttrain.config import SFTConfig
    from posttrain.domains import get_domain
    from posttrain.models.loading import load_policy
    from posttrain.models.tiny import TinyModelSpec
    from posttrain.rollout.episode import replay_references
    from posttrain.train.checkpoint import save_checkpoint
    from posttrain.train.sft import train_sft

    torch.set_num_threads(1)
    spec = TinyModelSpec(hidden_size=64, num_layers=1, num_heads=2, intermediate_size=128)
    policy = load_policy("tiny", seed=0, spec=spec)
    tasks = [get_domain(d).generate(s, 1 + s % 2) for d in DOMAINS for s in range(50)]
    demos = replay_references(tasks, policy.tokenizer, get_domain)
    cfg = SFTConfig(batch_size=8, lr=1e-2, warmup_steps=0, max_steps=100, eval_every=100)
    train_sft(policy.model, demos, demos[:8], cfg, policy.tokenizer.pad_token_id, seed=0)
    return save_checkpoint(tmp_path_factory.mktemp("ckpt") / "sft", policy, "sft", 100)


def test_evaluation_through_the_server_equals_evaluation_in_process(sft_checkpoint: Path) -> None:
    from posttrain.domains import get_domain
    from posttrain.engines.hf import HFEngine
    from posttrain.eval.evaluate import evaluate
    from posttrain.models.loading import load_model_dir
    from posttrain.serve.app import app_for_checkpoint, run_in_thread
    from posttrain.train.mixture import heldout_tasks

    policy = load_model_dir(sft_checkpoint)
    tok = policy.tokenizer
    tasks = heldout_tasks([get_domain(d) for d in DOMAINS], 4, 10**9, difficulties=(1, 2))
    local = evaluate("local", tasks, HFEngine(policy.model, tok), tok, get_domain, 64)
    with (
        run_in_thread(app_for_checkpoint(str(sft_checkpoint))) as server,
        OpenAIEngine(server.base_url, tokenizer=tok, backoff_s=0) as engine,
    ):
        served = evaluate("served", tasks, engine, tok, get_domain, 64)

    assert served.passed == local.passed
    for a, b in zip(local.rollouts, served.rollouts, strict=True):
        assert [t.text for t in b.turns] == [t.text for t in a.turns], a.task_id
        assert [m.content for m in b.messages] == [m.content for m in a.messages], a.task_id
    # What makes the equality worth having: varied answers and a tool turn went through.
    assert any(len(r.turns) > 1 for r in local.rollouts)
    assert len({r.final_text for r in local.rollouts}) > 3


# ---- a fake server ---------------------------------------------------------------------


def reply(text: str = "42", finish: str = "stop", n: int = 1) -> dict[str, Any]:
    choices = [
        {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        for i in range(n)
    ]
    return {"choices": choices, "usage": {"prompt_tokens": 5, "completion_tokens": 3 * n}}


Handler = Callable[[httpx.Request], httpx.Response | Awaitable[httpx.Response]]


def fake(on_chat: Handler, models: dict[str, Any] = MODELS) -> tuple[Handler, list[httpx.Request]]:
    """A MockTransport handler answering /models with `models` and chats with `on_chat`,
    and the list of chat requests it saw."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json=models)
        seen.append(request)
        return on_chat(request)

    return handle, seen


def engine_for(handler: Handler, **kw: Any) -> OpenAIEngine:
    from posttrain.models.tiny import build_tokenizer

    kw.setdefault("backoff_s", 0.0)
    return OpenAIEngine(
        URL, tokenizer=build_tokenizer(), transport=httpx.MockTransport(handler), **kw
    )


def ask(engine: OpenAIEngine, params: SamplingParams | None = None) -> Any:
    request = GenerationRequest([1], params or SamplingParams(), messages=[Message("user", "hi")])
    return engine.generate([request])[0]


@pytest.fixture
def closed_port() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    yield port


def test_an_unreachable_server_fails_fast_with_a_clear_message(closed_port: int) -> None:
    from posttrain.models.tiny import build_tokenizer

    url = f"http://127.0.0.1:{closed_port}/v1"
    start = time.monotonic()
    with pytest.raises(EndpointError, match=f"cannot reach {url}: connection refused"):
        OpenAIEngine(url, tokenizer=build_tokenizer(), backoff_s=0.0, max_retries=2)
    assert time.monotonic() - start < 5


def test_an_unserved_model_is_refused_listing_the_served_ones() -> None:
    handler, _ = fake(lambda r: httpx.Response(200, json=reply()))
    with pytest.raises(EndpointError, match="'gpt-5' is not served by .*; it serves: tiny"):
        engine_for(handler, model="gpt-5")


def test_several_served_models_need_a_name() -> None:
    several = {"data": [{"id": "a"}, {"id": "b"}]}
    handler, _ = fake(lambda r: httpx.Response(200, json=reply()), several)
    with pytest.raises(EndpointError, match=r"serves 2 models \(a, b\); name one"):
        engine_for(handler)


def test_a_refused_key_names_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTTRAIN_TEST_KEY", "wrong")
    handler = lambda r: httpx.Response(401, json={"error": {"message": "bad key"}})  # noqa: E731
    with pytest.raises(EndpointError, match=r"refused the API key from \$POSTTRAIN_TEST_KEY"):
        engine_for(handler, api_key_env="POSTTRAIN_TEST_KEY")


def test_the_key_is_sent_as_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTTRAIN_TEST_KEY", "sekret")
    handler, seen = fake(lambda r: httpx.Response(200, json=reply()))
    ask(engine_for(handler, api_key_env="POSTTRAIN_TEST_KEY"))
    assert seen[0].headers["authorization"] == "Bearer sekret"


def test_a_503_is_retried_until_it_succeeds() -> None:
    answers = iter([httpx.Response(503), httpx.Response(503), httpx.Response(200, json=reply())])
    handler, seen = fake(lambda r: next(answers))
    assert ask(engine_for(handler, max_retries=3))[0].text == "42"
    assert len(seen) == 3


def test_retries_give_up_after_max_retries() -> None:
    handler, seen = fake(lambda r: httpx.Response(429, json={"error": {"message": "slow down"}}))
    with pytest.raises(EndpointError, match=r"HTTP 429: slow down \(3 attempts\)"):
        ask(engine_for(handler, max_retries=2))
    assert len(seen) == 3


def test_a_400_is_never_retried() -> None:
    handler, seen = fake(lambda r: httpx.Response(400, json={"error": {"message": "bad n"}}))
    with pytest.raises(EndpointError, match="HTTP 400: bad n"):
        ask(engine_for(handler, max_retries=3))
    assert len(seen) == 1


def test_sampling_params_are_sent_with_greedy_as_temperature_zero() -> None:
    handler, seen = fake(lambda r: httpx.Response(200, json=reply(n=2)))
    params = SamplingParams(max_tokens=7, temperature=0.0, n=2, stop=("\n",))
    assert len(ask(engine_for(handler), params)) == 2
    body = json.loads(seen[0].content)
    assert (body["temperature"], body["n"], body["max_tokens"], body["stop"]) == (0.0, 2, 7, ["\n"])
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["model"] == "tiny"


def test_completions_carry_local_token_ids_and_mapped_finish_reasons() -> None:
    handler, _ = fake(lambda r: httpx.Response(200, json=reply("abc", "tool_calls")))
    completion = ask(engine_for(handler))[0]
    assert completion.token_ids == [97, 98, 99]  # the byte-level tokenizer's encoding
    assert completion.logprobs == [0.0, 0.0, 0.0]  # the server sent none
    assert completion.finish_reason == "stop"
    assert completion.extra["completion_tokens"] == 3


def test_a_request_without_messages_is_refused() -> None:
    handler, _ = fake(lambda r: httpx.Response(200, json=reply()))
    with pytest.raises(ValueError, match="request 0 has no messages"):
        engine_for(handler).generate([GenerationRequest([1], SamplingParams())])


def test_weights_cannot_be_pushed_to_a_remote_engine() -> None:
    handler, _ = fake(lambda r: httpx.Response(200, json=reply()))
    with pytest.raises(RemoteWeightsError, match="cannot take weights"):
        engine_for(handler).update_weights({})


def test_a_spec_names_the_url_and_optionally_the_model() -> None:
    assert parse_openai_spec("openai:http://127.0.0.1:8000/v1#tiny") == (
        "http://127.0.0.1:8000/v1",
        "tiny",
    )
    assert parse_openai_spec("openai:https://example.test/v1/") == ("https://example.test/v1", None)


@pytest.mark.parametrize("spec", ["http://127.0.0.1:8000/v1", "openai:", "openai:ftp://x/v1"])
def test_a_malformed_spec_is_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="openai:"):
        parse_openai_spec(spec)


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, text="<html>a proxy's error page</html>"),
        httpx.Response(200, json=["not", "an", "object"]),
        httpx.Response(200, json={"choices": ["not a choice"]}),
        httpx.Response(200, json={"choices": [{"message": {"content": 42}}]}),
        httpx.Response(
            200,
            json={"choices": [{"message": {"content": "a"}, "logprobs": {"content": [{}]}}]},
        ),
    ],
    ids=["not-json", "a-list", "a-string-choice", "non-text-content", "logprobs-without-logprob"],
)
def test_a_malformed_chat_completion_raises_an_endpoint_error(answer: httpx.Response) -> None:
    handler, seen = fake(lambda r: answer)
    with pytest.raises(EndpointError, match=r"/chat/completions answered with a malformed chat"):
        ask(engine_for(handler, max_retries=3))
    assert len(seen) == 1  # the server answered: retrying would not change its answer


# ---- timeout_s is a deadline for the whole call ---------------------------------------


class Trickler(BaseHTTPRequestHandler):
    """Answers /models at once and a chat one byte every 50 ms (the body only, or the
    status line and headers too): per-read timeouts never fire, the reply takes ~10 s."""

    server: TricklingServer

    def do_GET(self) -> None:
        self.answer(json.dumps(MODELS).encode(), trickle=False)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.answer(json.dumps(reply()).encode(), trickle=True)

    def answer(self, body: bytes, trickle: bool) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        if not trickle:
            self.wfile.write(head + body)
            return
        if not self.server.trickle_headers:
            self.wfile.write(head)
            head = b""
        try:
            for byte in head + body:
                if self.server.stopping.wait(0.05):
                    return
                self.wfile.write(bytes([byte]))
        except OSError:  # the client hung up
            return

    def log_message(self, *args: Any) -> None:
        pass


class TricklingServer(ThreadingHTTPServer):
    trickle_headers = False
    stopping = threading.Event()


@contextlib.contextmanager
def trickling_server(trickle_headers: bool) -> Iterator[str]:
    """A loopback server on 127.0.0.1 (a free port) that trickles its chat replies; its URL."""
    server = TricklingServer(("127.0.0.1", 0), Trickler)
    server.trickle_headers = trickle_headers
    server.stopping = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize("trickle_headers", [False, True], ids=["body", "headers"])
def test_a_trickling_server_is_cut_off_at_timeout_s(trickle_headers: bool) -> None:
    from posttrain.models.tiny import build_tokenizer

    with (
        trickling_server(trickle_headers) as url,
        OpenAIEngine(url, tokenizer=build_tokenizer(), timeout_s=0.4, backoff_s=0.0) as engine,
    ):
        start = time.monotonic()
        with pytest.raises(
            EndpointError,
            match=f"POST {url}/chat/completions got no complete answer within timeout_s=0.4 s",
        ):
            ask(engine)
        assert 0.35 < time.monotonic() - start < 1.0


def test_retries_share_the_deadline() -> None:
    async def slow_503(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.2)
        return httpx.Response(503)

    handler, seen = fake(slow_503)
    start = time.monotonic()
    with pytest.raises(EndpointError, match=r"within timeout_s=0.5 s \(3 attempts; before: .*503"):
        ask(engine_for(handler, max_retries=5, timeout_s=0.5))
    assert time.monotonic() - start < 1.0 and len(seen) == 3


def test_a_retry_that_would_start_past_the_deadline_is_not_waited_for() -> None:
    handler, seen = fake(lambda r: httpx.Response(503, headers={"retry-after": "5"}))
    start = time.monotonic()
    with pytest.raises(EndpointError, match=r"HTTP 503.*\(1 attempt; no time left .*=0.5 s\)"):
        ask(engine_for(handler, max_retries=3, timeout_s=0.5))
    assert time.monotonic() - start < 0.5 and len(seen) == 1


def test_waiting_for_a_concurrency_slot_does_not_count_against_the_deadline() -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.2)
        return httpx.Response(200, json=reply())

    handler, _ = fake(slow)
    engine = engine_for(handler, concurrency=1, timeout_s=0.3)
    request = GenerationRequest([1], SamplingParams(), messages=[Message("user", "hi")])
    answers = engine.generate([request] * 3)  # 0.6 s in all, each 0.2 s once sent
    assert [a[0].text for a in answers] == ["42"] * 3


def test_a_non_positive_timeout_is_refused() -> None:
    handler, _ = fake(lambda r: httpx.Response(200, json=reply()))
    with pytest.raises(ValueError, match="timeout_s must be > 0, got 0"):
        engine_for(handler, timeout_s=0)


def test_close_ends_a_generate_in_flight_with_a_clear_error() -> None:
    """close() stopped the loop under a waiting generate, which then waited forever."""
    sent = threading.Event()

    async def hang(request: httpx.Request) -> httpx.Response:
        sent.set()
        await asyncio.sleep(60)
        return httpx.Response(200, json=reply())

    handler, _ = fake(hang)
    engine = engine_for(handler, timeout_s=60)
    failures: list[BaseException] = []

    def generate() -> None:
        try:
            ask(engine)
        except BaseException as exc:
            failures.append(exc)

    caller = threading.Thread(target=generate, daemon=True)
    caller.start()
    assert sent.wait(5)
    engine.close()
    caller.join(5)
    assert not caller.is_alive(), "generate still waits after close()"
    assert len(failures) == 1 and isinstance(failures[0], EndpointError)
    assert "closed while a request was in flight" in str(failures[0])
    with pytest.raises(EndpointError, match="is closed"):
        ask(engine)
    engine.close()  # idempotent
