"""Training data from files: SFT conversations in the Hugging Face `messages` format and
DPO preference pairs, as JSONL or Parquet, turned into the rollouts the trainers eat.

    examples = sft_examples("chats.jsonl", tokenizer)          # list[Rollout]
    pairs = preference_pairs("prefs.parquet", tokenizer)       # list[PreferencePair]

SFT rows: `{"messages": [{"role": "system"|"user"|"assistant"|"tool", "content": ...},
...]}` with at least one assistant message. The loss covers every assistant message
(its content and the end-of-turn token the chat template closes it with); system,
user and tool messages, the header that opens an assistant turn and any text the
template adds after the end-of-turn token are context (loss mask 0).

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

from jinja2.exceptions import TemplateError

from posttrain.domains.dataset import DatasetError, _read_jsonl, _read_parquet
from posttrain.rollout.episode import encode, render
from posttrain.train.dpo import PreferencePair
from posttrain.types import Message, Role, Rollout, Verdict

ROLES = ("system", "user", "assistant", "tool")


class DataFileError(ValueError):
    """A training data file is missing or malformed; the message names file, row and field."""


def sft_examples(path: str | Path, tokenizer: Any, max_context: int | None = None) -> list[Rollout]:
    """One rollout per row of a `messages` file, loss on the assistant messages; a row
    longer than `max_context` tokens is an error."""
    out = []
    for where, record in _records(path):
        messages = _messages(where, record.get("messages"), "messages")
        if not any(m.role == "assistant" for m in messages):
            raise DataFileError(f"{where}: 'messages' has no assistant message to learn")
        first = next(i for i, m in enumerate(messages) if m.role == "assistant")
        if first == 0:
            raise DataFileError(f"{where}: the conversation starts with the assistant")
        out.append(_rollout(where, tokenizer, messages[:first], messages[first:], max_context))
    return out


def preference_pairs(
    path: str | Path, tokenizer: Any, max_context: int | None = None
) -> list[PreferencePair]:
    """One pair per row of a prompt / chosen / rejected file (each side at most
    `max_context` tokens)."""
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
        pairs.append(PreferencePair(_rollout(where, tokenizer, prompt, chosen, max_context),
                                    _rollout(where, tokenizer, prompt, rejected, max_context)))  # fmt: skip
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


def _rollout(
    where: str,
    tokenizer: Any,
    prompt: list[Message],
    rest: list[Message],
    max_context: int | None = None,
) -> Rollout:
    """Prompt tokens, then each message of `rest` as the text the template adds for it:
    assistant messages trained on (mask 1) through their end-of-turn token, the rest
    context (mask 0), as the episode loop lays out a sampled conversation."""
    done = ""  # the conversation's text so far

    def rendered(history: list[Message], generation_prompt: bool) -> str:
        try:
            return render(tokenizer, history, add_generation_prompt=generation_prompt)
        except TemplateError as exc:  # e.g. roles that do not alternate
            raise DataFileError(
                f"{where}: the chat template refused this conversation: {exc}"
            ) from None

    def extend(text: str, trained: bool) -> None:
        nonlocal done
        if not text.startswith(done):
            raise DataFileError(
                f"{where}: the chat template is not prefix-stable here; cannot split the "
                "conversation into trained and context tokens"
            )
        piece = encode(tokenizer, text[len(done) :])
        ids.extend(piece)
        # Sampling stops at the end-of-turn token: what the template adds after it
        # (ChatML's newline) is context, as `episode.env_token_ids` makes it.
        cut = next((i + 1 for i, t in enumerate(piece) if t == eos), len(piece)) if trained else 0
        mask.extend([1] * cut + [0] * (len(piece) - cut))
        done = text

    eos = getattr(tokenizer, "eos_token_id", None)
    done = rendered(prompt, True)
    prompt_ids = encode(tokenizer, done)
    ids: list[int] = []
    mask: list[int] = []
    history = list(prompt)
    for message in rest:
        if message.role == "assistant" and history[-1].role == "assistant":
            extend(rendered(history, True), trained=False)  # the next turn's header: context
        history.append(message)
        # After an assistant turn the next text starts where that turn closed; after
        # context, the template's generation prompt opens the next assistant turn.
        following = message.role == "assistant"
        extend(rendered(history, not following), trained=following)
    if max_context is not None and len(prompt_ids) + len(ids) > max_context:
        raise DataFileError(
            f"{where}: {len(prompt_ids) + len(ids)} tokens, more than the model's context "
            f"of {max_context}; shorten or drop this row"
        )
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
