"""Completion text as the chat API returns it, and streaming it token by token as SSE.

One rule makes both answers: `SampleText` turns one sample's tokens, fed as they are
sampled, into text deltas, decoding the whole prefix so far and sending only what can
no longer change: a trailing U+FFFD (a multi-byte character still missing bytes)
waits for its last byte, and a tail that could be the start of a stop string waits
until it is known not to be one. Nothing at or past a stop string is ever sent and
end-of-turn tokens are not text. The non-streamed answer (`Choice.make`) feeds the
finished completion through the same class when logprobs are asked for (else it only
cuts the text at its stop string), so streamed deltas concatenate to the non-streamed
`content`, and streamed logprob entries to its `logprobs.content`.

    live = LiveGeneration(engine, lock, request)      # starts a worker thread
    first = await live.next()                          # ("token", ...), ("done", ...) or ("error", ...)
    events = sse_events(live, first, tokenizer, head, ...)   # async iterator of "data: ...\\n\\n"

The worker holds `lock` (one engine, many clients) for the whole generation and feeds
an `asyncio.Queue` through `loop.call_soon_threadsafe`, so the event loop never
blocks. An engine whose `generate` takes `on_token` (HFEngine) streams as it
samples; any other engine streams its finished completions.

Not guaranteed: a tokenizer whose decoding of a prefix is not a prefix of the
decoding of a longer sequence (beyond a trailing U+FFFD) could make the streamed text
differ from the non-streamed one; byte-level tokenizers (the built-in one, SmolLM2)
are prefix-stable. Each token re-decodes the whole prefix: quadratic in the length
(4,000 tokens took 1.5 s here), paid by a stream and by a non-streamed request asking
for logprobs, on a worker thread for the latter. A client that disconnects makes the
worker abandon generation at its next token (HFEngine) or when it finishes (other
engines); the lock is released either way.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from posttrain.engines.base import Completion, Engine, GenerationRequest

REPLACEMENT = "\ufffd"  # what a byte-level tokenizer decodes an incomplete character to

# ("token", sample_index, token_id, logprob) | ("done", completions) | ("error", exception)
Event = tuple[Any, ...]
Entry = dict[str, Any]  # one logprobs.content entry of the API


def end_token_ids(engine: Engine, tokenizer: Any) -> frozenset[int]:
    """Token ids that end a turn and are never text: the engine's own stop ids where it
    has them (HFEngine), else the tokenizer's end-of-sequence token."""
    ids = getattr(engine, "stop_ids", None) or [getattr(tokenizer, "eos_token_id", None)]
    return frozenset(i for i in ids if i is not None)


def cut_at_stop(text: str, stop: tuple[str, ...]) -> int | None:
    """Where the earliest stop string in `text` begins, or None."""
    cuts = [i for i in (text.find(s) for s in stop) if i >= 0]
    return min(cuts) if cuts else None


