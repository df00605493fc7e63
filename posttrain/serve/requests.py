"""The chat API's request side: the body's shape (`ChatRequest`), its checks against
the model (`sampling_params`, `check_utf8`), OpenAI's error shape (`ApiError`,
`validation_message`) and the body-size limit every request passes first (`BodyLimit`).
`serve.app` wires them into the server.

    body = ChatRequest.model_validate(json_body)
    params = sampling_params(body, prompt_len=12, max_context=512, default_max_tokens=256)
    raise ApiError(400, "stop sequences must not be empty strings", param="stop")
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from posttrain.engines.base import SamplingParams
from posttrain.types import Message, utf8_encodable

# Every request model is strict, as OpenAI's API is: `"max_tokens": "3"` or
# `"stream": "true"` is a 400 naming the field, not silently coerced (an int is still
# a valid float).
_STRICT = ConfigDict(extra="ignore", strict=True)


class _TextPart(BaseModel):
    model_config = _STRICT
    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    """One request message; `content` is a string (or a list of text parts)."""

    model_config = _STRICT
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[_TextPart] | None = None
    name: str | None = None

    def to_message(self) -> Message:
        content = self.content or ""
        text = content if isinstance(content, str) else "".join(p.text for p in content)
        return Message(self.role, text, name=self.name)


class _StreamOptions(BaseModel):
    model_config = _STRICT
    include_usage: bool = False


class ChatRequest(BaseModel):
    """The body of `POST /v1/chat/completions` (the fields this server honours)."""

    model_config = _STRICT
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    n: int = Field(1, ge=1, le=128)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: _StreamOptions | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        """OpenAI's API takes `null` for every optional field, meaning "unset": clients
        send it for `n`, `stream` and `logprobs` too, which then take their defaults."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not (v is None and k in _NULL_DEFAULTS)}
        return data


_NULL_DEFAULTS = ("n", "stream", "logprobs")


class ApiError(Exception):
    """An error answered in OpenAI's JSON shape with HTTP `status`."""

    def __init__(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def response(self) -> JSONResponse:
        kind = "server_error" if self.status >= 500 else "invalid_request_error"
        body = {"message": self.message, "type": kind, "param": self.param, "code": self.code}
        return JSONResponse({"error": body}, status_code=self.status)


class BodyLimit:
    """ASGI middleware: a request body over `limit` bytes is a 413, refused on its
    Content-Length before anything is read, else once the bytes read pass the limit
    (chunked bodies). Pure ASGI, so streamed responses pass through untouched."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            response = ApiError(413, self._message(length.decode("latin-1"))).response()
            await response(scope, receive, send)
            return
        seen = 0

        async def counted() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # the app's handler for HTTP errors makes it JSON
                    raise StarletteHTTPException(413, self._message(f"over {seen}"))
            return message

        await self.app(scope, counted, send)

    def _message(self, length: str) -> str:
        return f"the body takes {length} bytes; at most {self.limit} are accepted"


def check_utf8(messages: list[Message], stop: str | list[str] | None) -> None:
    """400 for a lone surrogate (JSON can escape one, `"\\ud800"`; UTF-8 cannot encode it,
    so neither the tokenizer nor the engine's stop strings can take it)."""
    texts = [(f"messages.{i}.content", m.content) for i, m in enumerate(messages)]
    texts += [(f"messages.{i}.name", m.name or "") for i, m in enumerate(messages)]
    texts += [("stop", s) for s in ([stop] if isinstance(stop, str) else stop or [])]
    for param, text in texts:
        if not utf8_encodable(text):
            raise ApiError(
                400, f"{param} holds a lone surrogate, which UTF-8 cannot encode", param=param
            )


def generation_failed(exc: BaseException) -> ApiError:
    return ApiError(500, f"generation failed: {type(exc).__name__}: {exc}")


def sampling_params(
    body: ChatRequest, prompt_len: int, max_context: int | None, default_max_tokens: int
) -> SamplingParams:
    """The request's sampling settings, checked against the model's window."""
    if body.top_logprobs:
        raise ApiError(
            400,
            "top_logprobs is not supported: only the sampled token's logprob is returned",
            param="top_logprobs",
        )
    stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    if any(s == "" for s in stop):
        raise ApiError(400, "stop sequences must not be empty strings", param="stop")
    room = None if max_context is None else max_context - prompt_len
    if room is not None and room < 1:
        raise ApiError(
            400,
            f"the prompt has {prompt_len} tokens; this model's context is {max_context} tokens",
            param="messages",
        )
    asked = body.max_completion_tokens or body.max_tokens
    if asked is not None and room is not None and asked > room:
        raise ApiError(
            400,
            f"this model's context is {max_context} tokens: the prompt has {prompt_len} "
            f"and max_tokens asks for {asked}",
            param="max_tokens",
        )
    max_tokens = asked or (default_max_tokens if room is None else min(default_max_tokens, room))
    temperature = 1.0 if body.temperature is None else body.temperature
    top_p = 1.0 if body.top_p is None else body.top_p
    return SamplingParams(max_tokens, temperature, top_p, body.n, tuple(stop))


def validation_message(exc: RequestValidationError) -> str:
    """One line naming each bad field, e.g. `messages.0.role: Input should be ...`."""
    parts = []
    for error in exc.errors()[:3]:
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        if error.get("type") == "json_invalid":
            parts.append(f"the request body is not valid JSON ({error.get('msg')})")
            continue
        parts.append(f"{'.'.join(loc) or 'body'}: {error.get('msg')}")
    more = len(exc.errors()) - 3
    return "invalid request: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
