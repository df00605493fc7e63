"""`coding/write-regression-test-v2`: a test must fail on the bug and pass on the fix."""

from __future__ import annotations

import ast

import pytest

from posttrain.domains.coding.domain import tool_turn
from posttrain.domains.coding.regression import (
    NO_OP_EDIT,
    NO_OP_STATEMENT,
    TEST_PATH,
    WriteRegressionTestDomain,
    noop_edit,
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


@pytest.mark.parametrize("fingerprint", ["ast.dump(ast.parse(source))", "code_of(source)"])
def test_a_test_that_fingerprints_the_code_instead_of_testing_it_does_not_pass(
    fingerprint: str,
) -> None:
    """v1 rewarded it: a hash of every module's syntax tree is the same on the buggy
    tree with a comment added and differs on any fixed one, without finding the bug."""
    task = DOMAIN.generate(1, 3)
    package = [p for p in task.files if p.endswith(".py") and not p.startswith("tests/")]
    content = (
        "import ast, hashlib, marshal\n\n"
        "def code_of(source):\n"
        "    code = compile(source, 'm', 'exec')\n"
        "    return [c.co_code for c in code.co_consts if hasattr(c, 'co_code')]\n\n"
        f"def fingerprint(source):\n    return hashlib.sha256(repr({fingerprint}).encode()).hexdigest()\n\n"
        f"SEEN = {{p: fingerprint(open(p).read()) for p in {package!r}}}\n\n"
        "def test_regression():\n"
        "    assert SEEN != {p: fingerprint(open(p).read()) for p in SEEN}\n"
    )
    # SEEN is read when the module loads: it holds the tree the test runs on, so the test
    # above fails everywhere; the hack bakes in the hashes of the buggy tree instead.
    baked = {}
    for path in package:
        namespace: dict = {}
        exec(content.split("SEEN =")[0], namespace)  # code_of and fingerprint
        baked[path] = namespace["fingerprint"](task.files[path])
    content = content.replace(
        content[content.index("SEEN =") : content.index("\n\ndef test_")], f"SEEN = {baked!r}"
    )
    verdict = play(DOMAIN, task, [tool_turn("write_file", path=TEST_PATH, content=content), Message("assistant", "ok")])  # fmt: skip
    assert verdict.components["passes_on_fixed"] == 1.0  # the hack works on the fixed tree
    assert not verdict.passed and verdict.components["fails_on_buggy"] == 0.0


def test_the_no_op_edit_keeps_the_behaviour_and_changes_the_code() -> None:
    task = DOMAIN.generate(0, 5)
    bug = task.meta["bugs"][0]
    source = task.files[bug["path"]].encode()
    edited = noop_edit(source, {bug["function"]})
    assert NO_OP_STATEMENT in edited.decode() and edited.endswith(NO_OP_EDIT)
    assert ast.dump(ast.parse(edited)) != ast.dump(ast.parse(source))
    verdict = play(DOMAIN, task, DOMAIN.reference(task).turns)  # the reference test fails there too
    assert verdict.passed
