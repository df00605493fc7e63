"""The config section of the model (`model:`): which model, the tiny model's size, its
threads and LoRA. `RunConfig` in `posttrain/config.py` holds it; import it from there.
"""

from __future__ import annotations

from pydantic import Field

from posttrain.config_base import _Strict

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class LoraSettings(_Strict):
    r: int | None = Field(
        None, ge=1, description="LoRA rank; null trains every weight (full fine-tuning)"
    )
    alpha: float | None = Field(None, gt=0, description="LoRA scale numerator (default: 2*r)")
    dropout: float = Field(0.0, ge=0, lt=1, description="dropout on the LoRA input")
    target_modules: list[str] = Field(
        default_factory=lambda: list(LORA_TARGETS),
        min_length=1,
        description="names of the linear layers that get adapters (checked against the model)",
    )


class ModelConfig(_Strict):
    name: str = Field("tiny", description="'tiny', 'smollm2-135m', or a local HF model directory")
    hidden_size: int = Field(128, ge=16, description="tiny model: width")
    num_layers: int = Field(4, ge=1, description="tiny model: transformer blocks")
    num_heads: int = Field(4, ge=1, description="tiny model: attention heads")
    intermediate_size: int = Field(384, ge=16, description="tiny model: MLP width")
    max_positions: int | None = Field(
        None,
        ge=16,
        description="context window in tokens (default: tiny 512, else the model's own); "
        "a larger one extends a RoPE model's window as is",
    )
    threads: int = Field(1, ge=1, description="torch intra-op threads (1 is fastest for tiny)")
    lora: LoraSettings = Field(
        default_factory=lambda: LoraSettings(), description="train LoRA adapters only"
    )
