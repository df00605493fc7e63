"""The domain self-check: every registered domain passes; each broken fixture fails on its property."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from posttrain.domains import all_domains, get_domain
from posttrain.domains.check import PROPERTIES, check_domains
from tests.domains.broken_domains import BROKEN, CorruptionPasses

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tokenizer_long() -> Any:
    """A tokenizer of our own: the junk battery is long, and the shared one stays as it is."""
    from posttrain.models.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.model_max_length = 1 << 30
    return tokenizer


def test_every_registered_domain_passes_at_difficulty_1_or_5(tokenizer_long: Any) -> None:
    """Each domain at one level, alternately 1 and 5 in registry order, so both ends
    stay covered within `make test`'s time; the slow test below checks every level."""
    domains = all_domains()
    results = check_domains(domains[0::2], difficulties=(1,), tokenizer=tokenizer_long)
    results += check_domains(domains[1::2], difficulties=(5,), tokenizer=tokenizer_long)
    failed = [r for r in results if not r.ok]
    assert failed == []
    assert len(results) == len(domains) * len(PROPERTIES)


# Long-context families reach 100k-1M tokens at difficulties 7-10; the check replays
# each prompt about twenty times through the byte tokenizer (about 10 s per 1M-token
# prompt), over half an hour for them alone. They are checked here up to difficulty 6
# (46k tokens); their longest lengths are covered by their own tests (1M-token
# generation, 1M-token reference replays through the episode loop).
LONG_CONTEXT = ("longctx/", "longctx-search/", "documents/long-")


@pytest.mark.slow
def test_every_registered_domain_passes_at_every_difficulty(tokenizer_long: Any) -> None:
    short = [d for d in all_domains() if not d.id.startswith(LONG_CONTEXT)]
    results = check_domains(short, difficulties=range(1, 11), tokenizer=tokenizer_long)
    assert [r for r in results if not r.ok] == []


@pytest.mark.slow
def test_long_context_domains_pass_up_to_difficulty_6(tokenizer_long: Any) -> None:
    long = [d for d in all_domains() if d.id.startswith(LONG_CONTEXT)]
    assert len(long) >= 13
    results = check_domains(long, difficulties=range(1, 7), tokenizer=tokenizer_long)
    assert [r for r in results if not r.ok] == []


def test_each_broken_domain_fails_exactly_its_property(tokenizer_long: Any) -> None:
    domains = [cls() for cls in BROKEN]
    results = check_domains(domains, difficulties=(1, 5), tokenizer=tokenizer_long)
    for cls, prop in BROKEN.items():
        failed = {r.property for r in results if r.domain == cls.id and not r.ok}
        assert failed == {prop}, (cls.id, failed)
        detail = next(r.detail for r in results if r.domain == cls.id and r.property == prop)
        assert detail  # names what went wrong


def test_on_domain_reports_each_domain_as_it_is_done(tokenizer_long: Any) -> None:
    seen: list[tuple[str, list[str]]] = []
    results = check_domains(
        [CorruptionPasses(), get_domain("arith/addition-v1")],
        difficulties=(1,),
        tokenizer=tokenizer_long,
        on_domain=lambda domain, rows: seen.append((domain, [r.property for r in rows])),
    )
    assert [d for d, _ in seen] == [CorruptionPasses.id, "arith/addition-v1"]
    assert all(props == list(PROPERTIES) for _, props in seen)
    assert len(results) == 2 * len(PROPERTIES)


def test_cli_check_exits_nonzero_naming_the_domain_and_property() -> None:
    script = (
        "import sys; from posttrain.cli import app; from posttrain.domains import register\n"
        "from tests.domains.broken_domains import CorruptionPasses\n"
        "register(CorruptionPasses())\n"
        "sys.argv = ['posttrain', 'domains', 'check', 'broken/corruption-passes-v1', "
        "'arith/addition-v1', '--difficulties', '1']\n"
        "app()"
    )
    env = {**os.environ, "COLUMNS": "200", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "broken/corruption-passes-v1 corruptions" in proc.stderr
    assert "arith/addition-v1" in proc.stdout and "7/7" in proc.stdout
