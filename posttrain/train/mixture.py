"""Which tasks each stage trains and evaluates on: domain weights, difficulty ranges,
seed streams, and the held-out set.

Held-out evaluation tasks use seeds from `seed_offset` up, cycling difficulties
1..10; every training stream draws from its own seed range below that, and skips any
task whose prompt equals a held-out prompt, so held-out means held out by content,
not only by seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from posttrain.domains.base import Domain
from posttrain.types import Task

# Each stream's seeds start at its own base, far apart, all below the held-out offset.
STREAM_BASES = {
    "sft": 0,
    "sft-val": 10**8,
    "dpo": 2 * 10**8,
    "dpo-val": 3 * 10**8,
    "grpo": 4 * 10**8,
}


def prompt_key(task: Task) -> str:
    return task.domain + "\x00" + "\x00".join(m.content for m in task.prompt)


def heldout_tasks(domains: Sequence[Domain], per_domain: int, seed_offset: int) -> list[Task]:
    """`per_domain` tasks per domain, difficulties cycling 1..10, seeds from `seed_offset`."""
    return [d.generate(seed_offset + i, 1 + i % 10) for d in domains for i in range(per_domain)]


class TaskSampler:
    """An endless, reproducible stream of training tasks for one stage."""

    def __init__(
        self,
        domains: Sequence[Domain],
        stream: str,
        difficulties: Sequence[int] = tuple(range(1, 11)),
        weights: Sequence[float] | None = None,
        exclude: set[str] | None = None,
        seed: int = 0,
    ) -> None:
        if stream not in STREAM_BASES:
            raise ValueError(f"unknown task stream {stream!r}; known: {sorted(STREAM_BASES)}")
        if weights is not None and len(weights) != len(domains):
            raise ValueError(f"{len(weights)} weights for {len(domains)} domains")
        self.domains = list(domains)
        self.difficulties = list(difficulties)
        self.weights = list(weights) if weights is not None else [1.0] * len(self.domains)
        self.exclude = exclude or set()
        self.rng = random.Random(f"{stream}|{seed}")
        self.next_seed = STREAM_BASES[stream] + seed * 10**6

    def sample(self, count: int) -> list[Task]:
        tasks: list[Task] = []
        while len(tasks) < count:
            domain = self.rng.choices(self.domains, weights=self.weights)[0]
            difficulty = self.rng.choice(self.difficulties)
            task = domain.generate(self.next_seed, difficulty)
            self.next_seed += 1
            if prompt_key(task) not in self.exclude:
                tasks.append(task)
        return tasks
