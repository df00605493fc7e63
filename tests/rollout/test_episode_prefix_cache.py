"""Multi-turn episodes reuse the engine's KV cache of their conversation so far: the
lockstep loop and the scheduler both hit it, and greedy results equal re-encoding."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from posttrain.domains.base import Axes
from posttrain.engines import HFEngine, SamplingParams
from posttrain.rollout.episode import run_episodes
from posttrain.rollout.scheduler import Scheduler
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict

# Many one-character stops: the untrained model's turns end "stop" within a few tokens,
# so every episode reaches its scripted user and runs all its turns.
PARAMS = SamplingParams(max_tokens=12, temperature=0.0, stop=tuple("aeiou tnsrl"), n=2)


class AgainSession:
    tools: list[dict[str, Any]] = []

    def call(self, tool_call: ToolCall) -> Observation:
        return Observation("no tools here", error=True)

    def user_turn(self, assistant_message: Message) -> Message | None:
        return Message("user", "Say more, please.")

    def snapshot(self) -> Any:
        return None

    def restore(self, snapshot: Any) -> None:
        pass

    def close(self) -> None:
        pass


class FourTurns:
    id = "test/four-turns-v1"
    axes = Axes("text", "none", "multi", "exact")
    max_turns = 4

    def generate(self, seed: int, difficulty: int) -> Task:
        prompt = [Message("user", f"Tell me a story about the number {seed}. " * difficulty)]
        return Task(f"{self.id}@{seed}.d{difficulty}", self.id, prompt, "", difficulty, seed)

    def reference(self, task: Task) -> Reference:
        return Reference.single("ok")

    def open(self, task: Task, sandbox: object | None = None) -> AgainSession:
        return AgainSession()

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        return Verdict(float(len(rollout.turns)), True, "turns")


@pytest.mark.parametrize("runner", ["lockstep", "scheduler"])
def test_later_turns_hit_the_prefix_cache_and_match_reencoding(
    tiny_model: Any, tokenizer: Any, runner: str
) -> None:
    domain = FourTurns()
    tasks = [domain.generate(s, 1 + s) for s in range(3)]

    def play(prefix_cache: bool) -> tuple[list[list[Rollout]], Any]:
        engine = HFEngine(copy.deepcopy(tiny_model), tokenizer, prefix_cache=prefix_cache)
        if runner == "lockstep":
            return run_episodes(tasks, engine, tokenizer, PARAMS, lambda _: domain), engine
        with Scheduler(engine, tokenizer, lambda _: domain, PARAMS) as sched:
            return sched.run(tasks), engine

    reused, engine = play(True)
    plain, _ = play(False)
    assert all(len(r.turns) == 4 for g in reused for r in g)
    stats = engine.prefix_cache.stats
    assert stats.hits >= 3 * 2 * 3 - 2  # every later turn of all 6 episodes, bar stragglers
    assert stats.reused_tokens > stats.prefilled_tokens
    for a_group, b_group in zip(reused, plain, strict=True):
        for a, b in zip(a_group, b_group, strict=True):
            assert a.completion_ids == b.completion_ids
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    assert stats.held_tokens == 0  # the loop released every episode's cache


def test_single_turn_episodes_keep_no_kv_cache(tiny_model: Any, tokenizer: Any) -> None:
    """Nothing would reuse it: the engine is not asked to copy the rows' K/V."""
    from posttrain.domains import get_domain

    domain = get_domain("arith/addition-v1")
    engine = HFEngine(copy.deepcopy(tiny_model), tokenizer)
    assert engine.prefix_cache is not None
    kept: list[str] = []
    put = engine.prefix_cache.put
    engine.prefix_cache.put = lambda key, ids, kv: (kept.append(key), put(key, ids, kv))[1]  # type: ignore[method-assign]
    run_episodes([domain.generate(0, 3)], engine, tokenizer, PARAMS, get_domain)
    assert kept == []
    run_episodes([FourTurns().generate(0, 1)], engine, tokenizer, PARAMS, lambda _: FourTurns())
    assert kept  # a multi-turn domain's rows are kept between turns
