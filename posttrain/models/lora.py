"""LoRA adapters through `peft`: train a few low-rank matrices instead of every weight.

`apply_lora(model, settings, seed)` wraps a causal LM in a peft model whose only
trainable parameters are the adapters on the named linear layers; the wrapped model
is called, sampled from and trained exactly like the plain one (optimizers over
`model.parameters()` skip the frozen base, which never gets a gradient).
`merged_copy(model)` gives a plain transformers model with the adapters folded into
its weights, leaving the training model untouched; checkpoints save that, plus the
adapter itself (`save_adapter` / `load_adapter`) so training can continue.

    from posttrain.models.lora import apply_lora, merged_copy, trainable_parameter_count
    model = apply_lora(policy.model, config.model.lora, seed=0)
    trainable_parameter_count(model)   # adapters only
    plain = merged_copy(model)         # a LlamaForCausalLM, no peft inside

`settings` is anything with `r`, `alpha`, `dropout` and `target_modules` attributes
(normally `posttrain.config.LoraSettings`); `alpha=None` means `2 * r`. peft is
imported only when an adapter is made or loaded. `apply_lora` edits `model` in place
(its linear layers become LoRA layers): use the returned wrapper from then on.

In a run, one adapter trains through every stage over a base that never changes.
Each stage's reference is still the policy at the stage's start, base + adapter as
it then was: DPO takes its reference logprobs from the model before its first step,
and GRPO's KL reference is a deep copy of the wrapped model (so `disable_adapter()`,
the bare base, would be the wrong reference after SFT, and is not used).

A layer tied to the input embeddings (`lm_head` of the tiny model and SmolLM2) is
refused as a target. Not guaranteed: `target_modules` are matched as exact layer names (the last part of
a module path, e.g. `q_proj`), not peft's regular expressions. The merged model
matches the wrapped one to float rounding (about 1e-6), not bit for bit. Adapters
on embeddings or convolutions, quantized bases and several adapters at once are not
supported.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch
from transformers import PreTrainedModel

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

ADAPTER_NAME = "default"  # peft's name for the single adapter a model carries


class LoraTargetError(ValueError):
    """`target_modules` names layers the model does not have."""


class LoraOptions(Protocol):
    """The LoRA settings `apply_lora` reads (`posttrain.config.LoraSettings` has them)."""

    @property
    def r(self) -> int | None: ...

    @property
    def alpha(self) -> float | None: ...

    @property
    def dropout(self) -> float: ...

    @property
    def target_modules(self) -> Sequence[str]: ...


def linear_module_names(model: torch.nn.Module) -> list[str]:
    """The distinct short names (`q_proj`, `lm_head`, ...) of the model's linear layers."""
    return sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules() if _is_linear(m)})


def check_target_modules(model: torch.nn.Module, targets: Sequence[str]) -> None:
    """Raise LoraTargetError naming any target that is not a linear layer of `model`,
    or whose weight is tied to the input embeddings."""
    known = linear_module_names(model)
    unknown = [t for t in targets if t not in known]
    if unknown:
        raise LoraTargetError(
            f"no linear layer named {', '.join(map(repr, unknown))} in this model; "
            f"its linear layers are: {', '.join(known)}"
        )
    # A layer whose weight *is* the input embedding (tie_word_embeddings) cannot take a
    # mergeable adapter: merging edits the shared tensor, so the embeddings move too.
    get_embeddings = getattr(model, "get_input_embeddings", None)
    shared = getattr(get_embeddings(), "weight", None) if callable(get_embeddings) else None
    tied_names = {
        n.rsplit(".", 1)[-1]
        for n, m in model.named_modules()
        if _is_linear(m) and shared is not None and m.weight is shared
    }
    tied = [t for t in targets if t in tied_names]
    if tied:
        raise LoraTargetError(
            f"{', '.join(map(repr, tied))} shares its weight with the input embeddings "
            "(tie_word_embeddings), so its adapter cannot be merged into a plain checkpoint; "
            "leave it out of the targets"
        )


def apply_lora(model: PreTrainedModel, settings: LoraOptions, seed: int = 0) -> PreTrainedModel:
    """`model` wrapped with fresh adapters (B = 0, so it computes what `model` did).

    Only the adapters are trainable; the base weights are frozen in place (the
    wrapper shares them with `model`). The adapters' initialisation depends on
    `seed` alone and leaves the global torch RNG as it was.
    """
    from peft import LoraConfig, get_peft_model

    if settings.r is None or settings.r < 1:
        raise ValueError(f"LoRA rank r must be >= 1 (got {settings.r!r})")
    check_target_modules(model, settings.target_modules)
    config = LoraConfig(
        task_type="CAUSAL_LM",
        r=settings.r,
        lora_alpha=settings.alpha if settings.alpha is not None else 2 * settings.r,  # type: ignore[arg-type]
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
        bias="none",
    )
    with torch.random.fork_rng(devices=[]), _quiet():
        torch.manual_seed(seed)
        wrapped = get_peft_model(model, config, adapter_name=ADAPTER_NAME)
    return cast(PreTrainedModel, wrapped)


def is_lora(model: torch.nn.Module) -> bool:
    """True when `model` is a peft model (checked without importing peft)."""
    if "peft" not in sys.modules:
        return False  # peft never loaded: nothing can be a peft model
    from peft import PeftModel

    return isinstance(model, PeftModel)


def lora_settings(model: torch.nn.Module) -> dict[str, Any]:
    """The adapter's r, alpha, dropout and target modules, as plain JSON values."""
    config = cast(Any, model).peft_config[ADAPTER_NAME]
    return {
        "r": int(config.r),
        "alpha": float(config.lora_alpha),
        "dropout": float(config.lora_dropout),
        "target_modules": sorted(config.target_modules),
    }


def trainable_parameter_count(model: torch.nn.Module) -> int:
    """Number of parameters that an optimizer over `model.parameters()` would update."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def expected_lora_parameter_count(model: torch.nn.Module, settings: LoraOptions) -> int:
    """r × (in + out) summed over the targeted linear layers of the plain `model`."""
    r = settings.r or 0
    targets = set(settings.target_modules)
    return sum(
        r * (m.in_features + m.out_features)
        for n, m in model.named_modules()
        if _is_linear(m) and n.rsplit(".", 1)[-1] in targets
    )


def merged_copy(model: PreTrainedModel) -> PreTrainedModel:
    """A plain transformers model with the adapters merged in; `model` is not touched.

    A non-LoRA model comes back as itself (no copy)."""
    if not is_lora(model):
        return model
    clone = copy.deepcopy(model)  # merging edits weights in place; never touch the trainee
    with _quiet():
        plain = cast(Any, clone).merge_and_unload()
    plain.requires_grad_(True)  # a plain model, as loading it from disk would give
    return cast(PreTrainedModel, plain)


def save_adapter(model: PreTrainedModel, path: Path) -> None:
    """Write the adapter weights and `adapter_config.json` into the directory `path`."""
    with _quiet():
        cast(Any, model).save_pretrained(str(path))


def load_adapter(model: PreTrainedModel, path: Path, trainable: bool = True) -> PreTrainedModel:
    """The plain `model` wrapped with the adapter saved at `path` (by `save_adapter`)."""
    from peft import PeftModel

    with _quiet():
        wrapped = PeftModel.from_pretrained(
            model, str(path), adapter_name=ADAPTER_NAME, is_trainable=trainable
        )
    return cast(PreTrainedModel, wrapped)


def _is_linear(module: torch.nn.Module) -> bool:
    return isinstance(module, torch.nn.Linear)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """peft calls transformers APIs that warn of their own deprecation; not ours to fix."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        yield
