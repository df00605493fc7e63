"""Guarded tool calls: permission, argument checks, timeouts, infra retries, truncation, counters."""

from __future__ import annotations

import dataclasses
import doctest
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from posttrain.sandbox import SandboxError, SandboxUnavailable
from posttrain.tools import (
    ToolCounters,
    ToolInfraError,
    ToolPolicy,
    count_parse_errors,
    function_schema,
    guarded_call,
    parse_tool_calls,
)
from posttrain.tools import guard as guard_module
from posttrain.types import Observation, ToolCall

FAST = ToolPolicy(timeout_s=5.0, backoff_base_s=0.001, backoff_max_s=0.002)
SEARCH_PARAMS = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "k": {"type": "integer"},
        "mode": {"type": "string", "enum": ["fast", "exact"]},
    },
    "required": ["query"],
    "additionalProperties": False,
}


class FakeSession:
    """Declares `search` (and whatever `declared` adds); serves calls from `handlers`."""

    def __init__(self, handlers: dict[str, Callable[[dict[str, Any]], Any]], declared: tuple[str, ...] = ()) -> None:  # fmt: skip
        params = {"type": "object", "properties": {}}
        self.tools = [function_schema("search", "Search.", SEARCH_PARAMS)]
        self.tools += [function_schema(name, name, params) for name in declared]
        self.handlers = handlers
        self.ran: list[str] = []

    def call(self, tool_call: ToolCall) -> Observation:
        self.ran.append(tool_call.name)
        return self.handlers[tool_call.name](tool_call.arguments)  # type: ignore[no-any-return]


def found(arguments: dict[str, Any]) -> Observation:
    return Observation(f"3 hits for {arguments['query']}")


