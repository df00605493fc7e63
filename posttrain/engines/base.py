"""The engine contract: token-in, token-out generation with per-token logprobs.

An engine takes `GenerationRequest`s (prompt token ids + `SamplingParams`) and
returns, per request, `n` `Completion`s. Requests may carry an episode `key` and
`turn` so that scripted engines (replay) know what to play; real engines ignore them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch

from posttrain.types import FinishReason, Message

# Temperatures below this sample greedily (as vLLM does): dividing logits by a tinier one
# overflows float32 to inf, and the softmax to NaN.
GREEDY_BELOW = 1e-5


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. A `temperature` below `GREEDY_BELOW` (0 included) means greedy.
    `stop` strings end a sample where they appear; a single string is taken as one stop
    string (not as its characters), and an empty one is refused (it would end every
    sample after its first token)."""

    max_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    n: int = 1
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"SamplingParams.max_tokens must be >= 1, got {self.max_tokens}")
        if not self.temperature >= 0:  # NaN too
            raise ValueError(f"SamplingParams.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"SamplingParams.top_p must be in (0, 1], got {self.top_p}")
        if self.n < 1:
            raise ValueError(f"SamplingParams.n must be >= 1, got {self.n}")
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)
        for s in stop:
            if not isinstance(s, str) or not s:
                raise ValueError(
                    f"SamplingParams.stop must hold non-empty strings, got {s!r} in {self.stop!r}"
                )
        object.__setattr__(self, "stop", stop)  # frozen: the normalized value, hashable

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW

    @property
    def softmax_temperature(self) -> float:
        """What logits are divided by for the sampling softmax and the reported logprobs:
        `temperature`, or 1 when greedy."""
        return 1.0 if self.greedy else self.temperature


class EngineUnavailable(RuntimeError):
    """The engine cannot serve any request now (its server unreachable, timing out or
    failing after the engine's own retries, the key refused, the engine closed), as
    opposed to refusing one request. The episode loops fail a whole batch on it at once
    rather than retry its requests one by one, which would fail the same way, slower."""


@dataclass
class GenerationRequest:
    prompt_ids: list[int]
    params: SamplingParams
    key: str = ""  # the episode's task id, for scripted engines
    turn: int = 0  # the assistant turn index within the episode
    # The conversation so far, for engines that take messages rather than token ids
    # (an OpenAI-compatible server); token engines ignore it.
    messages: list[Message] | None = None
    # A stable id of the episode (unique per episode, not per task: n episodes share a
    # task id). Engines that reuse the KV cache of the conversation prefix between turns
    # (HFEngine) key it by this; a request without one never reuses. A request with
    # n > 1 samples keeps sample s under f"{episode}/{s}" (`prefix_cache.sample_episode`).
    episode: str | None = None


@dataclass
class Completion:
    """One sample. `logprobs[i]` is the log-probability of `token_ids[i]` under the
    temperature-scaled softmax (greedy uses temperature 1), before any top-p cut: the
    quantity the trainer's forward computes, not the renormalized nucleus."""

    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: FinishReason
    extra: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    def generate(self, requests: list[GenerationRequest]) -> list[list[Completion]]: ...

    def update_weights(self, state_dict: dict[str, torch.Tensor]) -> None: ...
