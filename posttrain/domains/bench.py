"""How fast each domain generates and verifies tasks (`posttrain domains bench`).

    results = bench_domains(all_domains(), tasks=50, repeats=3)
    for r in results: print(r.domain, r.tasks_per_s, r.verifications_per_s)

Per domain and per repeat, `tasks` tasks are generated (difficulties cycling 1..10, each
call timed) and their references played through the real episode loop, where only the
domain's `verify` calls are timed — the verifier's own cost, with the session state a
real episode leaves, without tokenization. Each figure is the median over `repeats`.
`machine_load()` says what else was running, to print beside the figures.

Not guaranteed: figures are single-threaded wall-clock rates on whatever else the machine
runs; domains verified by unit tests measure the sandbox too and are marked `uses_sandbox`.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from posttrain.domains.base import Domain, Session
from posttrain.domains.check import replay_solutions
from posttrain.types import Rollout, Task, Verdict


@dataclass(frozen=True)
class DomainBench:
    domain: str
    tasks_per_s: float
    verifications_per_s: float
    generate_ms_median: float
    verify_ms_median: float
    uses_sandbox: bool
    all_passed: bool  # every reference verified as passed (a sanity check of the timing)


def machine_load() -> str:
    """The 1/5/15-minute load averages and the core count, e.g. `load 0.52 0.40 0.33 on 2 cores`."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def bench_domains(
    domains: Sequence[Domain], tasks: int = 50, repeats: int = 3
) -> list[DomainBench]:
    """One `DomainBench` per domain; see the module docstring."""
    if tasks < 1 or repeats < 1:
        raise ValueError(f"tasks and repeats must be >= 1, got {tasks}, {repeats}")
    from posttrain.models.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.model_max_length = 1 << 30  # references may be longer than the tiny model's window
    return [_bench_one(domain, tasks, repeats, tokenizer) for domain in domains]


def _bench_one(domain: Domain, tasks: int, repeats: int, tokenizer: Any) -> DomainBench:
    timed = _TimedVerify(domain)
    gen_rates, verify_rates, gen_ms, verify_ms = [], [], [], []
    all_passed = True
    for repeat in range(repeats):
        generated: list[Task] = []
        times = []
        for i in range(tasks):
            start = time.perf_counter()
            generated.append(domain.generate(repeat * tasks + i, 1 + i % 10))
            times.append(time.perf_counter() - start)
        gen_rates.append(tasks / sum(times))
        gen_ms.append(statistics.median(times) * 1e3)
        timed.seconds.clear()
        pairs = [(task, domain.reference(task)) for task in generated]
        rollouts = replay_solutions(timed, pairs, tokenizer)  # type: ignore[arg-type]
        all_passed = all_passed and all(r.verdict.passed for r in rollouts)
        verify_rates.append(len(timed.seconds) / sum(timed.seconds))
        verify_ms.append(statistics.median(timed.seconds) * 1e3)
    return DomainBench(
        domain.id,
        statistics.median(gen_rates),
        statistics.median(verify_rates),
        statistics.median(gen_ms),
        statistics.median(verify_ms),
        domain.axes.verification == "unit_tests",
        all_passed,
    )


class _TimedVerify:
    """The domain, with the wall-clock of every `verify` call recorded."""

    def __init__(self, domain: Domain) -> None:
        self._domain = domain
        self.seconds: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._domain, name)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        start = time.perf_counter()
        try:
            return self._domain.verify(task, rollout, session)
        finally:
            self.seconds.append(time.perf_counter() - start)
