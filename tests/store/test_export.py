"""Stored rollouts as TRL datasets: message form, SFT/DPO/RL rows, JSONL and Parquet files.

`play` builds a rollout the way the episode loop lays it out (prompt, then each turn's
assistant message and the real session's observations) and verifies it with the real
verifier; the trace-store, rescore and CLI tests use it too.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from posttrain.domains import get_domain
from posttrain.store.export import (
    ExportError,
    dpo_rows,
    hf_message,
    prompt_length,
    rl_rows,
    sft_rows,
    write_rows,
)
from posttrain.tools.parse import parse_tool_calls
from posttrain.types import Message, Rollout, ToolCall, Turn, Verdict

ARITH, CALC = "arith/addition-v1", "tools/calculator-v1"


def play(domain_id: str, texts: list[str], seed: int = 0, rollout_id: str = "r", **extra: Any) -> Rollout:  # fmt: skip
    """A verified rollout of `texts` on task (`domain_id`, `seed`, difficulty 2); `extra`
    replaces fields afterwards (a stale `verdict`, an `error`, a `policy_version`)."""
    domain = get_domain(domain_id)
    task = domain.generate(seed, 2)
    opener = getattr(domain, "open", None)
    session = opener(task, None) if opener is not None else None
    messages, turns, completion, mask = list(task.prompt), [], [], []
    for text in texts:
        calls = parse_tool_calls(text).calls
        seen = [Message("tool", session.call(c).content, name=c.name) for c in calls] if session else []  # fmt: skip
        env = [b for m in seen for b in m.content.encode()]
        sampled = list(text.encode())
        turns.append(Turn(text, sampled, [-0.5] * len(sampled), "stop", calls, seen, env))
        messages += [Message("assistant", text, tool_calls=calls), *seen]
        completion += sampled + env
        mask += [1] * len(sampled) + [0] * len(env)
    rollout = Rollout(rollout_id, task.id, domain_id, 2, list(task.prompt[0].content.encode()),
                      completion, mask, [-0.5 * m for m in mask], messages, turns,
                      Verdict(0.0, False, "not verified"), timings={"episode_s": 0.5})  # fmt: skip
    rollout.verdict = domain.verify(task, rollout, session)
    return dataclasses.replace(rollout, **extra)


def answer(seed: int, delta: int = 0) -> str:
    return str(int(get_domain(ARITH).generate(seed, 2).answer) + delta)


def calc_texts(seed: int, delta: int = 0) -> list[str]:
    turns = get_domain(CALC).reference(get_domain(CALC).generate(seed, 2)).turns
    return [turns[0].content, str(int(turns[-1].content) + delta)]


def test_prompt_length_counts_the_messages_before_the_first_turn() -> None:
    rollout = play(CALC, calc_texts(0))
    assert prompt_length(rollout) == 1
    assert [m.role for m in rollout.messages] == ["user", "assistant", "tool", "assistant"]


def test_prompt_length_falls_back_on_the_first_assistant_message() -> None:
    rollout = play(ARITH, [answer(0)])
    rollout.messages.append(Message("user", "thanks"))  # not laid out by the episode loop
    assert prompt_length(rollout) == 1


def test_hf_message_gives_tool_calls_in_function_form_and_strips_the_markup() -> None:
    call = ToolCall("calculator", {"expression": "2*3"}, id="call_0")
    text = 'Let me compute. <tool_call>{"name":"calculator","arguments":{"expression":"2*3"}}</tool_call>'  # fmt: skip
    row = hf_message(Message("assistant", text, tool_calls=[call]))
    assert row == {
        "role": "assistant",
        "content": "Let me compute.",
        "tool_calls": [{"id": "call_0", "type": "function",
                        "function": {"name": "calculator", "arguments": {"expression": "2*3"}}}],
    }  # fmt: skip
    assert hf_message(Message("tool", "6", name="calculator")) == {"role": "tool", "content": "6", "name": "calculator"}  # fmt: skip


def test_hf_message_with_tool_markup_keeps_the_sampled_text_and_no_tool_calls() -> None:
    text = '<tool_call>{"name":"calculator","arguments":{}}</tool_call>'
    row = hf_message(Message("assistant", text, tool_calls=[ToolCall("calculator")]), tool_markup=True)  # fmt: skip
    assert row == {"role": "assistant", "content": text}


def test_sft_rows_keep_usable_passed_rollouts_whole() -> None:
    rollouts = [
        play(CALC, calc_texts(0), rollout_id="ok"),
        play(ARITH, [answer(0, 1)], rollout_id="wrong"),
        play(ARITH, [answer(1)], seed=1, rollout_id="crashed", error="session failed: boom"),
    ]
    rows = sft_rows(rollouts)
    assert len(rows) == 1
    assert [m["role"] for m in rows[0]["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert rows[0]["messages"][1]["tool_calls"][0]["function"]["name"] == "calculator"
    assert rows[0]["messages"][-1]["content"] == calc_texts(0)[-1]


@pytest.mark.parametrize("where", ["tool call name", "tool reply name", "tool call id", "task id"])
def test_a_lone_surrogate_anywhere_in_the_row_leaves_the_rollout_out(where: str) -> None:
    """Only message texts and tool arguments were checked: a surrogate in a tool's name
    made the export fail to write (or write a row no tokenizer takes)."""
    rollout = play(CALC, calc_texts(0), rollout_id="ok")
    call, reply = rollout.messages[1].tool_calls[0], rollout.messages[2]
    if where == "tool call name":
        call.name = "calc\ud800"
    elif where == "tool reply name":
        reply.name = "calc\ud800"
    elif where == "tool call id":
        call.id = "c\ud800"
    else:
        rollout.task_id += "\ud800"
    wrong = play(CALC, calc_texts(0, 1), rollout_id="wrong")
    assert len(dpo_rows([play(CALC, calc_texts(0), rollout_id="ok"), wrong])) == 1
    assert sft_rows([rollout]) == [] and dpo_rows([rollout, wrong]) == []
    if where == "task id":  # the prompt-only dataset carries it too
        assert rl_rows([rollout]) == []


def test_sft_rows_respect_min_reward() -> None:
    partial = play(ARITH, [answer(0)], verdict=Verdict(0.5, True, "half"))
    assert sft_rows([partial], min_reward=0.6) == []
    assert len(sft_rows([partial], min_reward=0.5)) == 1


def test_sft_rows_end_with_the_last_assistant_turn() -> None:
    rollout = play(CALC, calc_texts(0)[:1])  # stopped after the tool replied
    rollout.verdict = Verdict(1.0, True, "forced")
    messages = sft_rows([rollout])[0]["messages"]
    assert messages[-1]["role"] == "assistant"


def test_dpo_rows_pair_best_passed_with_worst_failed_within_a_task() -> None:
    rollouts = [
        play(ARITH, [answer(0)], rollout_id="p-high"),
        play(ARITH, [answer(0)], rollout_id="p-low", verdict=Verdict(0.7, True, "ok")),
        play(ARITH, [answer(0, 1)], rollout_id="f-low"),
        play(ARITH, [answer(0, 2)], rollout_id="f-high", verdict=Verdict(0.3, False, "close")),
        play(ARITH, [answer(0, 3)], rollout_id="f-extra", verdict=Verdict(0.4, False, "closer")),
        play(ARITH, [answer(1)], seed=1, rollout_id="other-task"),  # no failed partner: no pair
    ]
    rows = dpo_rows(rollouts)
    assert [(r["chosen_id"], r["rejected_id"]) for r in rows] == [("p-high", "f-low"), ("p-low", "f-high")]  # fmt: skip
    assert rows[0]["prompt"] == [{"role": "user", "content": "95+5"}]
    assert rows[0]["chosen"] == [{"role": "assistant", "content": answer(0)}]
    assert rows[0]["rejected"] == [{"role": "assistant", "content": answer(0, 1)}]


def test_dpo_rows_leave_out_errors_and_chosen_below_min_reward() -> None:
    good = play(ARITH, [answer(0)], rollout_id="good", verdict=Verdict(0.8, True, "ok"))
    broken = play(ARITH, [answer(0, 1)], rollout_id="broken",
                  verdict=Verdict(0.0, False, "raised", error="ValueError: x"))  # fmt: skip
    assert dpo_rows([good, broken]) == []
    bad = play(ARITH, [answer(0, 1)], rollout_id="bad")
    assert dpo_rows([good, bad], min_reward=0.9) == []
    assert len(dpo_rows([good, bad])) == 1


def test_rl_rows_give_one_prompt_per_task() -> None:
    rollouts = [
        play(ARITH, [answer(0)]),
        play(ARITH, [answer(0, 1)]),
        play(CALC, calc_texts(1), seed=1),
    ]
    rows = rl_rows(rollouts)
    assert [(r["task_id"], r["domain"], r["difficulty"]) for r in rows] == [
        (f"{ARITH}@0.d2", ARITH, 2), (f"{CALC}@1.d2", CALC, 2)]  # fmt: skip
    assert rows[1]["prompt"] == [{"role": "user", "content": get_domain(CALC).generate(1, 2).prompt[0].content}]  # fmt: skip


def test_write_rows_jsonl_round_trips(tmp_path: Path) -> None:
    rows = sft_rows([play(CALC, calc_texts(0))])
    path = write_rows(rows, tmp_path / "sft.jsonl")
    assert [json.loads(line) for line in path.read_text().splitlines()] == rows


def test_write_rows_parquet_keeps_each_messages_own_keys(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    rows = sft_rows([play(CALC, calc_texts(0)), play(ARITH, [answer(0)])])
    table = pq.read_table(write_rows(rows, tmp_path / "sft.parquet"))
    stored = [[json.loads(m) for m in r["messages"]] for r in table.to_pylist()]
    assert stored == [r["messages"] for r in rows]  # no keys merged in, no nulls padded


def test_write_rows_refuses_an_unknown_suffix_and_no_rows(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="must end in .jsonl or .parquet"):
        write_rows([{"prompt": []}], tmp_path / "x.csv")
    with pytest.raises(ExportError, match="nothing to write"):
        write_rows([], tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize(
    ("make_parent", "why"), [(False, "does not exist"), (True, "is not a directory")]
)
def test_write_rows_into_a_missing_directory_names_the_output_path(
    tmp_path: Path, make_parent: bool, why: str
) -> None:
    out = tmp_path / "missing" / "sft.jsonl"
    if make_parent:
        out.parent.write_text("a file where the directory should be")
    rows = sft_rows([play(ARITH, [answer(0)])])
    with pytest.raises(ExportError, match=why) as info:
        write_rows(rows, out)
    assert repr(str(out)) in str(info.value)
