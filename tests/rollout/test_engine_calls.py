"""A batch with one request the engine refuses: only that request's episodes fail, in
`generate_apart`, the lockstep loop and the scheduler alike; failures every request
shares are not split."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from posttrain.domains import get_domain
from posttrain.engines import (
    Completion,
    EngineUnavailable,
    GenerationRequest,
    ReplayEngine,
    SamplingParams,
)
from posttrain.rollout.engine_calls import EngineResultError, generate_apart
from posttrain.rollout.episode import run_episodes
from posttrain.rollout.scheduler import Scheduler
from posttrain.types import Task

PARAMS = SamplingParams(max_tokens=64, temperature=0.0)


class Picky:
    """Answers "ok" to every request but those keyed "bad", whose presence in a call
    makes it raise `error`; counts its calls."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error, self.calls = error or KeyError("no script for 'bad'"), 0

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        self.calls += 1
        if any(r.key == "bad" for r in requests):
            raise self.error
        return [[Completion([1], [0.0], "ok", "stop")] * r.params.n for r in requests]


def requests(keys: list[str]) -> list[GenerationRequest]:
    return [GenerationRequest([1], PARAMS, key=k) for k in keys]


def test_one_refused_request_fails_alone_within_a_few_calls() -> None:
    engine = Picky()
    keys = [f"t{i}" for i in range(8)]
    keys[5] = "bad"
    outcomes = generate_apart(engine, requests(keys))
    assert [isinstance(o, KeyError) for o in outcomes] == [k == "bad" for k in keys]
    assert all(o[0].text == "ok" for o in outcomes if isinstance(o, list))
    assert engine.calls <= 1 + 2 * 3  # the batch, then two halves per level of 8 = 2^3


@pytest.mark.parametrize(
    "error",
    [ConnectionError("reset"), EngineUnavailable("server down"), AttributeError("a bug")],
    ids=["os", "down", "bug"],
)
def test_a_failure_every_request_shares_is_not_split(error: Exception) -> None:
    engine = Picky(error)
    outcomes = generate_apart(engine, requests(["t0", "bad", "t2", "t3"]))
    assert outcomes == [error] * 4 and engine.calls == 1


def test_a_result_of_the_wrong_shape_fails_the_call_once_naming_the_engine() -> None:
    class Short(Picky):
        def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
            return super().generate(requests)[:-1]

    engine = Short()
    outcomes = generate_apart(engine, requests(["t0", "t1"]))
    assert all(isinstance(o, EngineResultError) for o in outcomes) and engine.calls == 1
    assert "engine Short returned 1 results for 2 requests" in str(outcomes[0])


def test_a_bug_in_the_engine_raises_out_of_the_lockstep_loop(tokenizer: Any) -> None:
    # It had been split 2N - 1 times and every episode recorded as unjudged: an
    # evaluation reported 0% and nothing raised (STYLE: programming errors raise).
    class Broken(Picky):
        def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
            self.calls += 1
            return [[r.no_such_field] for r in requests]  # type: ignore[attr-defined]

    tasks, _ = addition_tasks(tokenizer)
    engine = Broken()
    with pytest.raises(AttributeError, match="no_such_field"):
        run_episodes(tasks, engine, tokenizer, PARAMS, get_domain)
    assert engine.calls == 1


def addition_tasks(tokenizer: Any) -> tuple[list[Task], ReplayEngine]:
    """Four addition tasks and a replay engine that has no script for the first."""
    domain = get_domain("arith/addition-v1")
    tasks = [domain.generate(seed, 3) for seed in range(4)]
    engine = ReplayEngine(tokenizer)
    for task in tasks[1:]:
        engine.add(task.id, domain.reference(task))
    return tasks, engine


def test_the_lockstep_loop_fails_only_the_episode_the_engine_refuses(tokenizer: Any) -> None:
    tasks, engine = addition_tasks(tokenizer)
    [refused], *rest = run_episodes(tasks, engine, tokenizer, PARAMS, get_domain)
    assert refused.error is not None and "engine failed: KeyError" in refused.error
    assert all(group[0].verdict.passed for group in rest)


def test_the_scheduler_fails_only_the_episode_the_engine_refuses(tokenizer: Any) -> None:
    tasks, replay = addition_tasks(tokenizer)

    class Gated:
        """Holds its first call until the four tasks are queued behind it."""

        def __init__(self) -> None:
            self.busy, self.gate, self.calls = threading.Event(), threading.Event(), []  # type: list[int]

        def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
            self.calls.append(len(requests))
            self.busy.set()
            assert self.gate.wait(5.0)
            return replay.generate(requests)

        def update_weights(self, state_dict: Any) -> None:
            pass

    engine = Gated()
    with Scheduler(engine, tokenizer, get_domain, PARAMS) as sched:
        sched.submit(tasks[1:2])  # the engine takes this one alone, then waits
        assert engine.busy.wait(5.0)
        sched.submit(tasks)
        engine.gate.set()
        groups = sched.collect(5, timeout=10.0)
    assert engine.calls[1] == 4  # the four went to the engine together
    failed = [g[0] for g in groups if g[0].error is not None]
    assert [r.task_id for r in failed] == [tasks[0].id]
    assert "engine failed: KeyError" in str(failed[0].error)
    assert sum(g[0].verdict.passed for g in groups) == 4


def test_a_server_refusing_one_prompt_fails_only_that_episode(tokenizer: Any) -> None:
    from tests.engines.test_openai import engine_for, fake, reply

    domain = get_domain("arith/addition-v1")
    tasks = [domain.generate(seed, 3) for seed in range(4)]
    too_long = tasks[2].prompt[-1].content

    def answer(request: httpx.Request) -> httpx.Response:
        if too_long.encode() in request.content:
            return httpx.Response(400, json={"error": {"message": "maximum context length"}})
        return httpx.Response(200, json=reply("42"))

    handler, _ = fake(answer)
    with engine_for(handler) as engine:
        groups = run_episodes(tasks, engine, tokenizer, PARAMS, get_domain)
    errors = [g[0].error for g in groups]
    assert errors[:2] == [None, None] and errors[3] is None
    assert errors[2] is not None and "HTTP 400: maximum context length" in errors[2]
