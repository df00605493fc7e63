"""Rollouts on Ray: the local loop's rollouts with one worker, every group exactly once
with two, the scheduler's collect / staleness / backpressure semantics, weights that
reach every worker after the chunks queued before them, failures recorded, and a
worker killed mid-chunk restarted with its chunk redone and delivered once."""

from __future__ import annotations

import copy
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from posttrain.engines import (  # noqa: E402
    Completion,
    EngineUnavailable,
    GenerationRequest,
    HFEngine,
    ReplayEngine,
    SamplingParams,
)
from posttrain.rollout.backends.ray_backend import RayRollouts, ensure_ray  # noqa: E402
from posttrain.rollout.backends.ray_worker import HFEngineFactory  # noqa: E402
from posttrain.rollout.episode import run_episodes  # noqa: E402
from posttrain.types import Task  # noqa: E402
from tests.rollout.test_episode import UnstartableCalculator, lookup  # noqa: E402
from tests.rollout.test_scheduler import addition, starter_tasks  # noqa: E402

PARAMS = SamplingParams(max_tokens=256, temperature=0.0, n=2)
STARTERS = starter_tasks(per_domain=3)  # addition, reverse, sort, multi-turn calculator
EXTRA = [addition(100 + s, 1) for s in range(12)]


class ProbeEngine(ReplayEngine):
    """Replays references. Its "weights" steer it: {"marker": m} answers "weights m";
    {"delay": s, "signal_dir": d} leaves a file in d, then sleeps s per call;
    {"raise": msg} raises EngineUnavailable(msg), which fails every request of a call
    (an error of one request's would fail its episodes only, and not the chunk);
    {"load_delay": s, "load_signal": f} makes loading them take s seconds, then write
    the file f."""

    def __init__(self, tokenizer: Any, tasks: list[Task]) -> None:
        super().__init__(tokenizer)
        for task in tasks:
            self.add(task.id, lookup(task.domain).reference(task))
        self.state: dict[str, Any] = {}

    def update_weights(self, state_dict: Any) -> None:
        self.state = dict(state_dict)
        if "load_signal" in self.state:  # a slow load that says when it is done
            time.sleep(self.state["load_delay"])
            Path(self.state["load_signal"]).write_text("loaded")

    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]:
        if "raise" in self.state:
            raise EngineUnavailable(self.state["raise"])
        if "signal_dir" in self.state:
            keys = "\n".join(r.key for r in requests)
            Path(self.state["signal_dir"], f"{os.getpid()}-{uuid.uuid4().hex}").write_text(keys)
        time.sleep(self.state.get("delay", 0.0))
        if "marker" not in self.state:
            return super().generate(requests)
        text = f"weights {self.state['marker']}"
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.eos_id]  # type: ignore[attr-defined]
        return [[Completion(ids, [0.0] * len(ids), text, "stop")] * r.params.n for r in requests]


def probe_factory(tokenizer: Any) -> Any:
    tasks = STARTERS + EXTRA
    return lambda: ProbeEngine(tokenizer, tasks)


@pytest.fixture(scope="module")
def one_worker(ray_local: Any, tokenizer: Any) -> Iterator[RayRollouts]:
    with RayRollouts(probe_factory(tokenizer), tokenizer, lookup, PARAMS, workers=1) as rollouts:
        yield rollouts


@pytest.fixture(scope="module")
def two_workers(ray_local: Any, tokenizer: Any) -> Iterator[RayRollouts]:
    factory = probe_factory(tokenizer)
    with RayRollouts(factory, tokenizer, lookup, PARAMS, workers=2, chunk_groups=2, max_inflight_groups=4) as rollouts:  # fmt: skip
        yield rollouts


def set_state(rollouts: RayRollouts, version: int = 0, **state: Any) -> None:
    rollouts.update_weights(state, version)


def by_task(groups: list[list[Any]]) -> Counter[str]:
    return Counter(g[0].task_id for g in groups)


def test_one_worker_gives_the_local_loops_rollouts_in_task_order(
    one_worker: RayRollouts, tokenizer: Any
) -> None:
    set_state(one_worker)
    local = run_episodes(STARTERS, probe_factory(tokenizer)(), tokenizer, PARAMS, lookup)
    remote = one_worker.run(STARTERS)
    assert [[r.task_id for r in g] for g in remote] == [[t.id] * 2 for t in STARTERS]
    for want, got in zip(local, remote, strict=True):
        for a, b in zip(want, got, strict=True):
            assert (b.completion_ids, b.loss_mask, b.logprobs) == (a.completion_ids, a.loss_mask, a.logprobs)  # fmt: skip
            assert b.verdict.passed and b.reward == a.reward and b.timings["staleness"] == 0.0
    assert max(len(g[0].turns) for g in remote) > 1  # the calculator's episodes are multi-turn


