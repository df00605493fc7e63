"""Stored rollouts as Hugging Face style datasets that TRL's trainers load as they are.

    rollouts = list(traces.select(stage="grpo"))
    write_rows(sft_rows(rollouts), "sft.jsonl")        # {"messages": [...]}: SFTTrainer
    write_rows(dpo_rows(rollouts), "dpo.parquet")      # {"prompt", "chosen", "rejected"}: DPOTrainer
    write_rows(rl_rows(rollouts), "prompts.jsonl")     # {"prompt", "task_id", ...}: GRPOTrainer

Messages take the conversational form of `datasets`/TRL: `{"role", "content"}`; an
assistant turn that called tools carries `tool_calls`, each `{"type": "function",
"function": {"name", "arguments"}}` (arguments a JSON object), and its `content` is the
text without the `<tool_call>` blocks, so a chat template that renders `tool_calls` does
not render the calls twice; a tool's reply is `{"role": "tool", "content", "name"}`.
`tool_markup=True` keeps instead the exact sampled text (markup included) and no
`tool_calls`, for templates, like the built-in tiny model's, that ignore `tool_calls`.

- `sft_rows`: one row per passed rollout (reward >= `min_reward` if given): the whole
  conversation, ending with the last assistant turn.
- `dpo_rows`: pairs within one task id: its passed rollouts from the highest reward
  down against its failed ones from the lowest up, each rollout in at most one pair;
  `prompt` is the task's prompt, `chosen`/`rejected` every message after it.
- `rl_rows`: one row per distinct task id, its prompt and where it came from.

Rollouts with an error (a crashed episode or a failed verifier, or a trace store
placeholder) are never exported as examples: their verdict says nothing about the answer;
nor are rollouts with a lone surrogate in any string of their row (a message, a tool-call
name or argument, a tool's name, an id), which UTF-8 cannot encode nor a tokenizer take. `write_rows` picks the file format
by suffix: `.jsonl`, or `.parquet` where each message is an Arrow JSON value (so tool
arguments keep their own keys; `datasets` reads the column back as `Json`).

Not guaranteed: the prompt of a rollout is found from its structure (every turn appends
its assistant message and its observations); a rollout edited by hand may split wrongly.
Nothing checks that a dataset fits a model's context window.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from posttrain.store.atomic import atomic_write_bytes, atomic_write_text
from posttrain.tools.parse import strip_tool_calls
from posttrain.types import Message, Rollout, utf8_encodable

FORMATS = ("sft", "dpo", "rl")
SUFFIXES = (".jsonl", ".parquet")
Row = dict[str, Any]


class ExportError(ValueError):
    """An export that cannot be written as asked; the message names the bad value."""


def prompt_length(rollout: Rollout) -> int:
    """How many of `rollout.messages` are the task's prompt (those before the first turn)."""
    messages = rollout.messages
    n = len(messages) - sum(1 + len(t.observations) for t in rollout.turns)
    if 0 <= n <= len(messages) and (n == len(messages) or messages[n].role == "assistant"):
        return n
    # A rollout not laid out by the episode loop: fall back on the first assistant message.
    return next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))


