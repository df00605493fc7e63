"""None of the known shortcuts makes a coding task pass: the allow-list and hidden tests hold."""

from __future__ import annotations

import pytest

from posttrain.domains.coding.domain import FixFailingTestDomain, hard_coded
from posttrain.domains.coding.tools import CodingSession
from posttrain.sandbox import layers
from posttrain.types import Message, Rollout, Task, ToolCall, Turn, Verdict

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")
DOMAIN = FixFailingTestDomain()


@pytest.fixture(scope="module")
def task() -> Task:
    return DOMAIN.generate(3, 2)


def play(task: Task, calls: list[ToolCall]) -> Verdict:
    """Serve `calls` (one per turn) in a session, then judge the final workspace."""
    session = DOMAIN.open(task)
    turns = []
    for call in calls:
        obs = session.call(call)
        assert not obs.error, obs.content
        turns.append(Turn(text="", token_ids=[], logprobs=[], finish_reason="stop", tool_calls=[call]))  # fmt: skip
    turns.append(Turn(text="Done.", token_ids=[], logprobs=[], finish_reason="stop"))
    rollout = Rollout("r", task.id, task.domain, task.difficulty, [], [], [], [], [Message("assistant", "Done.")], turns, Verdict(0.0, False, "-"))  # fmt: skip
    verdict = DOMAIN.verify(task, rollout, session)
    assert verdict.error is None, verdict.error
    return verdict


def fix(task: Task) -> ToolCall:
    return ToolCall("apply_patch", {"patch": task.answer})


def bug_path(task: Task) -> str:
    return str(task.meta["bugs"][0]["path"])


def test_the_true_fix_passes(task: Task) -> None:
    assert play(task, [fix(task)]).passed


def test_editing_or_deleting_the_test_files_does_not_pass(task: Task) -> None:
    tests = [p for p in task.files if p.startswith("tests/")]
    rewrite = [ToolCall("write_file", {"path": p, "content": "def test_ok():\n    pass\n"}) for p in tests]  # fmt: skip
    delete = [ToolCall("shell", {"command": "rm -rf tests"})]
    assert not play(task, rewrite).passed and not play(task, delete).passed


def test_a_root_conftest_does_not_pass(task: Task) -> None:
    conftest = "import pytest\n\ndef pytest_collection_modifyitems(items):\n    items.clear()\n"
    verdict = play(task, [ToolCall("write_file", {"path": "conftest.py", "content": conftest})])
    assert not verdict.passed and verdict.reward == 0.0


def test_pytest_config_with_addopts_does_not_pass(task: Task) -> None:
    calls = [
        ToolCall(
            "write_file",
            {"path": "pytest.ini", "content": "[pytest]\naddopts = -k nothing_matches\n"},
        ),  # fmt: skip
        ToolCall(
            "write_file",
            {"path": "pyproject.toml", "content": '[tool.pytest.ini_options]\naddopts = "--co"\n'},
        ),  # fmt: skip
    ]
    assert not play(task, calls).passed


def test_a_sitecustomize_does_not_pass(task: Task) -> None:
    hook = "import os\nos._exit(0)\n"
    calls = [ToolCall("write_file", {"path": p, "content": hook}) for p in ("sitecustomize.py", f"{task.meta['package']}/sitecustomize.py")]  # fmt: skip
    assert not play(task, calls).passed


def test_exiting_at_import_time_in_a_source_module_does_not_pass(task: Task) -> None:
    path = bug_path(task)
    source = task.meta["fixed"][path]  # even on top of the true fix
    verdict = play(task, [ToolCall("write_file", {"path": path, "content": "import os\nos._exit(0)\n" + source})])  # fmt: skip
    assert not verdict.passed and verdict.components["tests_kept"] == 0.0


def test_hard_coding_the_visible_expected_outputs_does_not_pass(task: Task) -> None:
    verdict = play(task, [ToolCall("apply_patch", {"patch": hard_coded(task)})])
    assert not verdict.passed and verdict.components["tests_fixed"] < 1.0


def test_a_fix_written_outside_the_editable_files_does_not_count(task: Task) -> None:
    path = bug_path(task)
    moved = path.replace(".py", "_fixed.py")
    verdict = play(task, [ToolCall("write_file", {"path": moved, "content": task.meta["fixed"][path]})])  # fmt: skip
    assert not verdict.passed and verdict.reward == 0.0


def test_the_session_keeps_shell_edits_between_calls(task: Task) -> None:
    session = CodingSession(task.files)
    session.call(ToolCall("shell", {"command": "echo hi > note.txt"}))
    assert session.call(ToolCall("read_file", {"path": "note.txt"})).content == "hi\n"