def test_two_workers_deliver_every_group_once_with_its_verdict(two_workers: RayRollouts) -> None:
    set_state(two_workers)
    indices = two_workers.submit(STARTERS)
    groups = two_workers.collect(len(STARTERS), timeout=60)
    assert len(indices) == len(set(indices)) == len(STARTERS)
    assert by_task(groups) == Counter(t.id for t in STARTERS)
    assert all(len(g) == 2 and all(r.verdict.passed and r.error is None for r in g) for g in groups)
    assert two_workers.collect(1, timeout=0.2) == [] and two_workers.inflight == 0
    metrics = two_workers.metrics()
    assert metrics["ray/workers"] == 2.0 and metrics["ray/episodes_per_s"] > 0


def test_collect_takes_the_first_groups_and_the_rest_carry_on_with_their_staleness(
    one_worker: RayRollouts,
) -> None:
    set_state(one_worker, version=0)
    one_worker.submit(STARTERS, policy_version=0)
    first = one_worker.collect(3, timeout=60)
    one_worker.set_policy_version(1)
    rest = one_worker.collect(len(STARTERS) - 3, timeout=60)
    assert one_worker.inflight == 0
    assert len(first) == 3 and all(g[0].timings["staleness"] == 0.0 for g in first)
    assert all(g[0].timings["staleness"] == 1.0 and g[0].policy_version == 0 for g in rest)
    assert by_task(first + rest) == Counter(t.id for t in STARTERS)


def test_submit_blocks_while_the_inflight_limit_is_reached(two_workers: RayRollouts) -> None:
    set_state(two_workers, delay=0.5)
    two_workers.submit(EXTRA[:4])  # two chunks of two: the limit of four groups
    done = threading.Event()
    worker = threading.Thread(target=lambda: (two_workers.submit(EXTRA[4:5]), done.set()))
    worker.start()
    assert not done.wait(0.2)  # blocked: four groups in flight
    assert len(two_workers.collect(4, timeout=30)) == 4
    assert done.wait(30)
    worker.join()
    assert len(two_workers.collect(1, timeout=30)) == 1


def test_weights_reach_every_worker_after_the_chunks_queued_before_them(
    two_workers: RayRollouts,
) -> None:
    set_state(two_workers, version=1, delay=0.2)
    before = {i: t for i, t in zip(two_workers.submit(EXTRA[:4]), EXTRA[:4], strict=True)}
    set_state(two_workers, version=2, marker="v2")
    after = two_workers.submit(EXTRA[4:8])  # two chunks: one per worker
    groups = {g[0].task_id: g for g in two_workers.collect(8, timeout=60)}
    for task in before.values():
        assert groups[task.id][0].verdict.passed and groups[task.id][0].policy_version == 1
    for task in EXTRA[4:8]:
        assert groups[task.id][0].final_text == "weights v2"
        assert groups[task.id][0].policy_version == 2
    assert len(after) == 4


def test_close_lets_the_last_weight_load_finish_before_ending_the_workers(
    ray_local: Any, tokenizer: Any, tmp_path: Path
) -> None:
    # A run's last update sends weights nobody will sample from; killing the workers
    # while those loads are queued made Ray log one failed task per worker.
    signal = tmp_path / "loaded"
    rollouts = RayRollouts(probe_factory(tokenizer), tokenizer, lookup, PARAMS, workers=1)
    rollouts.update_weights({"load_delay": 0.5, "load_signal": str(signal)}, version=1)
    rollouts.close()
    assert signal.read_text() == "loaded"


def test_a_chunk_that_raises_becomes_recorded_failures(two_workers: RayRollouts) -> None:
    set_state(two_workers, **{"raise": "engine bug"})
    failed_before = two_workers.metrics()["ray/failed_chunks"]
    [[a, b]] = two_workers.run(EXTRA[:1])
    assert a.error is not None and "engine bug" in a.error and a.reward == 0.0
    assert b.error == a.error and a.task_id == EXTRA[0].id and a.prompt_ids
    assert two_workers.metrics()["ray/failed_chunks"] == failed_before + 1
    set_state(two_workers)
    [[ok, _]] = two_workers.run(EXTRA[:1])  # the worker goes on
    assert ok.verdict.passed


def test_a_session_that_cannot_open_fails_its_group_not_the_chunk(
    one_worker: RayRollouts,
) -> None:
    set_state(one_worker)
    failed_before = one_worker.metrics()["ray/failed_chunks"]
    unstartable = UnstartableCalculator().generate(0, 3)
    [[a, b], [ok, also_ok]] = one_worker.run([unstartable, EXTRA[1]])  # one chunk
    assert a.error == b.error == "session open failed: SandboxError: sandbox failed to start"
    assert a.reward == 0.0 and a.task_id == unstartable.id
    assert ok.verdict.passed and also_ok.verdict.passed
    assert one_worker.metrics()["ray/failed_chunks"] == failed_before