def run(session: Any, call: ToolCall, policy: ToolPolicy = FAST) -> tuple[Any, ToolCounters]:
    counters = ToolCounters()
    return guarded_call(session, call, policy, counters), counters


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown so threads a timeout abandoned finish instead of lingering."""
    event = threading.Event()
    yield event
    event.set()


def test_declared_tool_runs_and_its_observation_becomes_a_tool_message() -> None:
    result, counters = run(FakeSession({"search": found}), ToolCall("search", {"query": "gen"}))
    assert (result.outcome, result.error, result.attempts) == ("ok", False, 1)
    assert (result.message.role, result.message.name) == ("tool", "search")
    assert result.message.content == "3 hits for gen"
    assert (counters.calls, counters.ok) == (1, 1)


def test_undeclared_tool_is_refused_by_name_and_never_runs() -> None:
    session = FakeSession({"search": found, "rm_rf": found})
    result, counters = run(session, ToolCall("rm_rf", {"query": "/"}))
    assert result.outcome == "unknown_tool" and result.error and result.attempts == 0
    assert (
        "'rm_rf'" in result.message.content and "declared tools: search" in result.message.content
    )
    assert session.ran == [] and counters.unknown_tool == 1


def test_session_declaring_no_tools_refuses_every_call() -> None:
    session = FakeSession({"search": found})
    session.tools = []
    result, _ = run(session, ToolCall("search", {"query": "x"}))
    assert result.outcome == "unknown_tool" and "declared tools: none" in result.message.content


def test_bad_json_is_counted_as_malformed_through_parse_errors() -> None:
    parsed = parse_tool_calls('<tool_call>{"name": "search", "arguments": {oops}</tool_call>')
    counters = ToolCounters()
    count_parse_errors(counters, parsed.errors)
    assert parsed.calls == [] and counters.malformed == 1
    assert counters.as_metrics()["tools/malformed"] == 1.0


def test_wrong_argument_type_is_refused_naming_the_argument() -> None:
    session = FakeSession({"search": found})
    result, counters = run(session, ToolCall("search", {"query": "x", "k": "3"}))
    assert result.outcome == "bad_arguments" and session.ran == []
    assert "argument 'k' must be integer, got string" in result.message.content
    assert counters.bad_arguments == 1


def test_missing_required_argument_is_refused() -> None:
    result, _ = run(FakeSession({"search": found}), ToolCall("search", {"k": 3}))
    assert result.outcome == "bad_arguments"
    assert "missing required argument 'query'" in result.message.content


def test_extra_argument_is_refused_when_additional_properties_is_false() -> None:
    result, _ = run(FakeSession({"search": found}), ToolCall("search", {"query": "x", "q2": 1}))
    assert "unexpected argument 'q2'" in result.message.content


def test_argument_outside_its_enum_is_refused() -> None:
    result, _ = run(FakeSession({"search": found}), ToolCall("search", {"query": "x", "mode": "slow"}))  # fmt: skip
    assert result.outcome == "bad_arguments" and "'mode' must be one of" in result.message.content


def test_tool_sleeping_past_its_timeout_is_abandoned(release: threading.Event) -> None:
    session = FakeSession({"nap": lambda _: release.wait(30)}, declared=("nap",))
    policy = ToolPolicy(timeout_s=0.2)
    started = time.perf_counter()
    result, counters = run(session, ToolCall("nap"), policy)
    assert time.perf_counter() - started < 1.5
    assert result.outcome == "timeout" and "timed out after 0.2s" in result.message.content
    assert counters.timeouts == 1 and counters.infra_retries == 0


def test_a_hung_call_does_not_hold_up_the_next_one(release: threading.Event) -> None:
    session = FakeSession({"nap": lambda _: release.wait(30), "search": found}, declared=("nap",))
    run(session, ToolCall("nap"), ToolPolicy(timeout_s=0.2))  # its worker stays busy
    started = time.perf_counter()
    result, _ = run(session, ToolCall("search", {"query": "x"}))
    assert result.outcome == "ok" and time.perf_counter() - started < 1.0


def test_sequential_calls_reuse_idle_worker_threads() -> None:
    session = FakeSession({"search": found})
    run(session, ToolCall("search", {"query": "warm"}))  # at least one idle worker now
    before = threading.active_count()
    for i in range(50):
        assert run(session, ToolCall("search", {"query": str(i)}))[0].outcome == "ok"
    assert threading.active_count() == before  # no thread started for any of them


def test_per_tool_timeout_overrides_the_default(release: threading.Event) -> None:
    session = FakeSession({"nap": lambda _: release.wait(30)}, declared=("nap",))
    result, _ = run(session, ToolCall("nap"), ToolPolicy(timeout_s=60, tool_timeouts={"nap": 0.2}))
    assert "timed out after 0.2s" in result.message.content


def flaky(failures: int, error: BaseException) -> Callable[[dict[str, Any]], Observation]:
    left = [failures]

    def handler(arguments: dict[str, Any]) -> Observation:
        if left[0] > 0:
            left[0] -= 1
            raise error
        return Observation("done")

    return handler


def test_infra_error_twice_then_success_is_ok_with_two_retries_counted() -> None:
    session = FakeSession({"job": flaky(2, ToolInfraError("pool drained"))}, declared=("job",))
    result, counters = run(session, ToolCall("job"))
    assert (result.outcome, result.attempts, result.message.content) == ("ok", 3, "done")
    assert (counters.ok, counters.infra_retries, counters.infra_failures) == (1, 2, 0)


def test_infra_error_every_time_fails_after_the_retries() -> None:
    session = FakeSession({"job": flaky(99, ToolInfraError("pool drained"))}, declared=("job",))
    result, counters = run(session, ToolCall("job"))
    assert result.outcome == "infra_failure" and result.attempts == 3
    assert "after 3 attempts" in result.message.content and "pool drained" in result.message.content
    assert (counters.infra_retries, counters.infra_failures, counters.ok) == (2, 1, 0)


@pytest.mark.parametrize(
    "error", [ConnectionResetError("reset"), BrokenPipeError("pipe"), SandboxError("sandbox gone")]
)
def test_connection_and_sandbox_errors_are_retried(error: BaseException) -> None:
    session = FakeSession({"job": flaky(1, error)}, declared=("job",))
    result, counters = run(session, ToolCall("job"))
    assert result.outcome == "ok" and counters.infra_retries == 1


def test_sandbox_unavailable_is_an_infra_failure_without_retry() -> None:
    session = FakeSession({"job": flaky(1, SandboxUnavailable("no bwrap"))}, declared=("job",))
    result, counters = run(session, ToolCall("job"))
    assert result.outcome == "infra_failure" and result.attempts == 1
    assert counters.infra_retries == 0


@pytest.mark.parametrize("error", [ValueError("bad input"), TimeoutError("own clock")])
def test_tool_exception_becomes_an_observation_without_retry(error: BaseException) -> None:
    session = FakeSession({"job": flaky(1, error)}, declared=("job",))
    result, counters = run(session, ToolCall("job"))
    assert result.outcome == "tool_error" and result.attempts == 1
    assert result.message.content == f"error: tool failed: {type(error).__name__}: {error}"
    assert (counters.tool_errors, counters.infra_retries) == (1, 0)


def test_system_exit_from_a_tool_is_a_tool_error_not_an_exit() -> None:
    session = FakeSession({"job": flaky(1, SystemExit(3))}, declared=("job",))
    result, _ = run(session, ToolCall("job"))
    assert result.outcome == "tool_error" and "SystemExit" in result.message.content


def test_a_return_value_that_is_not_an_observation_is_a_tool_error() -> None:
    session = FakeSession({"job": lambda _: "plain string"}, declared=("job",))
    result, _ = run(session, ToolCall("job"))
    assert result.outcome == "tool_error" and "returned str" in result.message.content


def test_an_observation_whose_content_is_not_text_is_a_tool_error_saying_so() -> None:
    session = FakeSession({"job": lambda _: Observation(b"file bytes")}, declared=("job",))  # type: ignore[arg-type]
    result, _ = run(session, ToolCall("job"))
    assert result.outcome == "tool_error"
    assert "Observation.content must be str, got bytes" in result.message.content


def test_tool_reported_error_passes_through_as_ok_with_error_flag() -> None:
    session = FakeSession({"job": lambda _: Observation("error: no such row", True)}, declared=("job",))  # fmt: skip
    result, counters = run(session, ToolCall("job"))
    assert (result.outcome, result.error, counters.ok) == ("ok", True, 1)
    assert result.message.content == "error: no such row"


def test_megabyte_observation_is_truncated_with_a_marker() -> None:
    big = "x" * 1_000_000
    session = FakeSession({"job": lambda _: Observation(big)}, declared=("job",))
    result, counters = run(session, ToolCall("job"))
    content = result.message.content
    assert len(content) <= FAST.max_observation_chars and counters.truncated == 1
    kept = content.count("x")
    assert f"[... {1_000_000 - kept} characters cut ...]" in content


def test_lone_surrogates_in_an_observation_are_replaced() -> None:
    text = b"ok \xff".decode("utf-8", "surrogateescape")
    session = FakeSession({"job": lambda _: Observation(text)}, declared=("job",))
    result, _ = run(session, ToolCall("job"))
    assert result.message.content.encode("utf-8") == b"ok ?"


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    policy = ToolPolicy(backoff_base_s=0.5, backoff_max_s=4.0)
    assert 0.25 <= policy.backoff_s(0) <= 0.5
    assert 0.5 <= policy.backoff_s(1) <= 1.0
    assert 2.0 <= policy.backoff_s(10) <= 4.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"timeout_s": 0}, "timeout_s"),
        ({"timeout_s": float("inf")}, "timeout_s"),  # a thread's wait cannot take it
        ({"timeout_s": 1e10}, "timeout_s"),
        ({"timeout_s": float("nan")}, "timeout_s"),
        ({"user_turn_timeout_s": float("inf")}, "user_turn_timeout_s"),
        ({"tool_timeouts": {"nap": -1}}, "tool_timeouts"),
        ({"tool_timeouts": {"nap": float("inf")}}, "tool_timeouts"),
        ({"retries": -1}, "retries"),
        ({"backoff_base_s": 2.0, "backoff_max_s": 1.0}, "backoff_base_s"),
        ({"max_observation_chars": 10}, "max_observation_chars"),
    ],
)
def test_policy_rejects_bad_values_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ToolPolicy(**kwargs)


def test_policy_keeps_its_own_copy_of_the_overrides() -> None:
    overrides = {"nap": 1.0}
    policy = ToolPolicy(tool_timeouts=overrides)
    overrides["nap"] = 99.0
    assert policy.timeout_for("nap") == 1.0 and policy.timeout_for("other") == 10.0


def test_policy_pickles_and_converts_to_a_dict() -> None:
    policy = ToolPolicy(tool_timeouts={"nap": 1.0})
    assert pickle.loads(pickle.dumps(policy)) == policy
    assert dataclasses.asdict(policy)["tool_timeouts"] == {"nap": 1.0}


def test_counters_merge_and_export_metrics() -> None:
    total, episode = ToolCounters(calls=2, ok=1), ToolCounters(calls=3, timeouts=1)
    total.merge(episode)
    metrics = total.as_metrics(prefix="rollout/tools/")
    assert metrics["rollout/tools/calls"] == 5.0 and metrics["rollout/tools/timeouts"] == 1.0
    assert len(metrics) == 10


def test_doctests() -> None:
    assert doctest.testmod(guard_module).failed == 0
