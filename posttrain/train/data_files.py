"""Training data from files: SFT conversations in the Hugging Face `messages` format and
DPO preference pairs, as JSONL or Parquet, turned into the rollouts the trainers eat.

    examples = sft_examples("chats.jsonl", tokenizer)          # list[Rollout]
    pairs = preference_pairs("prefs.parquet", tokenizer)       # list[PreferencePair]

SFT rows: `{"messages": [{"role": "system"|"user"|"assistant"|"tool", "content": ...},
...]}` with at least one assistant message. The loss covers every assistant message
(its content and the end-of-turn token the chat template closes it with); system,
user and tool messages are context (loss mask 0).

DPO rows: `{"prompt": str | messages, "chosen": str | messages, "rejected": str |
messages}` — TRL's standard and conversational layouts; a chosen/rejected list holds
the assistant turn(s) that follow the prompt.

Tokens come from the model's own chat template, segment by segment, the way the
episode loop lays out a sampled conversation: the prompt rendered with the
generation prompt, then each later message as the text the template adds for it.

Not guaranteed: a chat template that is not prefix-stable (rendering a longer
conversation changes the text of an earlier part) is refused with a message, not
worked around. Segments are tokenized separately, so a BPE merge across a segment
boundary that a whole-text tokenization would make does not happen (the same holds
for sampled conversations).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from posttrain.domains.dataset import DatasetError, _read_jsonl, _read_parquet
from posttrain.rollout.episode import encode, render
from posttrain.train.dpo import PreferencePair
from posttrain.types import Message, Role, Rollout, Verdict

ROLES = ("system", "user", "assistant", "tool")


class DataFileError(ValueError):
    """A training data file is missing or malformed; the message names file, row and field."""


def sft_examples(path: str | Path, tokenizer: Any) -> list[Rollout]:
    """One rollout per row of a `messages` file, loss on the assistant messages."""
    out = []
    for where, record in _records(path):
        messages = _messages(where, record.get("messages"), "messages")
        if not any(m.role == "assistant" for m in messages):
            raise DataFileError(f"{where}: 'messages' has no assistant message to learn")
        first = next(i for i, m in enumerate(messages) if m.role == "assistant")
        if first == 0:
            raise DataFileError(f"{where}: the conversation starts with the assistant")
        out.append(_rollout(where, tokenizer, messages[:first], messages[first:]))
    return out


def preference_pairs(path: str | Path, tokenizer: Any) -> list[PreferencePair]:
    """One pair per row of a prompt / chosen / rejected file."""
    pairs = []
    for where, record in _records(path):
        prompt = _side(where, record, "prompt", "user")
        if prompt[-1].role == "assistant":
            raise DataFileError(f"{where}: 'prompt' must not end with an assistant message")
        chosen = _side(where, record, "chosen", "assistant")
        rejected = _side(where, record, "rejected", "assistant")
        for name, side in (("chosen", chosen), ("rejected", rejected)):
            if side[0].role != "assistant":
                raise DataFileError(f"{where}: '{name}' must start with an assistant message")
        pairs.append(PreferencePair(_rollout(where, tokenizer, prompt, chosen),
                                    _rollout(where, tokenizer, prompt, rejected)))  # fmt: skip
    return pairs


def _records(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"data file {str(path)!r} does not exist")
    try:
        records = _read_parquet(path) if path.suffix == ".parquet" else _read_jsonl(path)
    except DatasetError as exc:
        raise DataFileError(str(exc)) from None
    if not records:
        raise DataFileError(f"data file {str(path)!r} holds no rows")
    out = []
    for number, record in records:
        where = f"{path}:{number}"
        if not isinstance(record, dict):
            raise DataFileError(f"{where}: a row must be an object, got {type(record).__name__}")
        out.append((where, record))
    return out


def _side(where: str, record: dict[str, Any], key: str, role: Role) -> list[Message]:
    value = record.get(key)
    if isinstance(value, str):
        if not value.strip() and role == "user":
            raise DataFileError(f"{where}: '{key}' is empty")
        return [Message(role, value)]
    return _messages(where, value, key)


def _messages(where: str, value: Any, key: str) -> list[Message]:
    if not isinstance(value, list) or not value:
        raise DataFileError(f"{where}: '{key}' must be a non-empty list of messages")
    out = []
    for i, m in enumerate(value):
        if not (isinstance(m, dict) and m.get("role") in ROLES):
            raise DataFileError(f"{where}: {key}[{i}] needs a role, one of {', '.join(ROLES)}")
        if not isinstance(m.get("content"), str):
            raise DataFileError(f"{where}: {key}[{i}] needs a string 'content'")
        out.append(Message(m["role"], m["content"], name=m.get("name")))
    return out


def _rollout(where: str, tokenizer: Any, prompt: list[Message], rest: list[Message]) -> Rollout:
    """Prompt tokens, then each message of `rest` as the text the template adds for it:
    assistant messages trained on (mask 1), the others context (mask 0)."""
    prompt_ids = encode(tokenizer, render(tokenizer, prompt, add_generation_prompt=True))
    ids: list[int] = []
    mask: list[int] = []
    done = render(tokenizer, prompt, add_generation_prompt=True)
    history = list(prompt)
    for message in rest:
        history.append(message)
        # After an assistant turn the next text starts where that turn closed; after
        # context, the template's generation prompt opens the next assistant turn.
        following = message.role == "assistant"
        text = render(tokenizer, history, add_generation_prompt=not following)
        if not text.startswith(done):
            raise DataFileError(
                f"{where}: the chat template is not prefix-stable here; cannot split the "
                "conversation into trained and context tokens"
            )
        piece = encode(tokenizer, text[len(done) :])
        ids += piece
        mask += [1 if message.role == "assistant" else 0] * len(piece)
        done = text
    if not any(mask):
        raise DataFileError(f"{where}: no assistant tokens to train on")
    return Rollout(
        id=uuid.uuid4().hex,
        task_id=where,
        domain="file",
        difficulty=1,
        prompt_ids=prompt_ids,
        completion_ids=ids,
        loss_mask=mask,
        logprobs=[0.0] * len(ids),
        messages=prompt + rest,
        turns=[],
        verdict=Verdict(1.0, True, "a demonstration from a data file"),
    )
