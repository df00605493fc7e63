"""An OpenAI-compatible chat-completions server for one engine (a checkpoint, usually).

    from posttrain.serve.app import app_for_checkpoint, run_in_thread
    app = app_for_checkpoint("runs/20260509-142301", api_key="sekret")
    with run_in_thread(app) as server:        # 127.0.0.1, a free port
        openai.OpenAI(base_url=server.base_url, api_key="sekret").chat.completions.create(...)

Endpoints: `GET /v1/models`, `GET /v1/models/{id}`, `POST /v1/chat/completions`
(`messages` with roles system/user/assistant/tool, `n`, `temperature` (0 =
greedy), `top_p`, `max_tokens` or `max_completion_tokens`, `stop`, `stream`,
`stream_options.include_usage`, `logprobs`). The prompt is the tokenizer's chat
template over `messages`, rendered and encoded exactly as the episode loop does
(`rollout.episode.render` + `encode`), so a served model samples the same tokens as
the model run directly. One engine serves every client: calls are serialized by a
lock and run in a worker thread, so the event loop keeps answering. Errors use
OpenAI's JSON shape (`{"error": {"message", "type", "param", "code"}}`): 400 for a
bad body (a lone surrogate in a text or stop string too, a chat template that refuses
the messages), 401 for a missing or wrong API key, 404 for a model not served, 413 for
a body over `MAX_BODY_BYTES` (8 MiB; refused on its Content-Length before it is read),
500 for anything unexpected. Prompts are rendered and tokenized in a worker thread
too, after a quick refusal of messages over 32 characters per context token.

`stream: true` sends text as it is sampled (`posttrain.serve.streaming`): the
engine runs on a worker thread that holds the lock for the whole generation, and
each chunk is the text that can no longer change; streamed chunks concatenate to the
non-streamed text.

Not guaranteed: a stream only streams with an engine whose `generate` takes
`on_token` (HFEngine); with any other engine it sends the finished completion in
per-token chunks. Chunks are cut where the text is settled, not one per token: a
multi-byte character, or text that could begin a stop string, waits for the tokens
that settle it. A failure after the first token ends the stream with an `error`
event instead of a 500. Stop strings are cut from the text (OpenAI's rule), while
`usage.completion_tokens` counts every sampled token, end-of-turn token included.
Structured `tool_calls` in requests are ignored and never returned: this model
family writes its tool calls as text (`<tool_call>{json}</tool_call>`) in
`content`. `logprobs` lists the tokens whose text begins inside `content` (not the
end-of-turn token, nor the tokens of a cut stop string). `top_logprobs`, `seed`,
penalties and other unknown fields are not honoured (unknown fields are ignored,
`top_logprobs > 0` is refused). A logprob entry's `token`/`bytes` are the token
decoded alone, which for a byte-level tokenizer may be a replacement character. A
request whose client gives up (a streamed or a non-streamed one) is abandoned at its
next token, so the requests behind it do not wait for text nobody reads.
"""

from __future__ import annotations

import asyncio
import hmac
import threading
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import uvicorn
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from posttrain.engines.base import Completion, Engine, GenerationRequest
from posttrain.rollout.episode import encode, render
from posttrain.serve.requests import (
    ApiError,
    BodyLimit,
    ChatRequest,
    check_utf8,
    generation_failed,
    sampling_params,
    validation_message,
)
from posttrain.serve.streaming import Choice, LiveGeneration, end_token_ids, sse_events

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.types import Receive, Scope, Send

    from posttrain.models.loading import Policy

DEFAULT_MAX_TOKENS = 256
DISCONNECT_POLL_S = 0.25  # how often a non-streamed request checks its client is still there
MAX_BODY_BYTES = 8 << 20  # a request body; larger ones are a 413 before being read
CHARS_PER_TOKEN_MAX = 32  # messages longer than this many characters per context token: 400


