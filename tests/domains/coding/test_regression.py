"""`coding/write-regression-test-v1`: a test must fail on the bug and pass on the fix."""

from __future__ import annotations

import pytest

from posttrain.domains.coding.domain import tool_turn
from posttrain.domains.coding.regression import (
    TEST_PATH,
    WriteRegressionTestDomain,
    regression_test_source,
)
from posttrain.sandbox import layers
from posttrain.types import Message

from .replay import play

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")
DOMAIN = WriteRegressionTestDomain()


def test_the_repositorys_own_tests_hold_no_failing_case() -> None:
    task = DOMAIN.generate(0, 2)
    failing = [c["name"] for c in task.meta["cases"] if c["f2p"]]
    text = "".join(t for p, t in task.files.items() if p.startswith("tests/"))
    assert failing and not any(f"def {name}(" in text for name in failing)


def test_a_passing_test_beside_the_catching_one_still_passes() -> None:
    task = DOMAIN.generate(1, 3)
    witness = task.meta["bugs"][0]["witness"]
    content = (
        regression_test_source(task.meta["package"], witness)
        + "\n\ndef test_trivial():\n    assert 1 + 1 == 2\n"
    )
    verdict = play(DOMAIN, task, [tool_turn("write_file", path=TEST_PATH, content=content), Message("assistant", "ok")])  # fmt: skip
    assert verdict.passed


def test_a_test_that_cannot_import_fails_on_both_counts() -> None:
    task = DOMAIN.generate(1, 3)
    verdict = play(DOMAIN, task, [tool_turn("write_file", path=TEST_PATH, content="import nope\n"), Message("assistant", "ok")])  # fmt: skip
    assert not verdict.passed and verdict.components["passes_on_fixed"] == 0.0


def test_a_test_that_only_notices_the_file_changed_does_not_pass() -> None:
    task = DOMAIN.generate(1, 3)
    path = task.meta["bugs"][0]["path"]
    content = (
        "import pathlib\n\n"
        f"CURRENT = {task.files[path]!r}\n\n\n"
        "def test_regression():\n"
        f"    assert pathlib.Path({path!r}).read_text() != CURRENT\n"
    )
    verdict = play(DOMAIN, task, [tool_turn("write_file", path=TEST_PATH, content=content), Message("assistant", "ok")])  # fmt: skip
    assert not verdict.passed and verdict.components["fails_on_buggy"] == 0.0


def test_a_test_that_tells_the_runs_apart_by_leftover_files_does_not_pass() -> None:
    """The judge runs the test on the buggy, fixed and edited trees in one sandbox: a file
    left in /tmp by one run must not let the next one know which tree it is on."""
    task = DOMAIN.generate(1, 3)
    content = (
        "import os\n\n\ndef test_regression():\n"
        "    runs = len(os.listdir('/tmp')) + len(os.listdir('/dev/shm'))\n"
        "    open(f'/tmp/run{runs}', 'w').close()\n"
        "    assert runs == 1  # the second run is the fixed tree\n"
    )
    verdict = play(DOMAIN, task, [tool_turn("write_file", path=TEST_PATH, content=content), Message("assistant", "ok")])  # fmt: skip
    assert not verdict.passed and verdict.components["passes_on_fixed"] == 0.0


def test_a_test_that_tells_the_runs_apart_by_its_pid_does_not_pass() -> None:
    """In one sandbox the fixed tree's run had the next pid after the buggy tree's."""
    task = DOMAIN.generate(1, 3)
    for pid in range(2, 6):
        content = f"import os\n\n\ndef test_regression():\n    assert os.getpid() == {pid}\n"
        verdict = play(DOMAIN, task, [tool_turn("write_file", path=TEST_PATH, content=content), Message("assistant", "ok")])  # fmt: skip
        assert not verdict.passed, pid