class SampleText:
    """One sample's text, fed token by token; `push` returns what may be sent now."""

    def __init__(self, tokenizer: Any, stop: tuple[str, ...], end_ids: frozenset[int]) -> None:
        self.tokenizer, self.stop, self.end_ids = tokenizer, stop, end_ids
        self.ids: list[int] = []
        self.sent = ""  # the text already handed out
        self.full = ""  # the decode of `ids`, a trailing U+FFFD included
        self.stopped = False  # a stop string was seen: nothing more will be sent
        # logprob entries not handed out yet, each with the decode of the tokens before it
        self.pending: list[tuple[str, Entry]] = []

    def push(self, token: int, logprob: float) -> tuple[str, list[Entry]]:
        """Feed one sampled token; returns (new text, logprob entries) to send, maybe empty."""
        if self.stopped or token in self.end_ids:
            return "", []
        self.pending.append((self.full, self._entry(token, logprob)))
        self.ids.append(token)
        self.full = str(self.tokenizer.decode(self.ids, skip_special_tokens=False))
        text = self.full.rstrip(REPLACEMENT)
        cut = cut_at_stop(text, self.stop)
        if cut is not None:
            self.stopped, text = True, text[:cut]
        else:
            text = text[: self._hold_from(text)]
        if len(text) <= len(self.sent) or not text.startswith(self.sent):
            return "", []
        return self._hand_out(text)

    def finish(self, final_text: str) -> tuple[str, list[Entry]]:
        """The rest of `final_text` (the completion's text, cut at its stop string) and of
        the logprob entries: those of tokens whose text starts before its end."""
        if not final_text.startswith(self.sent):  # see "Not guaranteed": nothing to fix it with
            return "", []
        return self._hand_out(final_text)

    def _hand_out(self, text: str) -> tuple[str, list[Entry]]:
        """`text`'s new part and the entries of the tokens whose text starts inside it. A
        token starts where the decode before it stops agreeing with the current one: a
        byte that completed a character starts at that character, and one after an
        invalid byte (a U+FFFD for good) after it."""
        delta, self.sent = text[len(self.sent) :], text
        keep: list[tuple[str, Entry]] = []
        entries: list[Entry] = []
        for before, entry in self.pending:
            start = len(os.path.commonprefix([before, self.full]))
            if start < len(text):
                entries.append(entry)
            else:
                keep.append((before, entry))
        self.pending = keep
        return delta, entries

    def _hold_from(self, text: str) -> int:
        """Where the longest tail of `text` that could begin a stop string starts."""
        if not self.stop:
            return len(text)
        longest = max(len(s) for s in self.stop)
        for start in range(max(len(self.sent), len(text) - longest + 1), len(text)):
            tail = text[start:]
            if any(s.startswith(tail) for s in self.stop):
                return start
        return len(text)

    def _entry(self, token: int, logprob: float) -> Entry:
        alone = str(self.tokenizer.decode([token], skip_special_tokens=False))
        return {
            "token": alone,
            "logprob": logprob,
            "bytes": list(alone.encode()),
            "top_logprobs": [],
        }


@dataclass
class Choice:
    """One completion as the API returns it: text cut at its earliest stop string
    (OpenAI's rule), the finish reason, and the logprob entries of its text's tokens."""

    text: str
    finish_reason: Literal["stop", "length"]
    entries: list[Entry] = field(default_factory=list)

    @classmethod
    def make(
        cls,
        tokenizer: Any,
        completion: Completion,
        stop: tuple[str, ...],
        end_ids: frozenset[int],
        logprobs: bool = True,
    ) -> Choice:
        text, reason = completion.text, completion.finish_reason
        cut = cut_at_stop(text, stop)
        if cut is not None:
            text, reason = text[:cut], "stop"
        entries: list[Entry] = []
        if logprobs:  # a decode per token: only when the entries are asked for
            sample = SampleText(tokenizer, stop, end_ids)
            for token, logprob in zip(completion.token_ids, completion.logprobs, strict=False):
                entries += sample.push(token, logprob)[1]
            entries += sample.finish(text)[1]
        return cls(text, "length" if reason == "length" else "stop", entries)

    def as_json(self, index: int, logprobs: bool) -> dict[str, Any]:
        return {
            "index": index,
            "message": {"role": "assistant", "content": self.text},
            "logprobs": {"content": self.entries} if logprobs else None,
            "finish_reason": self.finish_reason,
        }


# ---- generating on a worker thread, tokens arriving on the event loop -------------------


class _Abandoned(Exception):
    """Raised inside the engine's decode loop to stop a generation nobody reads."""


def takes_on_token(engine: Engine) -> bool:
    """Whether `engine.generate` reports tokens as it samples them (HFEngine does)."""
    try:
        return "on_token" in inspect.signature(engine.generate).parameters
    except (TypeError, ValueError):
        return False


