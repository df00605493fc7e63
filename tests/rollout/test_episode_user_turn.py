"""A scripted user that never answers: its episode ends as a recorded session failure
within the tool policy's `user_turn_timeout_s`, in the lockstep loop and in the
scheduler's env stage alike, and the rest of the batch runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from posttrain.domains import Domain
from posttrain.domains.calculator import CalculatorDomain, CalculatorSession
from posttrain.engines import ReplayEngine
from posttrain.rollout.episode import run_episodes
from posttrain.rollout.scheduler import Scheduler, SchedulerConfig
from posttrain.tools import ToolPolicy
from posttrain.types import Message, Rollout, Task
from tests.rollout.test_episode import PARAMS, calculator_task, lookup

POLICY = ToolPolicy(user_turn_timeout_s=0.2)
WAIT_S = 30.0  # far past the policy's timeout: a hang, not a slow machine


class HangingUserCalculator(CalculatorDomain):
    """The calculator whose scripted user, asked for a turn, waits until `release`."""

    id = "test/hanging-user-v1"

    def __init__(self) -> None:
        self.release, self.asked = threading.Event(), threading.Event()

    def open(self, task: Task, sandbox: object | None = None) -> CalculatorSession:
        domain = self

        class Hanging(CalculatorSession):
            def user_turn(self, assistant_message: Message) -> Message | None:
                domain.asked.set()
                domain.release.wait()
                return None

        return Hanging(task)


@pytest.fixture
def hanging() -> Iterator[HangingUserCalculator]:
    domain = HangingUserCalculator()
    yield domain
    domain.release.set()  # let the abandoned worker thread finish


def find(hanging: Domain) -> Callable[[str], Domain]:
    return lambda domain_id: hanging if domain_id == hanging.id else lookup(domain_id)


def within(
    seconds: float, work: Callable[[], list[list[Rollout]]], release: threading.Event
) -> list[list[Rollout]]:
    """`work()`, run on a thread; fails the test instead of hanging it (releasing the
    scripted user first, so that the scheduler can close)."""
    out: list[list[list[Rollout]]] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    if not out:
        release.set()
    assert out, f"the batch did not finish within {seconds:g}s"
    return out[0]


def tasks_and_engine(hanging: HangingUserCalculator, tokenizer: Any) -> tuple[list[Task], Any]:
    tasks = [hanging.generate(0, 3), calculator_task(1)]
    engine = ReplayEngine(tokenizer)
    for task in tasks:
        engine.add(task.id, find(hanging)(task.domain).reference(task))
    return tasks, engine


def assert_hang_recorded(hung: Rollout, other: Rollout, hanging: HangingUserCalculator) -> None:
    assert hanging.asked.is_set()
    assert hung.error == "session failed: TimeoutError: the scripted user did not answer within 0.2s"  # fmt: skip
    assert not hung.judged and hung.reward == 0.0
    assert other.error is None and other.verdict.passed


def test_run_episodes_ends_a_hanging_user_turn_as_a_session_failure(
    hanging: HangingUserCalculator, tokenizer: Any
) -> None:
    tasks, engine = tasks_and_engine(hanging, tokenizer)
    groups = within(
        WAIT_S,
        lambda: run_episodes(tasks, engine, tokenizer, PARAMS, find(hanging), tool_policy=POLICY),
        hanging.release,
    )
    assert_hang_recorded(groups[0][0], groups[1][0], hanging)


def test_the_scheduler_ends_a_hanging_user_turn_and_frees_its_env_worker(
    hanging: HangingUserCalculator, tokenizer: Any
) -> None:
    tasks, engine = tasks_and_engine(hanging, tokenizer)
    cfg = SchedulerConfig(env_workers=1)  # one worker: a held one would stall the other task
    with Scheduler(engine, tokenizer, find(hanging), PARAMS, cfg, tool_policy=POLICY) as sched:
        groups = within(WAIT_S, lambda: sched.run(tasks), hanging.release)
    assert_hang_recorded(groups[0][0], groups[1][0], hanging)


def test_the_user_turn_timeout_defaults_to_the_tool_timeout() -> None:
    assert ToolPolicy(timeout_s=3).user_turn_timeout() == 3.0
    assert ToolPolicy(timeout_s=3, user_turn_timeout_s=60).user_turn_timeout() == 60.0
    with pytest.raises(ValueError, match="user_turn_timeout_s"):
        ToolPolicy(user_turn_timeout_s=0)
