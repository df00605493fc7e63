"""Typed values that cross room boundaries: messages, tasks, references, verdicts, rollouts.

Every type here is a plain dataclass that round-trips through JSON
(`to_json()` / `from_json()`), so traces, checkpoints and worker processes share
one vocabulary. This module imports nothing else from posttrain.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal, TypeVar

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "length", "error"]

T = TypeVar("T", bound="JsonMixin")


_ATOMS = (int, float, str, bool, type(None))


def _plain(value: Any) -> Any:
    """What `dataclasses.asdict` makes of `value`: dataclasses as dicts, lists, tuples
    and dicts rebuilt, other leaves deep-copied; atoms and lists of atoms fast. (Types
    here hold no list, tuple or dict subclasses, which asdict would rebuild by type.)"""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if kind is list or kind is tuple:
        if all(type(v) in _ATOMS for v in value):
            return kind(value)
        return kind(_plain(v) for v in value)
    if kind is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    return copy.deepcopy(value)  # no dataclass inside: asdict would copy it the same way


def json_text(value: Any, **kw: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **kw)`, unless that text holds a lone
    surrogate (`"\\ud800"`: model text can), which UTF-8 cannot encode, so files, SQLite
    and terminals refuse it: then the ASCII-only JSON, which `json.loads` reads back
    exactly."""
    text = json.dumps(value, ensure_ascii=False, **kw)
    return text if utf8_encodable(text) else json.dumps(value, ensure_ascii=True, **kw)


def utf8_encodable(text: str) -> bool:
    """Whether `text` encodes to UTF-8, i.e. holds no lone surrogate."""
    if text.isascii():  # the common case, without a copy
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as `\\udXXX`, so that it encodes to UTF-8."""
    return text if utf8_encodable(text) else text.encode("utf-8", "backslashreplace").decode()


class JsonMixin:
    """`to_dict`/`from_dict`/`to_json`/`from_json` for the dataclasses below."""

    def to_dict(self) -> dict[str, Any]:
        """`dataclasses.asdict`'s result, built without its per-element deep copy: a
        list of plain values (token ids, logprobs) is copied in one step, which makes
        recording a long rollout several times faster."""
        return _plain(self)  # type: ignore[no-any-return]

    def to_json(self) -> str:
        """JSON text that encodes to UTF-8 (see `json_text`)."""
        return json_text(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown field(s) {sorted(unknown)}")
        return cls(**_revive(cls, data))

    @classmethod
    def from_json(cls: type[T], text: str) -> T:
        return cls.from_dict(json.loads(text))


@dataclass
class ToolCall(JsonMixin):
    """One call the model asked for: `name` of the tool and its JSON `arguments`."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass
class Message(JsonMixin):
    """One chat message. Assistant messages keep their raw text in `content`
    (tool-call markup included) and the parsed calls in `tool_calls`."""

    role: Role
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    name: str | None = None  # the tool's name, for role == "tool"


@dataclass
class Observation(JsonMixin):
    """What a tool call returned to the model. `error` marks a failed call
    (bad arguments, unknown tool, timeout); the episode goes on either way."""

    content: str
    error: bool = False


@dataclass
class Task(JsonMixin):
    """One verifiable problem. Same (domain, seed, difficulty) gives the same task
    in any process. `answer` is hidden from the model."""

    id: str
    domain: str
    prompt: list[Message]
    answer: Any
    difficulty: int
    seed: int
    files: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Reference(JsonMixin):
    """A known-good solution: every assistant turn (text and tool calls) up to and
    including the final answer. For single-turn domains `turns` has one message."""

    turns: list[Message]

    @property
    def final(self) -> str:
        return self.turns[-1].content if self.turns else ""

    @classmethod
    def single(cls, text: str) -> Reference:
        return cls(turns=[Message("assistant", text)])


@dataclass
class Verdict(JsonMixin):
    """The verifier's judgement. `reward` in [0, 1]; `error` is set only when the
    verifier itself failed, never for a wrong answer."""

    reward: float
    passed: bool
    reason: str
    components: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.reward <= 1.0:
            raise ValueError(f"Verdict.reward must be in [0, 1], got {self.reward}")


@dataclass
class Turn(JsonMixin):
    """One assistant step of an episode: what was sampled and what came back."""

    text: str
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    tool_calls: list[ToolCall] = field(default_factory=list)
    observations: list[Message] = field(default_factory=list)
    env_token_ids: list[int] = field(default_factory=list)  # appended after this turn


@dataclass
class Rollout(JsonMixin):
    """A finished episode, token-exact. `completion_ids` holds every token after the
    prompt: sampled ones (`loss_mask` 1, with their sampling `logprobs`) and
    environment ones (`loss_mask` 0, logprob 0). A crashed episode is a Rollout
    with `error` set and reward 0, never an exception.

    `judged` is False when the episode broke before its verdict for a reason that is
    not the policy's (a session, engine, environment or worker failure, a timeout, a
    prompt that could not start): its reward 0 judges nothing. A full context is the
    policy's doing and stays judged. `scored` adds that the verifier did not raise:
    trainers learn from scored rollouts only."""

    id: str
    task_id: str
    domain: str
    difficulty: int
    prompt_ids: list[int]
    completion_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    messages: list[Message]
    turns: list[Turn]
    verdict: Verdict
    policy_version: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    tool_stats: dict[str, float] = field(default_factory=dict)  # tools/calls, tools/timeouts, ...
    judged: bool = True

    @property
    def scored(self) -> bool:
        """Whether `reward` is a verdict on the policy's output (see the class)."""
        return self.judged and self.verdict.error is None

    @property
    def reward(self) -> float:
        return self.verdict.reward

    @property
    def final_text(self) -> str:
        return self.turns[-1].text if self.turns else ""


# ---- JSON revival of nested dataclasses -------------------------------------------------

_NESTED: dict[str, dict[str, tuple[type, bool]]] = {}


def _revive(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """Turn nested dicts back into dataclasses, using the table below."""
    spec = _NESTED.get(cls.__name__, {})
    out = dict(data)
    for name, (inner, is_list) in spec.items():
        if name not in out or out[name] is None:
            continue
        value = out[name]
        if is_list:
            out[name] = [v if isinstance(v, inner) else inner.from_dict(v) for v in value]  # type: ignore[attr-defined]
        elif not isinstance(value, inner):
            out[name] = inner.from_dict(value)  # type: ignore[attr-defined]
    return out


_NESTED.update(
    {
        "Message": {"tool_calls": (ToolCall, True)},
        "Task": {"prompt": (Message, True)},
        "Reference": {"turns": (Message, True)},
        "Turn": {"tool_calls": (ToolCall, True), "observations": (Message, True)},
        "Rollout": {
            "messages": (Message, True),
            "turns": (Turn, True),
            "verdict": (Verdict, False),
        },
    }
)
