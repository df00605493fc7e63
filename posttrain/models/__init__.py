"""Models: the built-in tiny policy and loading of SmolLM2 or any local HF model directory."""

from posttrain.models.loading import (
    BUILTIN_MODELS,
    ModelNotFoundError,
    Policy,
    check_model_name,
    load_model_dir,
    load_policy,
    smollm2_tokenizer,
)
from posttrain.models.tiny import TinyModelSpec, build_tiny_model, build_tokenizer

__all__ = [
    "BUILTIN_MODELS",
    "ModelNotFoundError",
    "Policy",
    "TinyModelSpec",
    "build_tiny_model",
    "build_tokenizer",
    "check_model_name",
    "load_model_dir",
    "load_policy",
    "smollm2_tokenizer",
]
