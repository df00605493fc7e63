"""Task streams and the held-out set."""

from __future__ import annotations

import pytest

from posttrain.domains import STARTER_DOMAINS, get_domain
from posttrain.train.mixture import TaskSampler, heldout_tasks, prompt_key

DOMAINS = [get_domain(i) for i in STARTER_DOMAINS]


def test_heldout_tasks_cycle_every_difficulty_per_domain() -> None:
    tasks = heldout_tasks(DOMAINS, 20, seed_offset=10**9)
    assert len(tasks) == 80
    for d in DOMAINS:
        mine = [t.difficulty for t in tasks if t.domain == d.id]
        assert sorted(set(mine)) == list(range(1, 11))


def test_training_stream_never_yields_a_heldout_prompt() -> None:
    held = heldout_tasks(DOMAINS, 100, seed_offset=10**9)
    exclude = {prompt_key(t) for t in held}
    drawn = TaskSampler(DOMAINS, "sft", difficulties=[1, 2], exclude=exclude).sample(500)
    assert not {prompt_key(t) for t in drawn} & exclude


def test_same_stream_and_seed_give_the_same_tasks() -> None:
    a = TaskSampler(DOMAINS, "grpo", seed=1).sample(20)
    b = TaskSampler(DOMAINS, "grpo", seed=1).sample(20)
    c = TaskSampler(DOMAINS, "grpo", seed=2).sample(20)
    assert [t.id for t in a] == [t.id for t in b]
    assert [t.id for t in a] != [t.id for t in c]


def test_streams_use_disjoint_seeds() -> None:
    sft = {t.seed for t in TaskSampler(DOMAINS, "sft").sample(50)}
    grpo = {t.seed for t in TaskSampler(DOMAINS, "grpo").sample(50)}
    assert not sft & grpo


def test_weights_steer_the_domain_mix() -> None:
    tasks = TaskSampler(DOMAINS, "dpo", weights=[1, 0, 0, 0]).sample(30)
    assert {t.domain for t in tasks} == {DOMAINS[0].id}


def test_unknown_stream_is_refused() -> None:
    with pytest.raises(ValueError, match="stream"):
        TaskSampler(DOMAINS, "nope")