def test_a_worker_killed_mid_chunk_is_restarted_and_its_chunk_delivered_once(
    two_workers: RayRollouts, ray_local: Any, tmp_path: Path
) -> None:
    set_state(two_workers, delay=1.0, signal_dir=str(tmp_path))
    before = two_workers.metrics()
    tasks = EXTRA[:4]  # two chunks, one per worker, both asleep in the engine
    two_workers.submit(tasks)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(list(tmp_path.iterdir())) == 2  # both workers are inside their chunk
    ray_local.kill(two_workers.actors[0], no_restart=False)
    groups = two_workers.collect(4, timeout=120)
    assert by_task(groups) == Counter(t.id for t in tasks)
    assert all(r.verdict.passed and r.error is None for g in groups for r in g)
    assert two_workers.collect(1, timeout=0.5) == [] and two_workers.inflight == 0
    after = two_workers.metrics()
    assert after["ray/restarts"] == before["ray/restarts"] + 1
    assert after["ray/tasks_retried"] == before["ray/tasks_retried"] + 1
    assert after["ray/failed_chunks"] == before["ray/failed_chunks"]
    assert len(list(tmp_path.iterdir())) == 3  # the killed chunk's engine call, redone


class BigFactory:
    """An engine factory that pickles to over 100 kB, so Ray would put it in the object
    store if it were an actor's argument."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer, self.ballast = tokenizer, os.urandom(300_000)

    def __call__(self) -> ProbeEngine:
        return ProbeEngine(self.tokenizer, STARTERS)


def test_large_shared_objects_reach_the_workers_without_ray_flagging_restarts(
    ray_local: Any, tokenizer: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """Arguments in the object store make Ray log an error for actors with restarts
    (ray-project/ray#53727); the factory and tokenizer travel as refs inside a list."""
    with RayRollouts(BigFactory(tokenizer), tokenizer, lookup, PARAMS, workers=1) as rollouts:
        set_state(rollouts)
        groups = rollouts.run(STARTERS[:2])
    assert all(r.verdict.passed for g in groups for r in g)
    assert "constructor arguments in the object store" not in capfd.readouterr().err


@pytest.mark.slow
def test_one_worker_samples_what_the_local_hf_engine_samples(
    ray_local: Any, tokenizer: Any, tiny_model: Any
) -> None:
    params = SamplingParams(max_tokens=12, temperature=1.0, n=2)
    tasks = [addition(s, 2) for s in range(4)]
    local_engine = HFEngine(copy.deepcopy(tiny_model), tokenizer, seed=3)
    local = [g for i in (0, 2) for g in run_episodes(tasks[i : i + 2], local_engine, tokenizer, params, lookup)]  # fmt: skip
    factory = HFEngineFactory.from_model(tiny_model, tokenizer, seed=3)
    with RayRollouts(factory, tokenizer, lookup, params, workers=1, chunk_groups=2) as rollouts:
        remote = rollouts.run(tasks)
    for want, got in zip(local, remote, strict=True):
        assert [r.completion_ids for r in got] == [r.completion_ids for r in want]
        for a, b in zip(want, got, strict=True):
            assert b.logprobs == pytest.approx(a.logprobs, abs=1e-5)
    assert len({tuple(r.completion_ids) for g in remote for r in g}) > 1  # it did sample
    with pytest.raises(RuntimeError, match="closed"):
        rollouts.collect(1)


def test_ensure_ray_joins_a_running_ray_and_bad_settings_are_named(ray_local: Any) -> None:
    assert ensure_ray() is False
    with pytest.raises(ValueError, match="chunk_groups"):
        RayRollouts(lambda: None, None, lookup, PARAMS, chunk_groups=0)  # type: ignore[arg-type, return-value]


class FailingFactory:
    def __call__(self) -> Any:
        raise RuntimeError("no engine here")


def test_workers_that_fail_to_start_leave_no_ray_this_object_started(
    ray_local: Any, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from posttrain.rollout.backends import ray_backend

    shut: list[bool] = []
    monkeypatch.setattr(ray_backend, "ensure_ray", lambda address: True)  # as if it started Ray
    monkeypatch.setattr(ray_local, "shutdown", lambda: shut.append(True))
    with pytest.raises(RuntimeError, match="failed to start"):
        RayRollouts(FailingFactory(), tokenizer, lookup, PARAMS, workers=1)
    assert shut == [True]


def test_ensure_ray_puts_back_the_sigterm_handler_ray_init_replaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ray.init sets a SIGTERM handler that exits at once (ray/_private/worker.py); a
    run's own, which saves its state first (`train/preemption.py`), must survive it."""
    import signal
    import sys

    from posttrain.rollout.backends import ray_cluster

    def init_as_ray_does(**_: Any) -> None:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))

    def ours(signum: int, frame: Any) -> None:
        pass

    monkeypatch.setattr(ray_cluster.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_cluster.ray, "init", init_as_ray_does)
    previous = signal.signal(signal.SIGTERM, ours)
    try:
        assert ray_cluster.ensure_ray(num_cpus=1) is True
        assert signal.getsignal(signal.SIGTERM) is ours
    finally:
        signal.signal(signal.SIGTERM, previous)
