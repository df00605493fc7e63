"""Inference engines: `hf` (transformers, default) and `replay` (scripted references)."""

from posttrain.engines.base import (
    Completion,
    Engine,
    EngineUnavailable,
    GenerationRequest,
    SamplingParams,
)
from posttrain.engines.hf import HFEngine, sampling_for_eval
from posttrain.engines.replay import ReplayEngine

__all__ = [
    "Completion",
    "Engine",
    "EngineUnavailable",
    "GenerationRequest",
    "HFEngine",
    "ReplayEngine",
    "SamplingParams",
    "sampling_for_eval",
]
