"""How fast each domain generates and verifies tasks (`posttrain domains bench`).

    results = bench_domains(all_domains(), tasks=20, repeats=3)
    for r in results: print(r.domain, r.tasks_per_s, r.verifications_per_s)

Per domain and per repeat, `tasks` tasks are generated (difficulties cycling 1..10, each
call timed) and their references verified, only the `verify` call timed: single-turn
domains get a one-turn rollout of the reference's final text; domains with sessions
have their references played through the real episode loop, so `verify` sees the
session state a real episode leaves. Each figure is the median over `repeats`;
`on_result` receives each domain's figures as soon as they exist.
`machine_load()` says what else was running, to print beside the figures.

Not guaranteed: figures are single-threaded wall-clock rates on whatever else the machine
runs; domains verified by unit tests measure the sandbox too and are marked `uses_sandbox`.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from posttrain.domains.base import Domain, Session
from posttrain.domains.check import replay_solutions
from posttrain.types import Message, Rollout, Task, Turn, Verdict


@dataclass(frozen=True)
class DomainBench:
    domain: str
    tasks_per_s: float
    verifications_per_s: float
    generate_ms_median: float
    verify_ms_median: float
    uses_sandbox: bool
    all_passed: bool  # every reference verified as passed (a sanity check of the timing)
    error: str | None = None  # the domain raised while generating or verifying: no figures


def machine_load() -> str:
    """The 1/5/15-minute load averages and the core count, e.g. `load 0.52 0.40 0.33 on 2 cores`."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def bench_domains(
    domains: Sequence[Domain],
    tasks: int = 20,
    repeats: int = 3,
    on_result: Callable[[DomainBench], None] | None = None,
) -> list[DomainBench]:
    """One `DomainBench` per domain; see the module docstring."""
    if tasks < 1 or repeats < 1:
        raise ValueError(f"tasks and repeats must be >= 1, got {tasks}, {repeats}")
    from posttrain.models.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.model_max_length = 1 << 30  # references may be longer than the tiny model's window
    results = []
    for domain in domains:
        try:
            results.append(_bench_one(domain, tasks, repeats, tokenizer))
        except Exception as exc:  # one broken domain must not end the benchmark of all
            error = f"{type(exc).__name__}: {exc}"
            results.append(DomainBench(domain.id, 0.0, 0.0, 0.0, 0.0, False, False, error))
        if on_result is not None:
            on_result(results[-1])
    return results


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
        if hasattr(domain, "open"):  # sessions: the state a real episode leaves
            verdicts = [r.verdict for r in replay_solutions(timed, pairs, tokenizer)]  # type: ignore[arg-type]
        else:  # single-turn: the final text is all a verifier reads; skip tokenization
            verdicts = [timed.verify(t, _one_turn(t, ref.final), None) for t, ref in pairs]
        all_passed = all_passed and all(v.passed for v in verdicts)
        verify_rates.append(len(timed.seconds) / sum(timed.seconds))
        verify_ms.append(statistics.median(timed.seconds) * 1e3)
    return DomainBench(
        domain.id,
        statistics.median(gen_rates),
        statistics.median(verify_rates),
        statistics.median(gen_ms),
        statistics.median(verify_ms),
        domain.axes.verification == "unit_tests" or domain.axes.tools in ("python", "shell"),
        all_passed,
    )


def _one_turn(task: Task, text: str) -> Rollout:
    turn = Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop")
    return Rollout(f"bench-{task.id}", task.id, task.domain, task.difficulty, [], [], [], [],
                   [*task.prompt, Message("assistant", text)], [turn],
                   Verdict(0.0, False, "not yet verified"))  # fmt: skip


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
