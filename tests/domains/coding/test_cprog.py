"""C variants: judged by gcc in a fresh sandbox; a compile error or a hard-coded run fails."""

from __future__ import annotations

import pytest

from posttrain.domains.coding.cprog import FixCProgramDomain, ImplementCFunctionDomain
from posttrain.domains.coding.domain import tool_turn
from posttrain.sandbox import layers
from posttrain.types import Message

from .replay import play

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")


def test_a_rewritten_correct_program_passes_and_a_broken_one_does_not() -> None:
    domain = FixCProgramDomain()
    task = domain.generate(0, 4)
    path, fixed = next(iter(task.meta["fixed"].items()))
    good = play(domain, task, [tool_turn("write_file", path=path, content="/* fixed */\n" + fixed), Message("assistant", "ok")])  # fmt: skip
    broken = play(domain, task, [tool_turn("write_file", path=path, content=fixed + "int oops(\n"), Message("assistant", "ok")])  # fmt: skip
    assert good.passed and broken.reward == 0.0 and broken.error is None


def test_the_check_script_in_the_repository_reports_the_failure() -> None:
    domain = FixCProgramDomain()
    task = domain.generate(1, 2)
    session = domain.open(task)
    from posttrain.types import ToolCall

    obs = session.call(ToolCall("shell", {"command": "python3 tests/check.py"}))
    assert "FAIL" in obs.content and "exit code 1" in obs.content


def test_an_equivalent_c_function_passes() -> None:
    domain = ImplementCFunctionDomain()
    task = domain.generate(2, 3)
    body = task.meta["bugs"][0]["body"].replace("{\n", "{\n    /* equivalent */\n", 1)
    assert play(domain, task, [Message("assistant", f"```c\n{body}```")]).passed
