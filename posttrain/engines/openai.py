"""An engine that samples from any OpenAI-compatible chat-completions server over HTTP.

    engine = OpenAIEngine("http://127.0.0.1:8000/v1", tokenizer=tokenizer)  # checks the server
    url, model = parse_openai_spec("openai:http://127.0.0.1:8000/v1#tiny")
    evaluate("served", tasks, engine, tokenizer, get_domain, max_tokens=64)

Each `GenerationRequest` must carry its conversation (`messages`, which the
episode loop fills); it becomes one `POST /chat/completions` with `n`,
`temperature` (0 = greedy), `top_p`, `max_tokens` and `stop`, sent concurrently up
to `concurrency` requests at a time. Construction checks the server
(`GET /models`) and picks the model: the one named, or the server's only one.
Failures raise `EndpointError` with a one-line message, a reply that is not a
chat completion (or whose body does not decode) included. Connection errors, 429 and
5xx are retried with exponential backoff and jitter (`max_retries` times); other 4xx
never are. Failures no request of a batch escapes (the server down or timing out, the
key refused, the engine closed) are `EndpointUnavailable`, an `EngineUnavailable`: the
episode loops fail the batch at once instead of trying its requests one by one, as
they do for a 400, 413 or 422 (one prompt too long, say) or a malformed reply.

`timeout_s` is a total deadline per call to the server (one request's chat
completion, or the `/models` check): its attempts and the backoff waits between
them together, from the first attempt on (waiting for one of the `concurrency`
slots does not count). A server that answers slowly — trickling headers or body a
byte at a time, or a reply that never ends — is cut off at the deadline with an
`EndpointError` naming the URL and the limit. A retry is only made when its backoff
ends before the deadline, so a timed-out attempt is never retried and a long
`Retry-After` ends the call at once. Requests run on one event loop in a thread of
the engine's own (httpx's per-read timeouts cannot bound a whole reply; cancelling a
coroutine can), so a `transport` given for tests is an async one (`httpx.MockTransport`
is both); when one request of a `generate` batch fails, the others are cancelled.
`close` (from any thread) cancels the requests still in flight: their `generate` raises
`EndpointError` saying the engine was closed, as does any call after it.

The API key is read from the environment variable `api_key_env` (no header when
it is unset).

The local `tokenizer` is used for accounting only: `Completion.token_ids` is its
encoding of the returned text, so rollouts line up with the local model's
vocabulary. `Completion.logprobs` are the server's when its tokens are the local
ones, one for one (each entry's `token` is the local token decoded alone), zeros
otherwise (`extra["server_logprobs"]` says which): a logprob of a token the local
model never produced is worse than none. A logprob that is not a finite number <= 0
(NaN, Infinity, positive) is a malformed reply: `EndpointError`. So is a reply with
structured `message.tool_calls`: the episode loop reads tool calls from the text, and
an empty turn in their place would be silently wrong.
`extra["completion_tokens"]` is the server's `usage` divided over the `n` samples.

Not guaranteed: token-exact trajectories. The server re-tokenizes the rendered
conversation, so a text that does not round-trip through the tokenizer (broken
UTF-8 from a byte-level model, say) gives a later turn a different prompt than an
in-process engine would, and `token_ids` lack the end-of-turn token. Stop strings
are cut from the text by OpenAI servers (an in-process HFEngine keeps them). Tool
messages are sent as `{"role": "tool", "content", "name"}` without a
`tool_call_id`, which posttrain's server accepts and OpenAI's own API does not.
`update_weights` raises `RemoteWeightsError`: the weights live on the server.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import os
import random
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx
import torch

from posttrain.engines.base import Completion, EngineUnavailable, GenerationRequest
from posttrain.types import FinishReason

T = TypeVar("T")


class EndpointError(RuntimeError):
    """The server cannot be reached, refuses us, or does not serve the model; one line."""


class EndpointUnavailable(EndpointError, EngineUnavailable):
    """An `EndpointError` that no request of a batch would escape: the server unreachable,
    timing out or failing (429, 5xx) after the retries, the key or the URL refused, the
    engine closed. Other refusals (400, 413, 422) and malformed replies may be one
    request's: the episode loops then try the batch's requests apart."""


REQUEST_FAULTS = (400, 413, 422)  # refusals that may be one request's (too long a prompt)


class RemoteWeightsError(RuntimeError):
    """Weights were handed to a remote engine; they live on the server, not here."""


def parse_openai_spec(spec: str) -> tuple[str, str | None]:
    """`"openai:URL[#MODEL]"` -> (URL without a trailing slash, MODEL or None).

    >>> parse_openai_spec("openai:http://127.0.0.1:8000/v1#tiny")
    ('http://127.0.0.1:8000/v1', 'tiny')
    """
    if not spec.startswith("openai:"):
        raise ValueError(f"model spec {spec!r} must look like openai:URL or openai:URL#MODEL")
    url, _, model = spec[len("openai:") :].partition("#")
    url = url.rstrip("/")
    parsed = httpx.URL(url) if url else None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(
            f"model spec {spec!r} needs an http(s) URL after 'openai:', "
            "e.g. openai:http://127.0.0.1:8000/v1#tiny"
        )
    return url, model or None


class OpenAIEngine:
    """The Engine protocol over an OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        tokenizer: Any,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 10.0,
        logprobs: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"OpenAIEngine.concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"OpenAIEngine.max_retries must be >= 0, got {max_retries}")
        if not timeout_s > 0:
            raise ValueError(f"OpenAIEngine.timeout_s must be > 0, got {timeout_s}")
        self.base_url = base_url.rstrip("/")
        self.tokenizer = tokenizer
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.logprobs = logprobs
        key = os.environ.get(api_key_env) or None
        self._has_key = key is not None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        # httpx's timeout is per network operation; the deadline in _send bounds the call
        self._client = httpx.AsyncClient(
            headers=headers, timeout=timeout_s, limits=limits, transport=transport
        )
        self._slots = asyncio.Semaphore(concurrency)
        self._jitter = random.Random()
        self._closed = False  # set by `close`, under `_closing`: no new work after it
        self._closing = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="openai", daemon=True)
        self._thread.start()
        try:
            self.model = self.check(model)
        except BaseException:
            self.close()
            raise

    # ---- the Engine protocol ---------------------------------------------------------

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        for i, r in enumerate(requests):
            if r.messages is None:
                raise ValueError(
                    f"request {i} has no messages: OpenAIEngine sends the conversation, "
                    "not token ids (the episode loop fills GenerationRequest.messages)"
                )
        return self._run(self._complete_all(requests))

    def update_weights(self, state_dict: dict[str, torch.Tensor]) -> None:
        raise RemoteWeightsError(
            f"OpenAIEngine cannot take weights: the model lives on the server at "
            f"{self.base_url}; serve the new checkpoint there instead"
        )

    # ---- the server ------------------------------------------------------------------

    def check(self, model: str | None = None) -> str:
        """The model to use: `model` if the server serves it, else the server's only
        model. Raises EndpointError when the server is unreachable, refuses the key,
        or does not serve `model`."""
        response = self._run(self._send("GET", "/models"))
        try:
            served = [str(m["id"]) for m in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            raise EndpointError(
                f"{self.base_url}/models did not answer with a model list; "
                "is the base URL right (it usually ends in /v1)?"
            ) from None
        listing = ", ".join(served) or "nothing"
        if model is None:
            if len(served) != 1:
                raise EndpointError(
                    f"{self.base_url} serves {len(served)} models ({listing}); "
                    f"name one: openai:{self.base_url}#MODEL"
                )
            return served[0]
        if model not in served:
            raise EndpointError(
                f"model {model!r} is not served by {self.base_url}; it serves: {listing}"
            )
        return model

    def close(self) -> None:
        """Cancels the requests in flight (their callers get EndpointError), closes the
        connections and stops the engine's event loop; idempotent, from any thread."""
        with self._closing:
            if self._closed:
                return
            self._closed = True  # `_run` schedules nothing after this
            shutdown = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        try:
            shutdown.result()
        finally:  # a stopped loop never finishes a task: cancelled above, none is left
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    async def _shutdown(self) -> None:
        me = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not me]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self._client.aclose()

    def __enter__(self) -> OpenAIEngine:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        """Runs `work` on the engine's event loop and waits for its result; EndpointError
        when the engine is closed, before or while `work` runs."""
        with self._closing:
            if self._closed:
                work.close()  # never started: no "coroutine was never awaited" warning
                raise EndpointUnavailable(f"the engine for {self.base_url} is closed")
            future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result()
        except concurrent.futures.CancelledError:  # only `close` cancels work
            raise EndpointUnavailable(
                f"the engine for {self.base_url} was closed while a request was in flight"
            ) from None

    async def _complete_all(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        tasks = [asyncio.ensure_future(self._complete(r)) for r in requests]
        try:
            return list(await asyncio.gather(*tasks))
        finally:
            for task in tasks:  # one failed: the others' answers would be thrown away
                task.cancel()

    async def _complete(self, request: GenerationRequest) -> list[Completion]:
        p = request.params
        assert request.messages is not None
        messages = []
        for m in request.messages:
            entry = {"role": m.role, "content": m.content}
            if m.role == "tool" and m.name:
                entry["name"] = m.name
            messages.append(entry)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "n": p.n,
            "temperature": p.temperature,
            "top_p": p.top_p,
            "max_tokens": p.max_tokens,
        }
        if p.stop:
            body["stop"] = list(p.stop)
        if self.logprobs:
            body["logprobs"] = True
        async with self._slots:
            response = await self._send("POST", "/chat/completions", body)
        try:
            data = response.json()
            choices = sorted(data.get("choices") or [], key=lambda c: c.get("index", 0))
            if len(choices) != p.n:
                raise EndpointError(f"{self.base_url} returned {len(choices)} choices for n={p.n}")
            usage = data.get("usage") or {}
            return [self._completion(choice, usage, p.n, response.url) for choice in choices]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # not JSON, wrong shape
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
            raise EndpointError(
                f"POST {response.url} answered with a malformed chat completion ({reason})"
            ) from None

    def _completion(
        self, choice: dict[str, Any], usage: dict[str, Any], n: int, url: Any
    ) -> Completion:
        message = choice.get("message") or {}
        if message.get("tool_calls") or message.get("function_call"):
            raise EndpointError(
                f"POST {url} answered with structured tool_calls, which posttrain does not "
                "read: tool calls must come as text in `content` (serve the model without "
                "a tool-call parser, e.g. without vLLM's --enable-auto-tool-choice)"
            )
        text = message.get("content") or ""
        token_ids = list(self.tokenizer.encode(text, add_special_tokens=False))
        entries = (choice.get("logprobs") or {}).get("content") or []
        server = _checked_logprobs(entries, url)
        from_server = bool(entries) and self._aligned(entries, token_ids)
        logprobs = server if from_server else [0.0] * len(token_ids)
        # tool_calls, content_filter and function_call all end the turn: "stop" to us
        reason: FinishReason = "length" if choice.get("finish_reason") == "length" else "stop"
        extra = {"server_logprobs": 1.0 if from_server else 0.0}
        if isinstance(usage.get("completion_tokens"), int):
            extra["completion_tokens"] = usage["completion_tokens"] / n
        return Completion(token_ids, logprobs, text, reason, extra)

    def _aligned(self, entries: list[dict[str, Any]], token_ids: list[int]) -> bool:
        """Whether the server's tokens are the local ones, one for one: each entry's
        `token` is the local token decoded alone (a character split across tokens shows
        as U+FFFD on both sides). Only then does a logprob belong to a local token."""
        if len(entries) != len(token_ids):
            return False
        return all(
            e.get("token") == str(self.tokenizer.decode([t]))
            for e, t in zip(entries, token_ids, strict=True)
        )

    async def _send(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> httpx.Response:
        """One HTTP call, whole replies read, all within `timeout_s` (attempts and backoff
        together), retried on connection errors, 429 and 5xx while time is left."""
        url = self.base_url + path
        loop = asyncio.get_running_loop()
        problem = ""
        attempts = 0
        retry_after: float | None = None
        try:
            async with asyncio.timeout(self.timeout_s) as deadline:
                for attempt in range(self.max_retries + 1):
                    if attempt:
                        delay = self._backoff(attempt, retry_after)
                        if loop.time() + delay >= (deadline.when() or 0.0):
                            raise EndpointUnavailable(
                                f"{problem} ({_attempts(attempts)}; no time left for another "
                                f"within timeout_s={self.timeout_s:g} s)"
                            )
                        await asyncio.sleep(delay)
                    retry_after = None
                    attempts += 1
                    try:
                        response = await self._client.request(method, url, json=body)
                    except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                        problem = f"cannot reach {self.base_url}: {_reason(exc)}"
                        continue
                    except httpx.TimeoutException:
                        raise  # below: the deadline's message
                    except (httpx.ProxyError, httpx.UnsupportedProtocol) as exc:  # every call
                        raise EndpointUnavailable(
                            f"{method} {url} failed: {_reason(exc)}"
                        ) from None
                    except httpx.HTTPError as exc:  # a body that does not decode, redirects
                        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
                        raise EndpointError(f"{method} {url} failed: {reason}") from None
                    if response.status_code == 429 or response.status_code >= 500:
                        problem = f"{method} {url} failed: {_describe(response)}"
                        retry_after = _retry_after(response)
                        continue
                    if response.is_success:
                        return response
                    refused = self._refusal(method, url, response)
                    if response.status_code in REQUEST_FAULTS:
                        raise EndpointError(refused)
                    raise EndpointUnavailable(refused)
        except (TimeoutError, httpx.TimeoutException):
            before = f"; before: {problem}" if problem else ""
            raise EndpointUnavailable(
                f"{method} {url} got no complete answer within timeout_s={self.timeout_s:g} s "
                f"({_attempts(attempts)}{before})"
            ) from None
        raise EndpointUnavailable(f"{problem} ({_attempts(attempts)})")

    def _refusal(self, method: str, url: str, response: httpx.Response) -> str:
        if response.status_code == 401:
            if self._has_key:
                return f"the server refused the API key from ${self.api_key_env} ({url})"
            return f"the server at {self.base_url} wants an API key: set ${self.api_key_env}"
        return f"{method} {url} was refused: {_describe(response)}"

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before `attempt` (1 = the first retry)."""
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        delay *= 0.5 + self._jitter.random()  # spread retries of concurrent requests
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_backoff_s))
        return delay


ROUNDING = 1e-4  # how far above 0 a server's logprob of a near-certain token may round


def _checked_logprobs(entries: list[dict[str, Any]], url: Any) -> list[float]:
    """The entries' logprobs, a float's rounding above 0 (up to 1e-4) read as 0;
    EndpointError for one that is not a finite number ≤ 0 (a NaN or a positive
    logprob would poison whatever averages or trains on it)."""
    values = [float(e["logprob"]) for e in entries]
    values = [0.0 if 0 < value <= ROUNDING else value for value in values]
    for k, value in enumerate(values):
        if not (math.isfinite(value) and value <= 0):
            raise EndpointError(
                f"POST {url} answered with logprob {value} for token {k}: a logprob must "
                "be a finite number <= 0"
            )
    return values


def _attempts(n: int) -> str:
    return f"{n} attempt{'s' if n != 1 else ''}"


def _reason(exc: Exception) -> str:
    cause: BaseException | None = exc
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:  # anyio says "All connection attempts
        if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
            return "connection refused"  # failed" and chains the refusal as a cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__


def _describe(response: httpx.Response) -> str:
    """`HTTP 404: <the server's error message>` on one line."""
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    message = message or response.text[:200] or response.reason_phrase
    return f"HTTP {response.status_code}: {' '.join(str(message).split())}"


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
