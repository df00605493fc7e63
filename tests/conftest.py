"""Shared fixtures: the built-in byte-level tokenizer and a fresh, very small tiny model.

Heavy imports happen inside the fixtures so tests that need no model stay quick.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    """The built-in tokenizer (never mutated by the tests, so one per session)."""
    import torch

    from posttrain.models.tiny import build_tokenizer

    torch.set_num_threads(1)
    return build_tokenizer()


@pytest.fixture
def tiny_model(tokenizer: Any) -> Any:
    """A freshly initialised tiny Llama (seed 0), small enough for sub-second training."""
    from posttrain.models.tiny import TinyModelSpec, build_tiny_model

    spec = TinyModelSpec(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
    return build_tiny_model(tokenizer, seed=0, spec=spec)


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    """The `ray` module, connected to one local Ray (2 CPUs, no dashboard, token auth
    off) shared by the whole test session and shut down at its end. Starting Ray costs
    seconds, so every test that needs it shares this one; they skip without Ray."""
    ray = pytest.importorskip("ray")
    from posttrain.rollout.backends.ray_backend import ensure_ray

    started = ensure_ray(num_cpus=2)
    yield ray
    if started:
        ray.shutdown()
