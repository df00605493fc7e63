"""Fixtures the trainer tests share."""

from __future__ import annotations

from typing import Any

import pytest
import torch


@pytest.fixture
def scrambled(tiny_model: Any) -> Any:
    """The tiny model with random non-norm weights (scale 0.3), in training mode: its
    outputs depend on the whole context, so a wrong mask or position shows up."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, param in tiny_model.named_parameters():
            if "norm" not in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.3)
    return tiny_model.train()
