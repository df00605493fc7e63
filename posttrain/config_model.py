"""The config section of the model (`model:`): which model, the tiny model's size, its
threads and LoRA. `RunConfig` in `posttrain/config.py` holds it; import it from there.
"""

from __future__ import annotations

from pydantic import Field, model_validator

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

    @model_validator(mode="after")
    def _heads(self) -> ModelConfig:
        """The tiny model splits its width evenly over its heads, and rotary position
        embeddings rotate pairs of a head's dimensions: the head size must be even."""
        if self.name != "tiny":
            return self
        width, heads = self.hidden_size, self.num_heads
        if width % heads == 0 and (width // heads) % 2 == 0:
            return self
        fits = [h for h in range(1, width // 2 + 1) if width % h == 0 and (width // h) % 2 == 0]
        why = (
            f"does not divide model.hidden_size={width}"
            if width % heads
            else f"gives a head size of {width // heads} (hidden_size / num_heads), which "
            "rotary position embeddings need to be even"
        )
        if not fits:
            raise ValueError(
                f"model.hidden_size={width} is odd: no model.num_heads gives an even head "
                "size, which rotary position embeddings need; use an even hidden_size"
            )
        raise ValueError(
            f"model.num_heads={heads} {why}; with hidden_size={width} use num_heads in "
            f"{fits}, or change model.hidden_size"
        )
