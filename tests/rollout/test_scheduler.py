"""The rollout scheduler: same rollouts as the lockstep loop, over-provisioning with
staleness, longest-first with aging, retries on infrastructure errors only, timeouts,
backpressure, failures recorded rather than raised, and per-stage metrics."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from posttrain.domains import STARTER_DOMAINS, get_domain
from posttrain.engines import Completion, GenerationRequest, ReplayEngine, SamplingParams
from posttrain.engines.prefix_cache import sample_episode
from posttrain.rollout import scheduler as scheduler_module
from posttrain.rollout.episode import run_episodes
from posttrain.rollout.scheduler import LengthModel, Scheduler, SchedulerConfig
from posttrain.types import Observation, Rollout, Task, ToolCall
from tests.rollout.test_episode import (
    PARAMS,
    ExitingCalculator,
    ExplodingCalculator,
    UnstartableCalculator,
    calculator_task,
    lookup,
)


def starter_tasks(per_domain: int = 3) -> list[Task]:
    return [
        get_domain(d).generate(seed, 1 + seed % 4)
        for d in STARTER_DOMAINS
        for seed in range(per_domain)
    ]


def replay_engine(tokenizer: Any, tasks: list[Task]) -> ReplayEngine:
    engine = ReplayEngine(tokenizer)
    for task in tasks:
        engine.add(task.id, lookup(task.domain).reference(task))
    return engine


def test_run_gives_the_lockstep_loops_rollouts_in_task_order(tokenizer: Any) -> None:
    tasks = starter_tasks()
    engine = replay_engine(tokenizer, tasks)
    params = SamplingParams(max_tokens=256, temperature=0.0, n=2)
    lockstep = run_episodes(tasks, engine, tokenizer, params, lookup)
    with Scheduler(engine, tokenizer, lookup, params, SchedulerConfig(engine_slots=5)) as sched:
        scheduled = sched.run(tasks)
    assert [[r.task_id for r in g] for g in scheduled] == [[t.id] * 2 for t in tasks]
    for want, got in zip(lockstep, scheduled, strict=True):
        for a, b in zip(want, got, strict=True):
            assert b.completion_ids == a.completion_ids and b.loss_mask == a.loss_mask
            assert b.verdict.passed and b.reward == a.reward
            assert b.timings["staleness"] == 0.0 and b.timings["queue_s"] >= 0.0


def test_collect_takes_the_first_groups_and_the_rest_carry_on_with_their_staleness(
    tokenizer: Any,
) -> None:
    tasks = starter_tasks(per_domain=2)
    with Scheduler(replay_engine(tokenizer, tasks), tokenizer, lookup, PARAMS) as sched:
        sched.submit(tasks, policy_version=0)
        first = sched.collect(3)
        sched.set_policy_version(1)
        rest = sched.collect(len(tasks) - 3)
        assert sched.inflight == 0
    assert len(first) == 3 and all(g[0].timings["staleness"] == 0.0 for g in first)
    assert all(g[0].timings["staleness"] == 1.0 for g in rest)
    assert sorted(g[0].task_id for g in first + rest) == sorted(t.id for t in tasks)


class SlowEngine:
    """Replays "5" after `delay` seconds, recording the task ids of each call."""

    def __init__(self, tokenizer: Any, delay: float = 0.0) -> None:
        self.tokenizer, self.delay, self.calls = tokenizer, delay, []  # type: list[list[str]]
        self.failures: list[Exception] = []
        self.busy = threading.Event()  # set once a call has begun

    def update_weights(self, state_dict: Any) -> None:
        pass

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        if self.failures:
            raise self.failures.pop(0)
        self.busy.set()
        time.sleep(self.delay)
        self.calls.append([r.key for r in requests])
        ids = [*self.tokenizer.encode("5", add_special_tokens=False), self.tokenizer.eos_token_id]
        return [[Completion(ids, [0.0] * len(ids), "5", "stop")] * r.params.n for r in requests]


def addition(seed: int, difficulty: int) -> Task:
    return get_domain("arith/addition-v1").generate(seed, difficulty)


def test_the_longest_predicted_work_goes_first_and_aging_lets_old_short_work_through(
    tokenizer: Any,
) -> None:
    lengths = LengthModel()
    lengths.observe("arith/addition-v1", 9, 50.0)  # long
    lengths.observe("arith/addition-v1", 1, 1.0)  # short
    engine = SlowEngine(tokenizer, delay=0.05)
    cfg = SchedulerConfig(engine_slots=1, aging=0.0)
    with Scheduler(engine, tokenizer, lookup, PARAMS, cfg, lengths=lengths) as sched:
        # The engine is busy with the first task while the other two queue.
        sched.submit([addition(0, 1)])
        assert engine.busy.wait(2.0)
        sched.submit([addition(1, 1), addition(2, 9)])
        sched.collect(3)
    assert [c[0] for c in engine.calls[1:]] == [addition(2, 9).id, addition(1, 1).id]

    engine = SlowEngine(tokenizer, delay=0.05)
    cfg = SchedulerConfig(engine_slots=1, aging=1e5)  # 20 ms of waiting outweighs 50 s
    with Scheduler(engine, tokenizer, lookup, PARAMS, cfg, lengths=lengths) as sched:
        sched.submit([addition(0, 1)])
        assert engine.busy.wait(2.0)
        sched.submit([addition(1, 1)])
        time.sleep(0.02)
        sched.submit([addition(2, 9)])
        sched.collect(3)
    assert [c[0] for c in engine.calls[1:]] == [addition(1, 1).id, addition(2, 9).id]


def test_transient_engine_errors_are_retried_and_others_become_recorded_failures(
    tokenizer: Any,
) -> None:
    engine = SlowEngine(tokenizer)
    engine.failures = [ConnectionError("reset"), TimeoutError("slow")]
    cfg = SchedulerConfig(retry_backoff_s=0.001)
    with Scheduler(engine, tokenizer, lookup, PARAMS, cfg) as sched:
        [[ok]] = sched.run([addition(0, 1)])
        assert ok.error is None and sched.metrics()["sched/engine/retries"] == 2.0
        engine.failures = [ValueError("bad request")]
        [[failed]] = sched.run([addition(1, 1)])
        assert failed.error is not None and "engine failed: ValueError" in failed.error
        assert failed.reward == 0.0
        [[after]] = sched.run([addition(2, 1)])  # the scheduler goes on
        assert after.error is None
    assert sched.metrics()["sched/engine/retries"] == 2.0  # ValueError: never retried


def test_a_crashing_session_and_a_raising_verifier_are_recorded_and_the_batch_goes_on(
    tokenizer: Any,
) -> None:
    crashing = ExplodingCalculator().generate(0, 3)
    broken = lookup("test/broken-verifier-v1").generate(0, 1)
    tasks = [crashing, broken, calculator_task(1)]
    engine = replay_engine(tokenizer, tasks)
    with Scheduler(engine, tokenizer, lookup, PARAMS) as sched:
        a, b, c = (g[0] for g in sched.run(tasks))
    assert a.error is not None and "the sandbox went away" in a.error
    assert b.verdict.error is not None and "verifier bug" in b.verdict.error
    assert c.verdict.passed


@pytest.mark.parametrize("exc", [SystemExit("plug-in exit"), KeyboardInterrupt("plug-in")])
@pytest.mark.parametrize("where", ["user", "verifier"])
def test_a_base_exception_in_a_domains_code_is_recorded_and_its_group_completes(
    tokenizer: Any, where: str, exc: BaseException
) -> None:
    # They run on worker threads, where no Ctrl-C lands: every one is the domain's doing.
    exiting = ExitingCalculator(exc, where)
    tasks = [exiting.generate(0, 3), exiting.generate(1, 3)]
    engine = ReplayEngine(tokenizer)
    for task in tasks:
        engine.add(task.id, exiting.reference(task))
    with Scheduler(engine, tokenizer, lambda _: exiting, PARAMS) as sched:
        sched.submit(tasks)
        groups = sched.collect(2, timeout=10.0)  # the old scheduler waited here for ever
        assert len(groups) == 2 and sched.inflight == 0
    for [rollout] in groups:
        error = rollout.verdict.error or rollout.error  # a verifier's SystemExit: its verdict's
        assert error is not None and f"{type(exc).__name__}: plug-in" in error
        assert rollout.reward == 0.0 and not rollout.verdict.passed
    assert all(s.closed for s in exiting.sessions)


class SleepySession:
    tools: list[dict[str, Any]] = []

    def call(self, tool_call: ToolCall) -> Observation:
        time.sleep(0.3)
        return Observation("later")


def test_an_episode_past_its_timeout_ends_as_a_recorded_failure(tokenizer: Any) -> None:
    task = calculator_task(0)
    domain = lookup(task.domain)
    slow = type("SlowCalc", (type(domain),), {"open": lambda self, t, s=None: _sleepy(t)})()
    cfg = SchedulerConfig(episode_timeout_s=0.1)
    engine = replay_engine(tokenizer, [task])
    with Scheduler(engine, tokenizer, lambda _: slow, PARAMS, cfg) as sched:
        [[rollout]] = sched.run([task])
    assert rollout.error is not None and "timed out after 0.1s" in rollout.error


def _sleepy(task: Task) -> Any:
    from posttrain.domains.calculator import CalculatorSession

    session = CalculatorSession(task)
    session.call = SleepySession().call  # type: ignore[method-assign]
    return session


def test_submit_blocks_while_the_inflight_limit_is_reached(tokenizer: Any) -> None:
    engine = SlowEngine(tokenizer, delay=0.2)
    cfg = SchedulerConfig(max_inflight_groups=1)
    with Scheduler(engine, tokenizer, lookup, PARAMS, cfg) as sched:
        sched.submit([addition(0, 1)])
        done = threading.Event()
        worker = threading.Thread(target=lambda: (sched.submit([addition(1, 1)]), done.set()))
        worker.start()
        assert not done.wait(0.05)  # blocked: one group in flight
        assert len(sched.collect(1)) == 1
        assert done.wait(2.0)
        worker.join()
        assert len(sched.collect(1)) == 1


def test_metrics_report_each_stage(tokenizer: Any) -> None:
    tasks = [calculator_task(s) for s in range(3)]
    with Scheduler(replay_engine(tokenizer, tasks), tokenizer, lookup, PARAMS) as sched:
        sched.run(tasks)
        metrics = sched.metrics()
    for stage in ("engine", "env", "verify"):
        assert metrics[f"sched/{stage}/calls"] >= 1
        assert 0.0 <= metrics[f"sched/{stage}/utilization"] <= 1.0
    assert metrics["sched/verify/items"] == 3.0


def test_a_closed_scheduler_refuses_work() -> None:
    sched = Scheduler(SlowEngine(None), None, lookup, PARAMS)
    sched.close()
    with pytest.raises(RuntimeError, match="closed"):
        sched.collect(1)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("env_workers", 0),
        ("engine_retries", -1),  # was: every episode "scheduler failed: AssertionError"
        ("retry_backoff_s", -0.1),  # was: "ValueError: sleep length must be non-negative"
        ("aging", -1.0),  # old work would wait ever longer: starvation
        ("episode_timeout_s", 0.0),
    ],
)
def test_bad_settings_are_named(setting: str, value: float) -> None:
    with pytest.raises(ValueError, match=setting):
        SchedulerConfig(**{setting: value})


def count_finishes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids of the episodes the scheduler records from now on, one entry per record."""
    recorded: list[int] = []
    real = scheduler_module.finish

    def finish(ep: Any, policy_version: int) -> Rollout:
        recorded.append(id(ep))
        return real(ep, policy_version)

    monkeypatch.setattr(scheduler_module, "finish", finish)
    return recorded