def hf_message(message: Message, tool_markup: bool = False) -> Row:
    """One message in the conversational form of `datasets` and TRL (see the module doc)."""
    row: Row = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls and not tool_markup:
        row["content"] = strip_tool_calls(message.content)
        row["tool_calls"] = [
            {
                **({"id": call.id} if call.id else {}),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.role == "tool" and message.name:
        row["name"] = message.name
    return row


def split_conversation(rollout: Rollout, tool_markup: bool = False) -> tuple[list[Row], list[Row]]:
    """(prompt, completion) messages of `rollout`; the completion ends with its last
    assistant message (environment replies after it teach nothing) or is empty."""
    rows = [hf_message(m, tool_markup) for m in rollout.messages]
    n = prompt_length(rollout)
    completion = rows[n:]
    while completion and completion[-1]["role"] != "assistant":
        completion.pop()
    return rows[:n], completion


def usable(rollout: Rollout) -> bool:
    """False for a crashed episode or a failed verifier: no judgement of the answer; and
    for a rollout with a lone surrogate (UTF-8 cannot encode it, no tokenizer takes it) in
    any string a row may carry: its id, task id and domain, and every field of every
    message (content, tool-call names, ids and arguments, a tool reply's name)."""
    if rollout.error is not None or rollout.verdict.error is not None:
        return False
    fields = [rollout.id, rollout.task_id, rollout.domain, [m.to_dict() for m in rollout.messages]]
    return utf8_encodable(json.dumps(fields, ensure_ascii=False))


def sft_rows(
    rollouts: Iterable[Rollout], min_reward: float | None = None, tool_markup: bool = False
) -> list[Row]:
    """`{"messages": [...]}` of every usable passed rollout (reward >= `min_reward`)."""
    out = []
    for r in rollouts:
        if (
            not usable(r)
            or not r.verdict.passed
            or (min_reward is not None and r.reward < min_reward)
        ):
            continue
        prompt, completion = split_conversation(r, tool_markup)
        if completion:
            out.append({"messages": prompt + completion})
    return out


@dataclass(frozen=True)
class _Side:
    """What a preference pair needs of one rollout (its token lists are let go early)."""

    id: str
    domain: str
    reward: float
    passed: bool
    prompt: list[Row]
    turns: list[Row]


def dpo_rows(
    rollouts: Iterable[Rollout], min_reward: float | None = None, tool_markup: bool = False
) -> list[Row]:
    """Preference pairs within each task id (see the module doc); `min_reward` bounds the
    chosen side. Rows also carry `task_id`, `domain` and both rollouts' ids and rewards."""
    by_task: dict[str, list[_Side]] = {}
    for r in rollouts:
        if not usable(r):
            continue
        prompt, turns = split_conversation(r, tool_markup)
        if turns:
            side = _Side(r.id, r.domain, r.reward, r.verdict.passed, prompt, turns)
            by_task.setdefault(r.task_id, []).append(side)
    out = []
    for task_id, group in by_task.items():
        good = [s for s in group if s.passed and (min_reward is None or s.reward >= min_reward)]
        bad = [s for s in group if not s.passed]
        good.sort(key=lambda s: (-s.reward, s.id))
        bad.sort(key=lambda s: (s.reward, s.id))
        for chosen, rejected in zip(good, bad, strict=False):
            out.append({
                "prompt": chosen.prompt, "chosen": chosen.turns, "rejected": rejected.turns,
                "task_id": task_id, "domain": chosen.domain,
                "chosen_id": chosen.id, "rejected_id": rejected.id,
                "chosen_reward": chosen.reward, "rejected_reward": rejected.reward,
            })  # fmt: skip
    return out


def rl_rows(rollouts: Iterable[Rollout]) -> list[Row]:
    """`{"prompt", "task_id", "domain", "difficulty"}` once per task id, first seen first:
    the prompt-only dataset GRPOTrainer samples from (its reward functions receive the
    other columns as keyword arguments)."""
    seen: dict[str, Row] = {}
    for r in rollouts:
        if r.task_id not in seen:
            prompt = [hf_message(m) for m in r.messages[: prompt_length(r)]]
            fields = [prompt, r.task_id, r.domain]
            if prompt and utf8_encodable(json.dumps(fields, ensure_ascii=False)):
                seen[r.task_id] = {
                    "prompt": prompt, "task_id": r.task_id, "domain": r.domain,
                    "difficulty": r.difficulty,
                }  # fmt: skip
    return list(seen.values())


def write_rows(rows: list[Row], path: str | Path) -> Path:
    """Write `rows` to `path` (`.jsonl` or `.parquet`, by suffix), atomically; the path.

    ExportError on another suffix, when there are no rows or when the directory to
    write into is missing (it is not created: a mistyped path should not make one)."""
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise ExportError(f"output file must end in .jsonl or .parquet, got {str(path)!r}")
    if not rows:
        raise ExportError(f"nothing to write to {path}: no rollout gave a row")
    if not path.parent.is_dir():
        what = "is not a directory" if path.parent.exists() else "does not exist"
        raise ExportError(f"cannot write {str(path)!r}: its directory {str(path.parent)!r} {what}")
    if path.suffix == ".jsonl":
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    else:
        atomic_write_bytes(path, _parquet_bytes(rows))
    return path


def _parquet_bytes(rows: list[Row]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {}
    for name in rows[0]:
        values = [r.get(name) for r in rows]
        lists = [v for v in values if isinstance(v, list)]
        if len(lists) == len(values):
            # One JSON value per message: Arrow structs would merge every row's keys
            # (tool arguments included) into one schema padded with nulls.
            texts = [[json.dumps(m, ensure_ascii=False) for m in v] for v in lists]
            columns[name] = pa.array(texts, type=pa.list_(pa.string())).cast(pa.list_(pa.json_()))
        else:
            columns[name] = pa.array(values)
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()
