"""Guarded tool calls: permission, argument checks, timeouts, retries, truncation, counters.

    policy = ToolPolicy(timeout_s=5, tool_timeouts={"run_tests": 60})
    counters = ToolCounters()
    count_parse_errors(counters, parsed.errors)
    for call in parsed.calls:
        result = guarded_call(session, call, policy, counters)
        replies.append(result.message)        # Message("tool", ..., name=call.name)
    metrics.update(counters.as_metrics())     # tools/calls, tools/timeouts, ...

`guarded_call` never raises for anything the model or the tool does; every failure
is an observation starting with "error: " and an `outcome` label. In order:
permission (only tools declared in `session.tools` run; others are refused by
name), arguments (checked against the tool's `parameters` schema, see
`posttrain.tools.arguments`), the call itself in a worker thread abandoned after its
timeout, retries with exponential backoff and jitter for *infrastructure* errors
only, then truncation of the observation to `max_observation_chars` (start and
end kept, a marker saying how many characters were cut).

Infrastructure errors (retried): `ToolInfraError`, `ConnectionError` and its
subclasses (broken pipe, reset, refused), and the sandbox's `SandboxError` family
(the sandbox died or was unresponsive; it restarts on the next call) — except
`SandboxUnavailable`, which is permanent and fails at once. The sandbox classes
are recognised by qualified name so that `tools` imports nothing of `sandbox`.
A `TimeoutError` raised by the tool is *not* infrastructure: a tool's own clock
usually means the work was slow, and a retry would only repeat the wait (the
sandbox reports an unresponsive server as `SandboxError`). Every other exception is
the tool's failure: "error: tool failed: Type: message", never retried.

Not guaranteed: Python cannot kill a thread, so a timed-out call keeps running in
its (daemon) thread and may still change the session's state, concurrently with
later calls; tools backed by the sandbox enforce their own limits and stop for
real. Sessions whose resources are bound to one thread (sqlite connections made
with the default `check_same_thread`) cannot be called through the guard. What the
argument check leaves to the tool is listed in `posttrain.tools.arguments`. A
tool's own error observation (`Observation.error`) counts as `ok` here and is
passed through unchanged (`GuardedResult.error` says so).
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from posttrain.tools.arguments import declared_tools, schema_problems, snippet
from posttrain.types import Message, Observation, ToolCall

Outcome = Literal["ok", "unknown_tool", "bad_arguments", "timeout", "infra_failure", "tool_error"]

_SANDBOX_BROKEN = "posttrain.sandbox.results.SandboxError"
_SANDBOX_PERMANENT = "posttrain.sandbox.results.SandboxUnavailable"
_jitter = random.Random()


class ToolInfraError(Exception):
    """Raise from a tool when the machinery behind it failed (not the call): retried."""


_TIMEOUTS = f"positive, finite seconds (at most {threading.TIMEOUT_MAX:g})"


def _is_timeout(seconds: object) -> bool:
    return (
        isinstance(seconds, int | float)
        and not isinstance(seconds, bool)
        and 0 < seconds <= threading.TIMEOUT_MAX  # NaN and inf fail
    )


@dataclass(frozen=True)
class ToolPolicy:
    """How tool calls are guarded; one policy per run."""

    timeout_s: float = 10.0  # wall clock per attempt, unless the tool has an override
    tool_timeouts: Mapping[str, float] = field(default_factory=dict)  # per-tool timeout_s
    retries: int = 2  # further attempts after an infrastructure error
    backoff_base_s: float = 0.5  # first retry waits about this long; doubles each retry
    backoff_max_s: float = 8.0  # cap on one wait (before jitter)
    max_observation_chars: int = 16_000  # longer observations keep start and end
    user_turn_timeout_s: float | None = None  # a scripted user's turn; None: timeout_s

    def __post_init__(self) -> None:
        # Finite, and within what a thread can wait: every call is bounded.
        if not _is_timeout(self.timeout_s):
            raise ValueError(f"ToolPolicy.timeout_s must be {_TIMEOUTS}, got {self.timeout_s!r}")
        if self.user_turn_timeout_s is not None and not _is_timeout(self.user_turn_timeout_s):
            raise ValueError(
                f"ToolPolicy.user_turn_timeout_s must be {_TIMEOUTS}, "
                f"got {self.user_turn_timeout_s!r}"
            )
        for name, seconds in self.tool_timeouts.items():
            if not isinstance(name, str) or not _is_timeout(seconds):
                raise ValueError(
                    f"ToolPolicy.tool_timeouts[{name!r}] must be {_TIMEOUTS}, got {seconds!r}"
                )
        if not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"ToolPolicy.retries must be an integer >= 0, got {self.retries!r}")
        if not 0 <= self.backoff_base_s <= self.backoff_max_s:
            raise ValueError(
                "ToolPolicy needs 0 <= backoff_base_s <= backoff_max_s, got "
                f"{self.backoff_base_s!r} and {self.backoff_max_s!r}"
            )
        if self.max_observation_chars < 200:  # room for the marker and some text
            raise ValueError(
                f"ToolPolicy.max_observation_chars must be >= 200, got {self.max_observation_chars!r}"
            )
        # A private copy (a plain dict, so the policy pickles for Ray and `asdict` works):
        # changing the caller's dict later does not change the policy.
        object.__setattr__(self, "tool_timeouts", dict(self.tool_timeouts))

    def timeout_for(self, tool: str) -> float:
        return float(self.tool_timeouts.get(tool, self.timeout_s))

    def user_turn_timeout(self) -> float:
        return float(
            self.timeout_s if self.user_turn_timeout_s is None else self.user_turn_timeout_s
        )

    def backoff_s(self, retry: int) -> float:
        """Wait before retry number `retry` (0-based): exponential, capped, jittered to
        50-100% so that many episodes hitting one broken sandbox do not retry in step."""
        return min(self.backoff_max_s, self.backoff_base_s * 2.0**retry) * _jitter.uniform(0.5, 1)


@dataclass
class ToolCounters:
    """Counts over many guarded calls (one episode, a batch, a run)."""

    calls: int = 0  # guarded_call invocations
    ok: int = 0  # the tool ran and returned an observation
    malformed: int = 0  # tool-call markup that did not parse (count_parse_errors)
    unknown_tool: int = 0  # a tool the session does not declare; never run
    bad_arguments: int = 0  # arguments that do not fit the tool's schema; never run
    timeouts: int = 0  # abandoned after the tool's timeout
    infra_retries: int = 0  # retries after infrastructure errors
    infra_failures: int = 0  # calls that failed on infrastructure after all retries
    tool_errors: int = 0  # the tool raised (or returned something not an Observation)
    truncated: int = 0  # observations cut to max_observation_chars

    def as_metrics(self, prefix: str = "tools/") -> dict[str, float]:
        return {f"{prefix}{f.name}": float(getattr(self, f.name)) for f in fields(self)}

    def merge(self, other: ToolCounters) -> None:
        """Add `other`'s counts into these."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


