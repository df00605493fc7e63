"""Traceback, CLI-output, rename and implement-CLI variants: their own generators and checks."""

from __future__ import annotations

import pytest

from posttrain.domains.coding.domain import tool_turn
from posttrain.domains.coding.variants import (
    FixCliOutputDomain,
    FixFromTracebackDomain,
    ImplementCliDomain,
    RefactorRenameDomain,
    renamed_everywhere,
)
from posttrain.sandbox import layers
from posttrain.types import Message

from .replay import play

needs_sandbox = pytest.mark.skipif(
    layers.best_mode() is None, reason="no isolation on this machine"
)


def test_the_traceback_prompt_has_a_traceback_and_no_tests_folder() -> None:
    task = FixFromTracebackDomain().generate(0, 3)
    assert "Traceback (most recent call last):" in task.prompt[0].content
    assert not any(p.startswith("tests/") for p in task.files)
    assert all("raises" in c["buggy"] for c in task.meta["cases"] if c["visible"])


def test_the_cli_prompt_shows_the_command_and_both_outputs() -> None:
    task = FixCliOutputDomain().generate(0, 2)
    assert (
        task.meta["run"] in task.prompt[0].content
        and "It should print exactly" in task.prompt[0].content
    )


@needs_sandbox
def test_cli_output_must_match_exactly() -> None:
    domain = FixCliOutputDomain()
    task = domain.generate(1, 2)
    path, fixed = next(iter(task.meta["fixed"].items()))
    sloppy = fixed.replace('print(f"total:', 'print(f" total:').replace('print(f"passed:', 'print(f" passed:')  # fmt: skip
    verdict = play(domain, task, [tool_turn("write_file", path=path, content=sloppy), Message("assistant", "ok")])  # fmt: skip
    assert not verdict.passed


def test_renamed_everywhere_rejects_an_alias_and_a_leftover_call() -> None:
    source = "def new(x):\n    return x\n\n\ndef user(y):\n    return new(y)\n"
    assert renamed_everywhere({"m.py": source.encode()}, ["m.py"], "m.py", "old", "new")
    for bad in (source + "\nold = new\n", source.replace("return new(y)", "return old(y)")):
        assert not renamed_everywhere({"m.py": bad.encode()}, ["m.py"], "m.py", "old", "new")


@needs_sandbox
def test_a_rename_that_keeps_an_alias_fails_on_structure_only() -> None:
    domain = RefactorRenameDomain()
    task = domain.generate(0, 4)
    bug = task.meta["bugs"][0]
    aliased = task.meta["fixed"][bug["path"]] + f"\n\n{bug['function']} = {bug['new']}\n"
    verdict = play(domain, task, [tool_turn("write_file", path=bug["path"], content=aliased), Message("assistant", "ok")])  # fmt: skip
    assert not verdict.passed and verdict.components["structure"] == 0.0 and verdict.components["tests_fixed"] == 1.0  # fmt: skip


def test_implement_cli_stubs_main_and_shows_example_runs() -> None:
    task = ImplementCliDomain().generate(0, 5)
    path = task.meta["bugs"][0]["path"]
    assert "raise NotImplementedError" in task.files[path]
    assert task.prompt[0].content.count("$ python3 -m") >= 2
