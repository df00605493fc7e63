"""The verifier's allow-list, SWE-bench scoring and per-turn states."""

from __future__ import annotations

from posttrain.domains.coding.domain import FixFailingTestDomain
from posttrain.domains.coding.verify import judged_files, reward_of, score, turn_states, unchanged
from posttrain.sandbox import Snapshot
from posttrain.types import Message, Rollout, ToolCall, Turn, Verdict

TASK = FixFailingTestDomain().generate(0, 4)


def test_only_editable_files_are_taken_from_the_workspace() -> None:
    path = TASK.meta["editable"][0]
    final = {path: b"x = 1\n", "conftest.py": b"boom", "tests/test_x.py": b""}
    judged = judged_files(TASK, final)
    assert judged[path] == b"x = 1\n" and "conftest.py" not in judged
    assert all(judged[p] == t.encode() for p, t in TASK.files.items() if p.startswith("tests/"))


def test_a_deleted_editable_file_stays_deleted() -> None:
    path = TASK.meta["editable"][0]
    assert path not in judged_files(TASK, {})


def test_unchanged_sees_only_editable_files() -> None:
    same = {p: t.encode() for p, t in TASK.files.items()} | {"junk.py": b"1"}
    assert unchanged(TASK, same) and not unchanged(TASK, {})


def test_score_and_reward_follow_swe_bench_semantics() -> None:
    cases = [{"f2p": True, "expected": {"value": 1}}, {"f2p": False, "expected": {"value": 2}}]
    fixed = score(cases, [{"value": 1}, {"value": 2}])
    broke = score(cases, [{"value": 1}, {"value": 3}])
    assert reward_of(fixed) == (1.0, True)
    assert broke["tests_broken"] == 1.0 and reward_of(broke) == (0.0, False)
    assert reward_of(score(cases, None))[1] is False


def test_turn_states_follow_the_calls_of_each_turn() -> None:
    first, second, initial = (Snapshot.from_files({"a": str(i)}) for i in range(3))
    call = ToolCall("shell", {"command": "true"})
    turns = [Turn("", [], [], "stop", tool_calls=[call, call]), Turn("", [], [], "stop"), Turn("", [], [], "stop", tool_calls=[call])]  # fmt: skip
    rollout = Rollout("r", "t", "d", 1, [], [], [], [], [Message("assistant", "")], turns, Verdict(0.0, False, "-"))  # fmt: skip
    history = [first, first, second]
    assert turn_states(rollout, history, initial) == [first, first, second]