def create_app(
    engine: Engine,
    tokenizer: Any,
    model_name: str,
    *,
    api_key: str | None = None,
    max_context: int | None = None,
    default_max_tokens: int = DEFAULT_MAX_TOKENS,
) -> FastAPI:
    """A FastAPI app serving `engine` as the model `model_name`.

    `tokenizer` renders and encodes prompts; `api_key`, when set, is required as
    `Authorization: Bearer KEY`; `max_context` (the model's window), when set, makes
    requests whose prompt plus `max_tokens` exceed it a 400. Without `max_tokens`,
    a request gets `default_max_tokens`, or what is left of the window if less."""
    app = FastAPI(title=f"posttrain serve: {model_name}")
    app.state.model_name = model_name
    lock = threading.Lock()  # one engine, many clients: generate one request at a time
    end_ids = end_token_ids(engine, tokenizer)
    created = int(time.time())
    card = {"id": model_name, "object": "model", "created": created, "owned_by": "posttrain"}

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _bad_body(_: Request, exc: RequestValidationError) -> JSONResponse:
        return ApiError(400, validation_message(exc)).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = ApiError(exc.status_code, str(exc.detail)).response()
        response.headers.update(exc.headers or {})  # e.g. a 405's Allow
        return response

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:  # still OpenAI's shape
        return ApiError(500, f"internal error: {type(exc).__name__}: {exc}").response()

    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)

    def check_key(request: Request) -> None:
        if api_key is None:
            return
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, f"Bearer {api_key}".encode()):  # constant time
            raise ApiError(
                401,
                "missing or incorrect API key: send it as 'Authorization: Bearer KEY'",
                code="invalid_api_key",
            )

    def check_model(name: str) -> None:
        if name != model_name:
            raise ApiError(
                404,
                f"the model {name!r} does not exist on this server; it serves {model_name!r}",
                param="model",
                code="model_not_found",
            )

    @app.get("/v1/models", dependencies=[Depends(check_key)])
    async def list_models() -> dict[str, Any]:
        return {"object": "list", "data": [card]}

    @app.get("/v1/models/{name:path}", dependencies=[Depends(check_key)])
    async def get_model(name: str) -> dict[str, Any]:
        check_model(name)
        return card

    @app.post("/v1/chat/completions", dependencies=[Depends(check_key)], response_model=None)
    async def chat_completions(body: ChatRequest, raw: Request) -> JSONResponse | StreamingResponse:
        check_model(body.model)
        messages = [m.to_message() for m in body.messages]
        check_utf8(messages, body.stop)
        chars = sum(len(m.content or "") for m in messages)
        if max_context is not None and chars > CHARS_PER_TOKEN_MAX * max_context:
            raise ApiError(  # far past the window: refused without tokenizing it
                400,
                f"the messages hold {chars} characters; the model's context is "
                f"{max_context} tokens",
                param="messages",
                code="context_length_exceeded",
            )

        def prompt_ids() -> list[int]:  # in a worker: tokenizing a long prompt takes seconds
            try:
                return encode(tokenizer, render(tokenizer, messages, add_generation_prompt=True))
            except Exception as exc:  # e.g. a template that needs alternating roles
                raise ApiError(
                    400, f"the chat template refused the messages: {exc}", param="messages"
                ) from exc

        prompt = await run_in_threadpool(prompt_ids)
        params = sampling_params(body, len(prompt), max_context, default_max_tokens)

        request = GenerationRequest(prompt, params, messages=messages)
        head = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time())}
        head["model"] = model_name
        if body.stream:
            return await stream(request, head, body)

        completions = await finished(
            LiveGeneration(engine, lock, request, report_tokens=False), raw
        )

        def make_choices() -> list[Choice]:  # decoding text and logprobs: not on the loop
            return [
                Choice.make(tokenizer, c, params.stop, end_ids, logprobs=bool(body.logprobs))
                for c in completions
            ]

        choices = await run_in_threadpool(make_choices)
        usage = {
            "prompt_tokens": len(prompt),
            "completion_tokens": sum(len(c.token_ids) for c in completions),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return JSONResponse(
            {
                **head,
                "object": "chat.completion",
                "choices": [c.as_json(i, body.logprobs) for i, c in enumerate(choices)],
                "usage": usage,
                "system_fingerprint": None,
            }
        )

    async def finished(live: LiveGeneration, raw: Request) -> list[Completion]:
        """The completions of a non-streamed request; a client that leaves while it
        generates (an SDK's timeout) abandons it, so the requests behind do not wait."""
        waiting = asyncio.ensure_future(live.next())
        try:
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=DISCONNECT_POLL_S)
                if done:
                    break
                if await raw.is_disconnected():
                    live.abandon()
                    raise ApiError(499, "the client closed the connection")
        finally:
            if not waiting.done():  # left without its end (gone, or cancelled): stop it
                waiting.cancel()
                live.abandon()
        event = waiting.result()
        if event[0] == "error":  # the engine failed: say so in the API's shape, keep serving
            raise generation_failed(event[1]) from event[1]
        completions: list[Completion] = event[1]
        return completions

    async def stream(
        request: GenerationRequest, head: dict[str, Any], body: ChatRequest
    ) -> StreamingResponse:
        live = LiveGeneration(engine, lock, request)
        try:
            first = await live.next()  # a failure before the first token is still a plain 500
        except BaseException:  # cancelled while waiting: nobody will read the stream
            live.abandon()
            raise
        if first[0] == "error":
            raise generation_failed(first[1]) from first[1]
        events = sse_events(
            live,
            first,
            tokenizer,
            head,
            end_ids=end_ids,
            include_usage=body.stream_options is not None and body.stream_options.include_usage,
            logprobs=body.logprobs,
            prompt_tokens=len(request.prompt_ids),
        )
        return AbandoningStream(live, events)

    return app