_OUTCOME_COUNTER: dict[str, str] = {
    "ok": "ok",
    "unknown_tool": "unknown_tool",
    "bad_arguments": "bad_arguments",
    "timeout": "timeouts",
    "infra_failure": "infra_failures",
    "tool_error": "tool_errors",
}


@dataclass
class GuardedResult:
    """One guarded call: the observation to show the model, and what happened."""

    message: Message  # role "tool", name = the call's name
    outcome: Outcome
    error: bool  # the observation reports a failure (the guard's or the tool's own)
    attempts: int  # times the tool was run (0 when refused before running)
    seconds: float  # wall clock of the whole guarded call, backoff included


def count_parse_errors(counters: ToolCounters, errors: list[str]) -> None:
    """Count malformed tool-call markup (`ParsedCalls.errors`) as `malformed`."""
    counters.malformed += len(errors)


def guarded_call(
    session: Any, call: ToolCall, policy: ToolPolicy, counters: ToolCounters
) -> GuardedResult:
    """Run `call` through `session.call` under `policy`; count it in `counters`. Never
    raises for the model's or the tool's doing (see the module docstring)."""
    started = time.perf_counter()
    counters.calls += 1
    content, outcome, error, attempts = _guarded(session, call, policy, counters)
    if len(content) > policy.max_observation_chars:
        content = truncate_observation(content, policy.max_observation_chars)
        counters.truncated += 1
    # Lone surrogates (bytes decoded with surrogateescape) would break tokenization.
    content = content.encode("utf-8", "replace").decode("utf-8")
    counter = _OUTCOME_COUNTER[outcome]
    setattr(counters, counter, getattr(counters, counter) + 1)
    return GuardedResult(
        Message("tool", content, name=call.name),
        outcome,
        error,
        attempts,
        time.perf_counter() - started,
    )


