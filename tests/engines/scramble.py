"""Large random weights for engine tests: outputs then depend on the whole context."""

from __future__ import annotations

from typing import Any

import torch


def scramble(model: Any, seed: int = 1, scale: float = 0.5) -> Any:
    """Overwrite every weight but the norms' with N(0, scale²) draws (in place); `model`."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" not in name:
                param.copy_(torch.randn(param.shape, generator=generator) * scale)
    return model
