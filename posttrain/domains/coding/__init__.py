"""The `coding/*` family: terminal coding on generated repositories, verified in the sandbox.

Repositories are generated from program templates (`templates.py`, `templates_more.py`,
C in `ctemplates.py`) with bugs injected from a catalogue (`bugs.py`) by `repo.py`;
agents work through `tools.py` (shell, read_file, write_file, apply_patch over a
sandboxed workspace); `verify.py` judges SWE-bench style (allow-listed files onto the
pristine repository, visible and hidden tests, fresh sandbox). The domains:

    domain.py      coding/fix-failing-test-v1 (and the shared `RepoDomain`)
    variants.py    fix-from-traceback, fix-cli-output, refactor-rename, implement-cli
    typed.py       fix-type-error (mypy)
    regression.py  write-regression-test
    cprog.py       fix-c-program, implement-c-function (gcc)
    single.py      patch-from-failure, implement-function, locate-bug (single turn)

    from posttrain.domains.coding import DOMAINS

Not guaranteed: every verdict but `locate-bug`'s needs the sandbox; without isolation
on the machine those verdicts carry `error` (an infrastructure failure).
"""

from __future__ import annotations

from typing import Any

from posttrain.domains.coding import cprog, regression, single, typed, variants
from posttrain.domains.coding.domain import FixFailingTestDomain

DOMAINS: tuple[Any, ...] = (
    FixFailingTestDomain(),
    *variants.DOMAINS,
    *typed.DOMAINS,
    *regression.DOMAINS,
    *cprog.DOMAINS,
    *single.DOMAINS,
)

__all__ = ["DOMAINS"]
