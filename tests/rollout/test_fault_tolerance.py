"""Fault injection in episodes: a real sandbox killed mid-episode resumes from the last
per-turn snapshot on a fresh sandbox and is recorded once; without a snapshot, or past
the resume limit, the episode is a recorded failure and the batch goes on."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from posttrain.domains.base import Axes
from posttrain.engines import Completion, GenerationRequest, ReplayEngine, SamplingParams
from posttrain.rollout import environment as environment_module
from posttrain.rollout.episode import run_episodes
from posttrain.rollout.scheduler import Scheduler
from posttrain.sandbox import Sandbox, SandboxError, SandboxSpec, layers
from posttrain.store.traces import TraceStore
from posttrain.tools import format_tool_call, function_schema
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict

PARAMS = SamplingParams(max_tokens=256, temperature=0.0)
BUMP = function_schema("bump", "Add one to the counter file.", {"type": "object", "properties": {}})
needs_sandbox = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation here")


class CounterSession:
    """A counter in a file of a real sandbox's workspace; `bump` runs `sh` in it."""

    def __init__(self) -> None:
        self.tools = [BUMP]
        self.sandbox = Sandbox(SandboxSpec(memory_mb=256, timeout_s=5))
        self.sandbox.write_file("n", "0")
        self.restarts = self.sandbox.restarts

    def call(self, tool_call: ToolCall) -> Observation:
        if not self.sandbox.alive:  # a restarted sandbox would have lost the workspace
            raise SandboxError("the sandbox died")
        result = self.sandbox.exec(["sh", "-c", "echo $(( $(cat n) + 1 )) > n; cat n"], timeout=5)
        # The sandbox may die after the check above; `exec` then restarts it (empty
        # workspace, `n` missing, so the bump says "1"). Its restart count tells.
        if self.sandbox.restarts != self.restarts:
            raise SandboxError("the sandbox died and was restarted: its workspace is lost")
        if result.error:
            raise SandboxError(result.error)
        return Observation(result.stdout.strip())

    def user_turn(self, assistant_message: Message) -> Message | None:
        return None

    def snapshot(self) -> Any:
        return self.sandbox.snapshot()

    def restore(self, snapshot: Any) -> None:
        self.sandbox.restore(snapshot)

    def close(self) -> None:
        self.sandbox.close()

    def count(self) -> str:
        return self.sandbox.read_file("n").strip()


class CounterDomain:
    """Bump twice, then answer the count; passes when the answer and the file say 2."""

    id = "test/sandbox-counter-v1"
    axes = Axes("text", "sandbox", "multi", "state")
    max_turns = 4

    def __init__(self) -> None:
        self.opened: list[CounterSession] = []
        self.final_counts: list[str] = []

    def generate(self, seed: int, difficulty: int) -> Task:
        prompt = [Message("user", "bump the counter twice, then say its value")]
        return Task(f"{self.id}@{seed}.d{difficulty}", self.id, prompt, "2", difficulty, seed)

    def reference(self, task: Task) -> Reference:
        call = format_tool_call(ToolCall("bump", {}))
        return Reference([Message("assistant", call), Message("assistant", call), Message("assistant", "2")])  # fmt: skip

    def open(self, task: Task, sandbox: object | None = None) -> CounterSession:
        session = CounterSession()
        self.opened.append(session)
        return session

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        count = session.count()
        self.final_counts.append(count)
        passed = rollout.final_text == "2" and count == "2"
        return Verdict(float(passed), passed, f"said {rollout.final_text!r}, file holds {count}")


class KillingReplay(ReplayEngine):
    """Replays references; before turn `at` it SIGKILLs the first session's sandbox."""

    def __init__(self, tokenizer: Any, domain: CounterDomain, at: int) -> None:
        super().__init__(tokenizer)
        self.domain, self.at = domain, at

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        if any(r.turn == self.at for r in requests) and self.domain.opened:
            for pid in self.domain.opened[0].sandbox.pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        return super().generate(requests)


def _engine(tokenizer: Any, domain: CounterDomain, tasks: list[Task], at: int) -> KillingReplay:
    engine = KillingReplay(tokenizer, domain, at)
    for task in tasks:
        engine.add(task.id, domain.reference(task))
    return engine


@needs_sandbox
@pytest.mark.parametrize("runner", ["lockstep", "scheduler"])
def test_a_sandbox_killed_mid_episode_resumes_from_its_snapshot_and_is_recorded_once(
    tokenizer: Any, tmp_path: Path, runner: str
) -> None:
    domain = CounterDomain()
    tasks = [domain.generate(0, 1)]
    engine = _engine(tokenizer, domain, tasks, at=1)  # killed after the first bump
    if runner == "lockstep":
        [[rollout]] = run_episodes(tasks, engine, tokenizer, PARAMS, lambda _: domain)
    else:
        with Scheduler(engine, tokenizer, lambda _: domain, PARAMS) as sched:
            [[rollout]] = sched.run(tasks)
    assert rollout.error is None and rollout.verdict.passed, rollout.verdict.reason
    assert rollout.timings["sandbox_resumes"] == 1.0
    assert len(domain.opened) == 2  # the fresh sandbox, restored to "1" before the retry
    assert [o.content for t in rollout.turns for o in t.observations] == ["1", "2"]
    with TraceStore(tmp_path / "traces.sqlite") as store:
        assert store.record([rollout], stage="grpo") == 1
        assert store.record([rollout], stage="grpo") == 0  # a retried record: still once
        assert store.count() == 1


class NoSnapshotSession(CounterSession):
    snapshot = None  # type: ignore[assignment]


@needs_sandbox
def test_without_a_snapshot_a_dead_sandbox_is_a_recorded_failure(tokenizer: Any) -> None:
    domain = CounterDomain()
    domain.open = lambda task, sandbox=None: _remember(domain, NoSnapshotSession())  # type: ignore[method-assign]
    tasks = [domain.generate(0, 1), domain.generate(1, 1)]
    engine = _engine(tokenizer, domain, tasks, at=1)
    first, second = (g[0] for g in run_episodes(tasks, engine, tokenizer, PARAMS, lambda _: domain))
    # The guard retried the dead sandbox, then showed the model the failure; the
    # episode went on, and its verdict fails (the counter's file is gone).
    [observation] = first.turns[1].observations
    assert observation.content.startswith("error:") and "the sandbox died" in observation.content
    assert first.tool_stats["tools/infra_failures"] == 1.0
    assert first.tool_stats["tools/infra_retries"] == 2.0
    assert not first.verdict.passed
    assert second.error is None and second.verdict.passed  # the batch went on


def _remember(domain: CounterDomain, session: CounterSession) -> CounterSession:
    domain.opened.append(session)
    return session


@needs_sandbox
def test_resumes_stop_at_the_limit(tokenizer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment_module, "MAX_RESUMES", 0)
    domain = CounterDomain()
    tasks = [domain.generate(0, 1)]
    [[rollout]] = run_episodes(tasks, _engine(tokenizer, domain, tasks, 1), tokenizer, PARAMS, lambda _: domain)  # fmt: skip
    assert "sandbox_resumes" not in rollout.timings
    assert rollout.tool_stats["tools/infra_failures"] == 1.0 and not rollout.verdict.passed