def test_sessions_that_cannot_open_are_recorded_once_and_the_rest_of_the_batch_runs(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    flaky = UnstartableCalculator(fails=lambda k: k in (1, 2))  # task 0's 2nd, task 1's 1st
    tasks = [flaky.generate(0, 3), flaky.generate(1, 3), calculator_task(2)]
    engine = ReplayEngine(tokenizer)
    for task in tasks:
        engine.add(task.id, lookup(task.domain).reference(task))
    params = SamplingParams(max_tokens=256, temperature=0.0, n=2)
    recorded = count_finishes(monkeypatch)
    get = lambda d: flaky if d == flaky.id else lookup(d)  # noqa: E731
    with Scheduler(engine, tokenizer, get, params) as sched:
        groups = sched.run(tasks)
        assert sched.inflight == 0
    reason = "session open failed: SandboxError: sandbox failed to start"
    assert [[r.error for r in g] for g in groups] == [[None, reason], [reason, None], [None, None]]
    assert all(r.verdict.passed for g in groups for r in g if r.error is None)
    assert len(recorded) == len(set(recorded)) == 6
    assert len(flaky.sessions) == 2 and all(s.closed for s in flaky.sessions)


def test_no_episode_times_out_while_its_group_waits_for_an_inflight_slot(
    tokenizer: Any,
) -> None:
    engine = SlowEngine(tokenizer, delay=0.5)
    # A group whose clock ran while it waited for its slot would reach the engine a
    # whole call (0.5 s) old, past the limit; time in flight alone stays under it.
    cfg = SchedulerConfig(max_inflight_groups=1, episode_timeout_s=0.4)
    with Scheduler(engine, tokenizer, lookup, PARAMS, cfg) as sched:
        groups = sched.run([addition(s, 1) for s in range(3)])
    assert [g[0].error for g in groups] == [None, None, None]
    assert [len(g[0].turns) for g in groups] == [1, 1, 1]


def test_a_group_waiting_for_an_inflight_slot_holds_no_session(tokenizer: Any) -> None:
    counting = UnstartableCalculator(fails=lambda k: False)
    engine = SlowEngine(tokenizer, delay=0.2)
    cfg = SchedulerConfig(max_inflight_groups=1)
    with Scheduler(engine, tokenizer, lambda _: counting, PARAMS, cfg) as sched:
        sched.submit([counting.generate(0, 3)])
        done = threading.Event()
        waiting = threading.Thread(
            target=lambda: (sched.submit([counting.generate(1, 3)]), done.set())
        )
        waiting.start()
        assert not done.wait(0.05)  # blocked behind the first group
        assert counting.opens == 1
        sched.collect(1)
        assert done.wait(2.0)
        waiting.join()
        sched.collect(1)
    assert counting.opens == 2 and all(s.closed for s in counting.sessions)


class ShortEngine(ReplayEngine):
    """Replays references, one completion short on every request for several samples."""

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        out = super().generate(requests)
        return [r[:-1] if q.params.n > 1 else r for r, q in zip(out, requests, strict=True)]


def test_an_engine_result_of_the_wrong_shape_fails_each_episode_once_naming_the_counts(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = calculator_task(0)
    engine = ShortEngine(tokenizer)
    engine.add(task.id, lookup(task.domain).reference(task))
    params = SamplingParams(max_tokens=256, temperature=0.0, n=2)
    recorded = count_finishes(monkeypatch)
    with Scheduler(engine, tokenizer, lookup, params) as sched:
        [[a, b]] = sched.run([task])
        time.sleep(0.2)  # a second record, were there one, would land by now
        assert sched.inflight == 0
    assert a.error == b.error
    assert a.error is not None and "engine ShortEngine returned 1 completions" in a.error
    assert "asked for 2" in a.error
    assert len(recorded) == len(set(recorded)) == 2


def test_a_failure_partway_through_a_batch_fails_only_the_episodes_not_yet_handed_on(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = calculator_task(0)  # its first turn is a tool call: the env stage takes it
    real = scheduler_module.record_turn
    turns = iter(range(1000))

    def record_turn(ep: Any, completion: Completion) -> Any:
        if next(turns) == 1:  # the second sample of the first turn
            raise RuntimeError("record bug")
        return real(ep, completion)

    monkeypatch.setattr(scheduler_module, "record_turn", record_turn)
    recorded = count_finishes(monkeypatch)
    params = SamplingParams(max_tokens=256, temperature=0.0, n=2)
    with Scheduler(replay_engine(tokenizer, [task]), tokenizer, lookup, params) as sched:
        [[handed_on, failed]] = sched.run([task])
        time.sleep(0.2)  # a second record, were there one, would land by now
        assert sched.inflight == 0
    assert handed_on.error is None and handed_on.verdict.passed
    assert failed.error == "scheduler failed: RuntimeError: record bug"
    assert len(recorded) == len(set(recorded)) == 2


class KeepingReplay(ReplayEngine):
    """Replays references, holding the KV caches an `HFEngine` would keep (one per sample
    of a request that names its episode) until they are released."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer)
        self.kept: set[str] = set()

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        for r in requests:
            if r.episode is not None:
                n = r.params.n
                self.kept |= {sample_episode(r.episode, s, n) for s in range(n)}
        return super().generate(requests)

    def release(self, episodes: list[str]) -> None:
        self.kept -= set(episodes)


def test_the_engine_releases_the_kv_cache_of_a_sample_whose_session_did_not_open(
    tokenizer: Any,
) -> None:
    flaky = UnstartableCalculator(fails=lambda k: k == 1)  # multi-turn; the 2nd sample fails
    task = flaky.generate(0, 3)
    engine = KeepingReplay(tokenizer)
    engine.add(task.id, lookup(task.domain).reference(task))
    params = SamplingParams(max_tokens=256, temperature=0.0, n=2)
    with Scheduler(engine, tokenizer, lambda _: flaky, params) as sched:
        [[ok, failed]] = sched.run([task])
    assert ok.verdict.passed and failed.error is not None
    assert engine.kept == set()


class GatedEngine(SlowEngine):
    """`SlowEngine` whose calls wait for `gate`."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer)
        self.gate = threading.Event()

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        self.busy.set()
        assert self.gate.wait(5.0)
        return super().generate(requests)


def test_close_closes_the_sessions_of_episodes_left_unfinished(tokenizer: Any) -> None:
    counting = UnstartableCalculator(fails=lambda k: False)
    engine = GatedEngine(tokenizer)
    sched = Scheduler(engine, tokenizer, lambda _: counting, PARAMS, SchedulerConfig(engine_slots=1))  # fmt: skip
    sched.submit([counting.generate(0, 3)])
    assert engine.busy.wait(2.0)  # the first group is in the engine
    sched.submit([counting.generate(1, 3)])  # the second waits in the queue
    closer = threading.Thread(target=sched.close)
    closer.start()
    with sched._cond:
        assert sched._cond.wait_for(lambda: sched._closed, timeout=2.0)
    engine.gate.set()  # the engine thread finishes its call, then stops
    closer.join(5.0)
    assert not closer.is_alive()
    assert counting.opens == 2 and all(s.closed for s in counting.sessions)


def test_the_verify_stage_reports_the_depth_of_its_queue(tokenizer: Any) -> None:
    gate, entered = threading.Event(), threading.Event()
    addition_domain = lookup("arith/addition-v1")

    def verify(self: Any, task: Task, rollout: Rollout, session: Any) -> Any:
        entered.set()
        assert gate.wait(5.0)
        return type(addition_domain).verify(self, task, rollout, session)

    gated = type("GatedAddition", (type(addition_domain),), {"verify": verify})()
    cfg = SchedulerConfig(verify_workers=1)
    with Scheduler(SlowEngine(tokenizer), tokenizer, lambda _: gated, PARAMS, cfg) as sched:
        sched.submit([addition(s, 1) for s in range(3)])
        assert entered.wait(5.0)  # one verification runs; the other two wait for the worker
        deadline = time.monotonic() + 5.0
        while sched.metrics()["sched/verify/queue_depth"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sched.metrics()["sched/verify/queue_depth"] == 2.0
        gate.set()
        assert len(sched.collect(3)) == 3
        metrics = sched.metrics()
    assert metrics["sched/verify/queue_depth"] == 0.0
    assert metrics["sched/verify/queue_depth_max"] >= 2.0


class GatedOpenCalculator(UnstartableCalculator):
    """`UnstartableCalculator` whose opens wait for `gate` (`entered` set on the first)."""

    def __init__(self, fails: Any = lambda k: False) -> None:
        super().__init__(fails)
        self.gate, self.entered = threading.Event(), threading.Event()

    def open(self, task: Task, sandbox: object | None = None) -> Any:
        self.entered.set()
        assert self.gate.wait(5.0)
        return super().open(task, sandbox)


# "one-failed": the group's second session does not open, so that episode goes straight
# to the verify pool (before: "cannot schedule new futures after shutdown").
@pytest.mark.parametrize("fails", [lambda k: False, lambda k: k == 1], ids=["opened", "one-failed"])
def test_a_submit_that_close_overtakes_raises_and_leaves_no_session_open(
    tokenizer: Any, fails: Any
) -> None:
    gated = GatedOpenCalculator(fails)
    params = SamplingParams(max_tokens=256, temperature=0.0, n=2)
    sched = Scheduler(SlowEngine(tokenizer), tokenizer, lambda _: gated, params)
    raised: list[BaseException] = []

    def submit() -> None:
        try:
            sched.submit([gated.generate(0, 3)])
        except BaseException as exc:
            raised.append(exc)

    submitter = threading.Thread(target=submit)
    submitter.start()
    assert gated.entered.wait(2.0)  # submit holds a slot and is opening sessions
    closer = threading.Thread(target=sched.close)
    closer.start()
    with sched._cond:
        assert sched._cond.wait_for(lambda: sched._closed, timeout=2.0)
    closer.join(2.0)  # close does not wait for the submit (it may finish first)
    gated.gate.set()
    submitter.join(5.0)
    closer.join(5.0)
    assert not submitter.is_alive() and not closer.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], RuntimeError)
    assert "close() ran while submit was opening task" in str(raised[0])
    assert gated.sessions and all(s.closed for s in gated.sessions)
    assert sched._running == {} and sched._heap == [] and sched.inflight == 0


def test_a_second_concurrent_consumer_is_refused_and_the_first_gets_its_groups(
    tokenizer: Any,
) -> None:
    engine = GatedEngine(tokenizer)
    with Scheduler(engine, tokenizer, lookup, PARAMS) as sched:
        got: list[list[list[Rollout]]] = []
        first = threading.Thread(target=lambda: got.append(sched.run([addition(0, 1)])))
        first.start()
        assert engine.busy.wait(2.0)  # `run` submitted its group and waits for it
        # Before: this collect took run's group, and run waited for it forever.
        with pytest.raises(RuntimeError, match="single-consumer.*collect"):
            sched.collect(1, timeout=2.0)
        engine.gate.set()
        first.join(5.0)
        assert not first.is_alive()
        assert [[r.task_id for r in g] for g in got[0]] == [[addition(0, 1).id]]
        sched.submit([addition(1, 1)])  # consumers one after another are fine
        assert len(sched.collect(1, timeout=5.0)) == 1
