"""The domain contract: `Domain`, `Session` and the matrix cell (`Axes`) each domain declares.

A domain generates tasks from (seed, difficulty), ships a reference solution and a
verifier. Single-turn domains implement `generate`, `reference` and `verify`;
multi-turn or stateful ones also `open` a `Session` that serves tool calls and
scripted user turns for one episode. Generation must be deterministic across
processes: derive randomness only from `task_rng(domain_id, seed, difficulty)`.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict

Modality = Literal["text", "table", "document", "code", "geometry", "conversation"]
ToolDependency = Literal["none", "python", "shell", "simulated_api", "retrieval", "cad_kernel"]
Rounds = Literal["single", "multi"]
VerificationMethod = Literal[
    "exact",
    "numeric",
    "math",
    "unit_tests",
    "fields_citations",
    "set_match",
    "structure",
    "validity",
    "geometry",
    "final_state",
]


@dataclass(frozen=True)
class Axes:
    """The domain's cell in the matrix."""

    modality: Modality
    tools: ToolDependency
    rounds: Rounds
    verification: VerificationMethod


@runtime_checkable
class Session(Protocol):
    """One episode's environment for a multi-turn domain."""

    tools: list[dict[str, Any]]  # OpenAI function-format schemas

    def call(self, tool_call: ToolCall) -> Observation: ...

    def user_turn(self, assistant_message: Message) -> Message | None:
        """The scripted user's reply after an assistant message without tool calls,
        or None when the episode is over."""
        ...

    def snapshot(self) -> Any: ...

    def restore(self, snapshot: Any) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class Domain(Protocol):
    """A family variant of verifiable tasks. `id` is versioned: `family/name-vN`."""

    id: str
    axes: Axes
    max_turns: int

    def generate(self, seed: int, difficulty: int) -> Task: ...

    def reference(self, task: Task) -> Reference: ...

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict: ...


def task_rng(domain_id: str, seed: int, difficulty: int) -> random.Random:
    """A `random.Random` fixed by (domain, seed, difficulty), independent of PYTHONHASHSEED."""
    digest = hashlib.sha256(f"{domain_id}|{seed}|{difficulty}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def task_id(domain_id: str, seed: int, difficulty: int) -> str:
    """A stable task id: `domain@seed.dN`."""
    return f"{domain_id}@{seed}.d{difficulty}"


def prompt_key(prompt: Sequence[Message]) -> str:
    """A prompt as the held-out sets compare it and dataset domains split it: each
    message's role and content, whitespace runs collapsed to one space and the ends
    stripped. Whitespace is the usual incidental
    difference between copies (a trailing newline, CRLF, re-wrapped lines); letter case and
    Unicode forms are kept, since folding them would tie the key to the Python version's
    Unicode tables, and the split must be the same on every machine.

    >>> prompt_key([Message("user", " What is\\r\\n2+2? ")])
    '[["user", "What is 2+2?"]]'
    """
    return json.dumps([[m.role, " ".join(m.content.split())] for m in prompt])


def check_difficulty(difficulty: int) -> int:
    if not isinstance(difficulty, int) or not 1 <= difficulty <= 10:
        raise ValueError(f"difficulty must be an integer in 1..10, got {difficulty!r}")
    return difficulty
