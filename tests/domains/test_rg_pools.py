"""Pooled reasoning-gym domains: the self-check, the pick, a rebuilt pool, n_queens's eval guard."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

from posttrain.domains.check import check_domains
from posttrain.domains.reasoning_gym_adapter import ReasoningGymDomain
from posttrain.domains.rg_pools import PooledReasoningGymDomain, all_pooled, build_pool
from posttrain.types import Message, Rollout, Task, Turn, Verdict


def _judge(domain: ReasoningGymDomain, task: Task, text: str) -> Verdict:
    turn = Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop")
    rollout = Rollout("r", task.id, task.domain, task.difficulty, [], [], [], [],
                      [Message("assistant", text)], [turn], Verdict(0.0, False, "-"))  # fmt: skip
    return domain.verify(task, rollout, None)


def test_pooled_domains_pass_the_self_check() -> None:
    domains = all_pooled()
    assert domains, "no pool files ship"
    failed = [r for r in check_domains(domains, difficulties=(1, 5)) if not r.ok]
    assert not failed, failed


def test_the_pick_is_the_same_in_a_fresh_process() -> None:
    domain = all_pooled()[0]
    here = [domain.generate(seed, 7).to_json() for seed in range(5)]
    code = (
        "import sys; from posttrain.domains.rg_pools import all_pooled; d = all_pooled()[0]; "
        "[print(d.generate(s, 7).to_json()) for s in range(5)]"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.splitlines() == here


def test_seeds_spread_over_the_pool() -> None:
    domain = all_pooled()[0]
    questions = {domain.generate(seed, 3).prompt[0].content for seed in range(40)}
    assert len(questions) > 5


def test_a_rebuilt_pool_round_trips_and_its_reference_scores_1(tmp_path: Path) -> None:
    path = build_pool("basic_arithmetic", 1, tmp_path / "basic_arithmetic.jsonl.gz")
    pooled = PooledReasoningGymDomain("basic_arithmetic", "arithmetic", str(path))
    adapter = ReasoningGymDomain("basic_arithmetic", "arithmetic")
    for difficulty in (1, 10):
        task, original = pooled.generate(5, difficulty), adapter.generate(0, difficulty)
        assert (task.prompt, task.answer, task.meta) == (original.prompt, original.answer, original.meta)  # fmt: skip
        assert _judge(pooled, task, task.answer).reward == 1.0
    assert pooled.difficulty_measure(pooled.generate(0, 10)) > 0


def test_n_queens_never_evals_code_from_the_answer(tmp_path: Path) -> None:
    from reasoning_gym import factory

    entry = factory.create_dataset("n_queens", n=4, min_remove=1, max_remove=2, seed=0, size=1)[0]
    records = [{"level": d, "seed": 0, "levels": {}, **entry} for d in range(1, 11)]
    path = tmp_path / "n_queens.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    domain = PooledReasoningGymDomain("n_queens", "games", str(path))
    task = domain.generate(0, 2)
    marker = tmp_path / "ran"
    attack = f"open({str(marker)!r}, 'w').write('x') or {entry['metadata']['solutions'][0]!r}"
    assert _judge(domain, task, attack).reward == 0.0 and not marker.exists()
    assert _judge(domain, task, task.answer).passed
    as_list = repr([row.split() for row in task.answer.splitlines()])
    assert _judge(domain, task, as_list).reward == 0.5  # its scorer's credit for a literal board


def test_arc_agi_grids_are_tuples_again_so_its_reference_scores_1(tmp_path: Path) -> None:
    from reasoning_gym import factory

    entry = factory.create_dataset("arc_agi", seed=0, size=1)[0]
    records = [{"level": d, "seed": 0, "levels": {}, **entry} for d in range(1, 11)]
    path = tmp_path / "arc_agi.jsonl.gz"
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode()))
    domain = PooledReasoningGymDomain("arc_agi", "arc", str(path))
    task = domain.generate(0, 4)
    assert _judge(domain, task, task.answer).reward == 1.0
