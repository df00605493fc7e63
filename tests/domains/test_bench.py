"""`bench_domains`: rates for single-turn and session domains, streamed as they finish."""

from __future__ import annotations

import pytest

from posttrain.domains import get_domain
from posttrain.domains.bench import bench_domains, machine_load


def test_single_turn_and_session_domains_are_measured_and_streamed() -> None:
    seen: list[str] = []
    domains = [get_domain("arith/addition-v1"), get_domain("tools/calculator-v1")]
    results = bench_domains(domains, tasks=4, repeats=2, on_result=lambda r: seen.append(r.domain))
    assert seen == ["arith/addition-v1", "tools/calculator-v1"]
    for r in results:
        assert r.all_passed and not r.uses_sandbox
        assert r.tasks_per_s > 0 and r.verifications_per_s > 0 and r.verify_ms_median > 0


def test_a_domain_whose_references_fail_is_flagged() -> None:
    class Failing:
        def __init__(self) -> None:
            self.inner = get_domain("arith/addition-v1")

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def reference(self, task):  # type: ignore[no-untyped-def]
            from posttrain.types import Reference

            return Reference.single("wrong")

    [result] = bench_domains([Failing()], tasks=2, repeats=1)  # type: ignore[list-item]
    assert result.all_passed is False


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="tasks and repeats"):
        bench_domains([get_domain("arith/addition-v1")], tasks=0)


def test_machine_load_names_the_cores() -> None:
    assert machine_load().startswith("load ") and "cores" in machine_load()


def test_a_domain_that_raises_is_reported_and_the_rest_go_on() -> None:
    class Raising:
        id = "broken/raises-v1"

        def __getattr__(self, name: str) -> object:
            return getattr(get_domain("arith/addition-v1"), name)

        def generate(self, seed: int, difficulty: int) -> None:
            raise RuntimeError("generator gave up")

    results = bench_domains([Raising(), get_domain("arith/addition-v1")], tasks=2, repeats=1)  # type: ignore[list-item]
    assert results[0].error == "RuntimeError: generator gave up"
    assert results[1].error is None and results[1].all_passed
