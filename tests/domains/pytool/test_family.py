"""The `pytool` family: the self-check, the python tool's session and each verifier."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from posttrain.domains.check import check_domains, replay_solutions
from posttrain.domains.pytool import DOMAINS, PytoolSession
from posttrain.domains.pytool.data_tasks import CsvAggregateDomain, ListStatsDomain, LogFilterDomain
from posttrain.domains.pytool.program_tasks import FunctionCountDomain, _compiled
from posttrain.domains.pytool.tool import PytoolDomain, python_turn
from posttrain.sandbox import layers
from posttrain.types import Message, Reference, Task, ToolCall, Verdict

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")
STATS, CSV, LOG, COUNT = ListStatsDomain(), CsvAggregateDomain(), LogFilterDomain(), FunctionCountDomain()  # fmt: skip


@cache
def tokenizer() -> Any:
    from posttrain.models.tiny import build_tokenizer

    tok = build_tokenizer()
    tok.model_max_length = 1 << 30
    return tok


def play(domain: PytoolDomain, task: Task, code: str | None, final: str) -> Verdict:
    """The verdict of one python call running `code` (none when None) then `final`."""
    turns = ([] if code is None else [python_turn(code)]) + [Message("assistant", final)]
    return replay_solutions(domain, [(task, Reference(turns))], tokenizer())[0].verdict


def test_self_check_passes_for_every_domain() -> None:
    failed = [r for r in check_domains(DOMAINS, difficulties=(1, 5)) if not r.ok]
    assert failed == []


def test_ids_and_cells_are_distinct() -> None:
    assert len({d.id for d in DOMAINS}) == len(DOMAINS) >= 4
    assert all(d.id.startswith("pytool/") and d.axes.tools == "python" for d in DOMAINS)
    assert len({(d.axes.modality, d.axes.verification) for d in DOMAINS}) >= 3


def test_a_crashing_call_comes_back_as_an_error_observation() -> None:
    session = PytoolSession(STATS.generate(0, 1))
    obs = session.call(ToolCall("python", {"code": "1 / 0"}))
    assert (
        obs.error and obs.content.startswith("error: exit code") and "ZeroDivision" in obs.content
    )


def test_bad_calls_are_error_observations_not_exceptions() -> None:
    session = PytoolSession(STATS.generate(0, 1))
    assert session.call(ToolCall("shell", {"code": "print(1)"})).error
    assert session.call(ToolCall("python", {"source": "print(1)"})).error
    assert session.call(ToolCall("python", {"code": "print(2 + 2)"})).content.strip() == "4"


def test_a_call_after_close_raises() -> None:
    session = PytoolSession(STATS.generate(0, 1))
    session.close()
    with pytest.raises(RuntimeError):
        session.call(ToolCall("python", {"code": "print(1)"}))


def test_the_task_files_are_in_the_workspace() -> None:
    task = CSV.generate(3, 2)
    obs = PytoolSession(task).call(ToolCall("python", {"code": "print(len(open('orders.csv').readlines()))"}))  # fmt: skip
    assert obs.content.strip() == str(task.meta["rows"] + 1)


def test_a_decimal_within_a_cent_passes_and_one_further_fails() -> None:
    task = STATS.generate(1, 3)
    value = float(task.answer)
    assert play(STATS, task, task.meta["code"], f"{value + 0.01:.2f}").passed
    assert not play(STATS, task, task.meta["code"], f"{value + 0.03:.2f}").passed


def test_the_right_answer_after_a_call_that_printed_something_else_is_not_tool_use() -> None:
    task = CSV.generate(0, 2)
    verdict = play(CSV, task, "print('hello')", task.answer)
    assert verdict.components == {"format": 1.0, "correct": 1.0, "used_tool": 0.0}


def test_the_right_answer_after_a_crashing_call_is_not_tool_use() -> None:
    task = COUNT.generate(0, 2)
    verdict = play(COUNT, task, f"print({task.answer})\nraise SystemExit(1)", task.answer)
    assert not verdict.passed and verdict.components["used_tool"] == 0.0


def test_a_log_answer_in_another_order_passes() -> None:
    task = LOG.generate(2, 4)
    ids = task.answer.split(", ")
    assert play(LOG, task, task.meta["code"], ",".join(reversed(ids))).passed


def test_a_log_answer_with_a_duplicate_or_a_missing_id_fails() -> None:
    task = LOG.generate(2, 4)
    ids = task.answer.split(", ")
    assert not play(LOG, task, task.meta["code"], ", ".join([*ids, ids[0]])).passed
    assert not play(LOG, task, task.meta["code"], ", ".join(ids[1:])).passed


def test_an_integer_answer_with_prose_fails_the_format() -> None:
    task = COUNT.generate(4, 3)
    verdict = play(COUNT, task, task.meta["code"], f"The count is {task.answer}.")
    assert verdict.components["format"] == 0.0 and not verdict.passed


def test_the_function_count_is_the_shown_function_run_on_the_host() -> None:
    task = COUNT.generate(5, 2)
    f = _compiled(task.meta["source"])
    assert task.answer == str(sum(f(n) for n in range(1, task.meta["inputs"] + 1)))
    assert task.meta["source"] in task.prompt[0].content