def _guarded(
    session: Any, call: ToolCall, policy: ToolPolicy, counters: ToolCounters
) -> tuple[str, Outcome, bool, int]:
    """(content, outcome, error, attempts) of one call, before truncation."""
    tools = declared_tools(getattr(session, "tools", None))
    if call.name not in tools:
        declared = ", ".join(sorted(tools)) if tools else "none"
        text = f"error: unknown tool {snippet(call.name)}; declared tools: {declared}"
        return text, "unknown_tool", True, 0
    problems = schema_problems(call.arguments, tools[call.name])
    if problems:
        return f"error: tool {call.name!r}: {'; '.join(problems)}", "bad_arguments", True, 0
    timeout = policy.timeout_for(call.name)
    attempts = 0
    while True:
        attempts += 1
        finished, value = _run_in_thread(session, call, timeout)
        if not finished:
            return (
                f"error: tool {call.name!r} timed out after {timeout:g}s",
                "timeout",
                True,
                attempts,
            )
        if isinstance(value, Observation) and isinstance(value.content, str):
            return value.content, "ok", bool(value.error), attempts
        if isinstance(value, Observation):
            problem = (
                f"TypeError: Observation.content must be str, got {type(value.content).__name__}"
            )
            return f"error: tool failed: {problem}", "tool_error", True, attempts
        if not isinstance(value, BaseException):
            problem = f"TypeError: session.call returned {type(value).__name__}, not an Observation"
            return f"error: tool failed: {problem}", "tool_error", True, attempts
        kind = infra_kind(value)
        if kind == "retry" and attempts <= policy.retries:
            counters.infra_retries += 1
            time.sleep(policy.backoff_s(attempts - 1))
            continue
        if kind is not None:
            text = (
                f"error: tool {call.name!r} is unavailable (infrastructure failure after "
                f"{attempts} attempt{'s' if attempts > 1 else ''}): {_describe(value)}"
            )
            return text, "infra_failure", True, attempts
        return f"error: tool failed: {_describe(value)}", "tool_error", True, attempts


class _CallWorkers:
    """Reusable daemon threads that run tool calls, so a call costs a queue hand-off
    instead of a thread start (about 40 µs instead of 180 µs here).

    Every submitted call either reserves an idle worker or starts a new one, so a call
    never waits behind another; a worker whose call outlives its timeout is simply not
    idle until the call returns (a hung call holds one thread, as a thread per call did).
    Daemon threads: an abandoned call never holds up interpreter exit."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Any, list[object], threading.Event]] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._idle = 0

    def run(self, fn: Any, timeout: float) -> tuple[bool, object]:
        """(finished, the return value or the exception raised) of `fn()` within `timeout`."""
        box: list[object] = []
        done = threading.Event()
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        if start:
            threading.Thread(target=self._serve, name="tool-call", daemon=True).start()
        self._jobs.put((fn, box, done))
        if not done.wait(timeout) or not box:
            return False, None
        return True, box[0]

    def _serve(self) -> None:
        while True:
            fn, box, done = self._jobs.get()
            try:
                box.append(fn())
            except BaseException as exc:  # SystemExit from model-run code included: a tool failure
                box.append(exc)
            with self._lock:  # idle before the caller wakes: its next call reuses this thread
                self._idle += 1
            done.set()


_WORKERS = _CallWorkers()


def _run_in_thread(session: Any, call: ToolCall, timeout: float) -> tuple[bool, object]:
    """(finished, the return value or the exception raised) of `session.call(call)` on a
    worker thread, abandoned after `timeout` seconds."""
    return _WORKERS.run(lambda: session.call(call), timeout)


def run_with_timeout(fn: Callable[[], object], timeout: float) -> tuple[bool, object]:
    """(finished, the return value or the exception raised) of `fn()` on one of the tool
    calls' worker threads, abandoned (not stopped: see the module doc) after `timeout`
    seconds. For other session work that must not hang an episode: a scripted user's turn."""
    return _WORKERS.run(fn, timeout)


def infra_kind(exc: BaseException) -> Literal["retry", "fail"] | None:
    """ "retry" for infrastructure errors worth retrying, "fail" for permanent ones, None
    when the exception is the tool's own failure."""
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in type(exc).__mro__}
    if _SANDBOX_PERMANENT in names:
        return "fail"
    if isinstance(exc, ToolInfraError | ConnectionError) or _SANDBOX_BROKEN in names:
        return "retry"
    return None


def _describe(exc: BaseException) -> str:
    try:
        message = str(exc)
    except Exception:  # a broken __str__ must not break the guard
        message = "<unprintable message>"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def truncate_observation(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars`, keeping its start and end (a traceback's news is
    at the end) around a marker that says how many characters were cut.

    >>> cut = truncate_observation("x" * 1000, 200)
    >>> len(cut) <= 200, cut.count("x"), cut.splitlines()[1]
    (True, 169, '[... 831 characters cut ...]')
    """
    if len(text) <= max_chars:
        return text
    template = "\n[... {} characters cut ...]\n"
    keep = max_chars - len(template.format(len(text)))  # the widest the count can be
    if keep <= 0:
        raise ValueError(f"max_chars={max_chars} leaves no room for the truncation marker")
    head = keep - keep // 4
    tail = keep - head
    cut = len(text) - keep
    return text[:head] + template.format(cut) + (text[len(text) - tail :] if tail else "")
