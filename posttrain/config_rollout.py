"""The config sections of rollouts: how GRPO's episodes run (`rollout:`) and what
happens to prompts longer than the model's window (`context:`). `RunConfig` in
`posttrain/config.py` holds them; import them from there.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from posttrain.config_base import _Strict


class RolloutConfig(_Strict):
    """How GRPO's rollouts run (`posttrain.rollout.scheduler`)."""

    backend: Literal["local", "ray"] = Field(
        "local",
        description="where GRPO's episodes run: in this process, or on Ray actors "
        "(rollout.ray_workers, rollout.ray_address; pip install posttrain[ray])",
    )
    ray_workers: int = Field(2, ge=1, description="ray: rollout worker actors")
    ray_address: str | None = Field(
        None, description="ray: a cluster's address (None: start a local Ray)"
    )
    mode: Literal["lockstep", "scheduled"] = Field(
        "lockstep",
        description="lockstep: every episode of a step in one batched loop; scheduled: "
        "concurrent engine / environment / verifier stages",
    )
    over_provision: int = Field(
        0, ge=0, description="scheduled: extra groups in flight beyond a step's; carried over"
    )
    max_staleness: int = Field(
        0,
        ge=0,
        description="scheduled: policy versions a trained-on group may lag (0 = synchronous; "
        "≥ 1 overlaps generation for the next step with this step's update)",
    )
    engine_slots: int = Field(128, ge=1, description="scheduled: sequences per engine call")
    env_workers: int = Field(4, ge=1, description="scheduled: concurrent environment steps")
    verify_workers: int = Field(2, ge=1, description="scheduled: concurrent verifications")
    episode_timeout_s: float | None = Field(
        None, gt=0, description="scheduled: an episode running longer is a recorded failure"
    )
    tool_timeout_s: float = Field(
        10.0, gt=0, description="a tool call running longer is abandoned (an error observation)"
    )
    tool_retries: int = Field(
        2,
        ge=0,
        description="retries of a tool call after infrastructure errors (sandbox, connection)",
    )

    @model_validator(mode="after")
    def _staleness(self) -> RolloutConfig:
        if self.over_provision and not self.max_staleness:
            raise ValueError(
                f"rollout.over_provision={self.over_provision} carries groups into later steps; "
                "it needs rollout.max_staleness ≥ 1"
            )
        if (
            self.mode == "lockstep"
            and self.backend == "local"
            and (self.over_provision or self.max_staleness)
        ):
            raise ValueError(
                "rollout.over_provision and max_staleness need rollout.mode=scheduled "
                "(or rollout.backend=ray)"
            )
        return self


class ContextConfig(_Strict):
    """Prompts longer than the model's window (`posttrain.rollout.context_strategy`)."""

    over_long: Literal["error", "retrieve", "truncate_middle"] = Field(
        "error", description="error (a recorded failure naming the lengths), retrieve, or cut"
    )
    retriever: Literal["bm25", "dense", "hybrid"] = Field(
        "bm25", description="retrieve: how chunks are ranked (dense needs posttrain[dense])"
    )
    order: Literal["edges", "relevance", "document"] = Field(
        "edges", description="retrieve: most relevant at both ends, best first, or as written"
    )
    chunk_tokens: int = Field(128, ge=8, description="retrieve: tokens per chunk")