class LiveGeneration:
    """One request generating on a worker thread under `lock`; its events, in order,
    come out of `next()` on the event loop that created it."""

    def __init__(
        self,
        engine: Engine,
        lock: threading.Lock,
        request: GenerationRequest,
        report_tokens: bool = True,
    ) -> None:
        """`report_tokens=False`: only the end ("done" or "error") comes out of `next()`,
        while `abandon()` still stops the generation at its next token."""
        self.engine, self.lock, self.request = engine, lock, request
        self.report_tokens = report_tokens
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        self.abandoned = threading.Event()
        self.thread = threading.Thread(target=self._work, name="posttrain-stream", daemon=True)
        self.thread.start()

    async def next(self) -> Event:
        return await self.queue.get()

    def abandon(self) -> None:
        """Nobody reads any more: stop at the next token (the lock is released after)."""
        self.abandoned.set()

    def _work(self) -> None:
        try:
            with self.lock:
                if takes_on_token(self.engine):
                    done = self.engine.generate([self.request], on_token=self._on_token)  # type: ignore[call-arg]
                else:
                    done = self.engine.generate([self.request])
                    for sample, c in enumerate(done[0]):
                        for token, logprob in zip(c.token_ids, c.logprobs, strict=False):
                            self._on_token(0, sample, token, logprob)
            self._put(("done", done[0]))
        except _Abandoned:
            pass
        except Exception as exc:  # reported to the client; the server keeps serving
            self._put(("error", exc))

    def _on_token(self, _request: int, sample: int, token: int, logprob: float) -> None:
        if self.abandoned.is_set():
            raise _Abandoned
        if self.report_tokens:
            self._put(("token", sample, token, logprob))

    def _put(self, event: Event) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)
        except RuntimeError:  # the loop is closed: the server stopped
            self.abandoned.set()


async def sse_events(
    live: LiveGeneration,
    first: Event,
    tokenizer: Any,
    head: dict[str, Any],
    *,
    end_ids: frozenset[int],
    include_usage: bool,
    logprobs: bool,
    prompt_tokens: int,
) -> AsyncIterator[str]:
    """Server-sent events in OpenAI's chunk format as tokens arrive (choices
    interleaved, told apart by `index`), each choice's finish, usage if asked, [DONE]."""
    params = live.request.params

    def event(choice: dict[str, Any] | None, **extra: Any) -> str:
        chunk = {**head, "object": "chat.completion.chunk", "system_fingerprint": None}
        chunk["choices"] = [] if choice is None else [choice]
        chunk.update(extra)
        return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"

    def content(index: int, text: str, entries: list[Entry]) -> str:
        lp = {"content": entries} if logprobs else None
        delta = {"content": text}
        return event({"index": index, "delta": delta, "logprobs": lp, "finish_reason": None})

    samples = [SampleText(tokenizer, params.stop, end_ids) for _ in range(params.n)]
    try:
        for i in range(params.n):
            start = {"role": "assistant", "content": ""}
            yield event({"index": i, "delta": start, "logprobs": None, "finish_reason": None})
        current = first
        while current[0] == "token":
            _, sample, token, logprob = current
            text, entries = samples[sample].push(token, logprob)
            if text:
                yield content(sample, text, entries)
            current = await live.next()
        if current[0] == "error":
            exc = current[1]
            message = f"generation failed: {type(exc).__name__}: {exc}"
            yield f"data: {json.dumps({'error': {'message': message, 'type': 'server_error'}})}\n\n"
            return
        completions: list[Completion] = current[1]
        for i, completion in enumerate(completions):
            choice = Choice.make(tokenizer, completion, params.stop, end_ids, logprobs=False)
            text, entries = samples[i].finish(choice.text)
            if text or entries:
                yield content(i, text, entries)
            end = {"index": i, "delta": {}, "logprobs": None, "finish_reason": choice.finish_reason}
            yield event(end)
        if include_usage:
            used = sum(len(c.token_ids) for c in completions)
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": used}
            yield event(None, usage={**usage, "total_tokens": prompt_tokens + used})
        yield "data: [DONE]\n\n"
    finally:  # a client gone mid-stream lands here too: let the worker stop early
        live.abandon()
