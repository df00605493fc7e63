"""Single-turn variants: a diff, a function, a location; prose around the answer is fine."""

from __future__ import annotations

import pytest

from posttrain.domains.coding.single import (
    ImplementFunctionDomain,
    LocateBugDomain,
    PatchFromFailureDomain,
)
from posttrain.sandbox import layers
from posttrain.types import Message

from .replay import play

needs_sandbox = pytest.mark.skipif(
    layers.best_mode() is None, reason="no isolation on this machine"
)


@needs_sandbox
def test_a_patch_with_stale_line_numbers_inside_prose_passes() -> None:
    domain = PatchFromFailureDomain()
    task = domain.generate(0, 3)
    stale = task.answer.replace("@@ -", "@@ -1", 1)
    assert play(
        domain, task, [Message("assistant", f"The fix:\n```diff\n{stale}```\nThat is all.")]
    ).passed


@needs_sandbox
def test_a_patch_that_only_touches_tests_scores_zero() -> None:
    domain = PatchFromFailureDomain()
    task = domain.generate(0, 3)
    test = next(p for p in task.files if p.startswith("tests/"))
    diff = f"--- a/{test}\n+++ b/{test}\n@@ -1 +1 @@\n-{task.files[test].splitlines()[0]}\n+import pytest\n"
    assert play(domain, task, [Message("assistant", f"```diff\n{diff}```")]).reward == 0.0


@needs_sandbox
def test_another_correct_implementation_passes() -> None:
    domain = ImplementFunctionDomain()
    task = domain.generate(3, 4)
    body = task.meta["bugs"][0]["body"]
    helper = "\n\ndef _unused_helper():\n    return None\n"
    assert play(
        domain, task, [Message("assistant", f"Here:\n```python\n# implemented\n{body}{helper}```")]
    ).passed


def test_the_stub_replaces_the_function_body() -> None:
    task = ImplementFunctionDomain().generate(0, 2)
    bug = task.meta["bugs"][0]
    assert (
        "raise NotImplementedError" in task.files[bug["path"]]
        and bug["body"] not in task.files[bug["path"]]
    )


def test_locate_bug_accepts_backticks_and_rejects_other_names() -> None:
    domain = LocateBugDomain()
    task = domain.generate(0, 3)
    assert domain.judge(task, f"`{task.answer}`").passed
    assert not domain.judge(task, task.answer.split(".")[0]).passed
    assert not domain.judge(task, f"It is {task.answer}.").passed