class AbandoningStream(StreamingResponse):
    """An SSE response that stops its generation however it ends. `sse_events`' own
    `finally` covers a client gone mid-stream; this covers a body that is never iterated
    at all (a server whose `send` fails on a closed connection before the first chunk),
    where that `finally` never runs and the worker would sample to the end, lock held."""

    def __init__(self, live: LiveGeneration, events: AsyncIterator[str]) -> None:
        super().__init__(events, media_type="text/event-stream")
        self.live = live

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.live.abandon()


# ---- a checkpoint behind the app; the app in a background thread -------------------------


def app_for_checkpoint(
    checkpoint: str, *, model_name: str | None = None, api_key: str | None = None, seed: int = 0
) -> FastAPI:
    """The app `posttrain serve CHECKPOINT` runs: the checkpoint (a built-in model name,
    a model directory or a run directory) loaded into an HFEngine. Raises
    `CheckpointNotFoundError` / `ModelNotFoundError` for a name that is none of these."""
    from posttrain.engines.hf import HFEngine

    policy, name = load_served_policy(checkpoint, seed=seed)
    engine = HFEngine(policy.model, policy.tokenizer, seed=seed)
    from posttrain.models.loading import context_window

    return create_app(
        engine,
        policy.tokenizer,
        model_name or name,
        api_key=api_key,
        max_context=context_window(policy.model),
    )


def load_served_policy(checkpoint: str, seed: int = 0) -> tuple[Policy, str]:
    """(policy, default served name) for a built-in name, model directory or run directory."""
    from pathlib import Path

    from posttrain.models.loading import BUILTIN_MODELS, load_model_dir, load_policy
    from posttrain.serve import resolve_checkpoint

    if checkpoint in BUILTIN_MODELS:
        return load_policy(checkpoint, seed=seed), checkpoint
    given = Path(checkpoint).expanduser()
    path = resolve_checkpoint(given)
    name = path.name if path == given else f"{given.resolve().name}/{path.name}"
    return load_model_dir(path, name), name


@dataclass
class RunningServer:
    """A uvicorn server on a background thread; `base_url` ends in `/v1`."""

    base_url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self, timeout_s: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout_s)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def run_in_thread(
    app: FastAPI, host: str = "127.0.0.1", port: int = 0, startup_timeout_s: float = 30.0
) -> RunningServer:
    """Start `app` on `host`:`port` (0: a free port) in a daemon thread; returns once
    it accepts connections. For tests and benchmarks."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="posttrain-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:  # a poll with a deadline: uvicorn offers no start event
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the server did not start on {host}:{port}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    return RunningServer(f"http://{host}:{bound}/v1", server, thread)
