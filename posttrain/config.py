"""Typed run configuration: one pydantic model behind the YAML recipe, the CLI overrides
and the logged `config.yaml`.

`load_config(recipe_path, overrides)` reads an optional YAML recipe, applies
`a.b.c=value` overrides (values parsed as YAML scalars) and validates everything at
start-up. Any problem raises `ConfigError`, whose message names the field, the bad
value and what is accepted (or the nearest known key); the CLI turns it into exit
code 2. The defaults are the built-in recipe that `posttrain run` runs.

What a number field takes: an int or float as written, an int where a float belongs,
a float without a fractional part where an int belongs (3.0, not 2.5), and a string
spelling a number ("3"; PyYAML reads `1e-4` as a string, so this one is needed). A
boolean is never a number (`grpo.steps=true` names the key instead of becoming 1), in a
list or a mapping either. A boolean field takes true/false (and 0/1, yes/no, on/off).
`read_recipe` reads a recipe file's mapping alone (resume uses it to refuse an empty
config.yaml). Recipes and override values are read by `posttrain.yaml_reader`: a key
given twice, aliases expanding past 10,000 values and nesting too deep are refused, and
a syntax error is one line with its line and column. A value shown in an error is cut
short (`_shown`), however large or alias-shared it is.
"""

from __future__ import annotations

import difflib
import math
import reprlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from posttrain.config_base import BOOL_AS_NUMBER, ConfigError, _Strict, check_levels
from posttrain.config_model import LORA_TARGETS, LoraSettings, ModelConfig
from posttrain.config_rollout import ContextConfig, RolloutConfig
from posttrain.config_stages import DPOConfig, GRPOConfig, SFTConfig
from posttrain.yaml_reader import YAMLInputError, YAMLRefusedError, YAMLTooDeepError, load_yaml

__all__ = [  # with the classes below
    "LORA_TARGETS",
    "ConfigError",
    "ContextConfig",
    "DPOConfig",
    "GRPOConfig",
    "LoraSettings",
    "ModelConfig",
    "RolloutConfig",
    "SFTConfig",
]


class EvalConfig(_Strict):
    tasks_per_domain: int = Field(100, ge=1, description="held-out tasks per domain")
    seed_offset: int = Field(10**9, ge=0, description="held-out seeds start here")
    difficulties: list[int] = Field(
        default_factory=lambda: list(range(1, 11)),
        description="held-out tasks cycle through these (e.g. [10]: the longest only)",
    )
    every_steps: int = Field(
        50, ge=0, description="during GRPO: evaluate the fixed monitor set every K steps (0 = off)"
    )
    monitor_per_domain: int = Field(
        10, ge=1, description="monitor set: the first N held-out tasks of each domain"
    )

    @model_validator(mode="after")
    def _levels(self) -> EvalConfig:
        check_levels(self.difficulties, "eval.difficulties")
        return self


class ControlConfig(_Strict):
    enabled: bool = Field(True, description="SFT further for DPO+GRPO's training seconds")


class AlertsConfig(_Strict):
    """Thresholds of the training alerts (`posttrain.store.alerts`): warnings and alerts.jsonl."""

    enabled: bool = Field(True, description="check each GRPO step's metrics")
    entropy_min: float = Field(0.02, ge=0, description="entropy collapse: nats/token below")
    length_ratio: float = Field(
        2.0, gt=1, description="length jump: completion tokens above this × the recent mean"
    )
    reward_rise: float = Field(
        0.35, gt=0, description="reward jump: mean reward above the recent mean by this"
    )
    verifier_error_rate: float = Field(0.02, ge=0, le=1, description="verifiers that raised")
    sandbox_error_rate: float = Field(
        0.05, ge=0, le=1, description="sessions/sandboxes that failed"
    )
    logprob_mismatch: float = Field(
        0.5, gt=0, description="mean |train − rollout| logprob per sampled token"
    )
    window: int = Field(10, ge=1, description="steps of history the jump rules compare against")


class LoggingConfig(_Strict):
    tensorboard: bool = Field(True, description="mirror metrics to TensorBoard (tb/)")
    wandb: bool = Field(
        False, description="mirror metrics to Weights & Biases in offline mode (needs wandb)"
    )


class DatasetConfig(_Strict):
    """A domain built from the user's own JSONL/Parquet file (`posttrain.domains.dataset`)."""

    id: str = Field(description="versioned domain id, e.g. 'mine/capitals-v1'")
    path: str = Field(description="JSONL or Parquet file of {prompt|messages, answer} rows")
    verifier: str | None = Field(
        None, description="a named verifier: exact, numeric, math, set_f1, fuzzy or json"
    )
    reward: list[str] = Field(
        default_factory=list, description="reward functions as 'pkg.module:function'"
    )
    reward_weights: list[float] | None = Field(
        None, description="weights of the reward functions (default: equal)"
    )
    pass_threshold: float = Field(1.0, gt=0, le=1, description="reward at which an answer passes")
    heldout_fraction: float = Field(
        0.1, ge=0, lt=1, description="distinct prompts kept for evaluation only"
    )

    @field_validator("path")
    @classmethod
    def _not_a_directory(cls, path: str) -> str:
        if Path(path).is_dir():  # the loader would say it "does not exist"
            raise ValueError(f"{path!r} is a directory, not a JSONL or Parquet file")
        return path

    @model_validator(mode="after")
    def _one_scorer(self) -> DatasetConfig:
        if (self.verifier is None) == (not self.reward):
            raise ValueError(f"dataset {self.id!r}: give exactly one of 'verifier' and 'reward'")
        return self


class TrainConfig(_Strict):
    """Where and how the trainers run (`posttrain.train.distributed`, docs/distributed.md)."""

    device: Literal["cpu", "cuda", "auto"] = Field(
        "cpu", description="cpu, cuda (one GPU per rank), or auto (cuda when available)"
    )
    precision: Literal["fp32", "bf16"] = Field(
        "fp32", description="bf16: bf16 compute with fp32 weights and optimizer state"
    )
    grad_checkpointing: bool = Field(False, description="recompute activations in backward")
    compile: bool = Field(False, description="torch.compile the model (needs a C++ compiler)")
    strategy: Literal["none", "ddp", "fsdp"] = Field(
        "none", description="data parallelism across torchrun ranks: DDP or FSDP2 sharding"
    )
    timeout_s: float = Field(
        1800.0,
        gt=0,
        description="how long a rank waits in a collective for the others (a hung peer "
        "fails the job after it); longer than any one rank's work between collectives",
    )


def check_machine(train: TrainConfig) -> None:
    """What only the machine can refuse, checked when a run starts (a recipe for GPUs
    still validates on a laptop): CUDA asked for and absent, bf16 on a CPU without
    native bf16 instructions (it would be slower than fp32). ConfigError saying why."""
    if train.precision != "bf16" and train.device != "cuda":
        return
    import torch  # only here: config stays importable without loading torch

    cuda = torch.cuda.is_available()
    if train.device == "cuda" and not cuda:
        raise ConfigError("train.device='cuda' but torch sees no CUDA device here")
    fast_bf16 = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    if train.precision == "bf16" and not (cuda and train.device != "cpu") and not fast_bf16:
        raise ConfigError(
            "train.precision='bf16' on this CPU would be slower than fp32: it has no native "
            "bf16 instructions (AVX512-BF16 or AMX; torch reports "
            f"{torch.backends.cpu.get_cpu_capability()}); use fp32, or a GPU"
        )


class RunConfig(_Strict):
    name: str | None = Field(None, description="run directory name (default: a timestamp)")
    resume: str | None = Field(
        None, description="a run directory to continue (its config.yaml is used; see docs)"
    )
    out_dir: str = Field("runs", description="where run directories go")
    seed: int = Field(
        0,
        ge=0,
        lt=2**31,
        description="seeds the model, data order and sampling (0 to 2**31 - 1: every "
        "consumer, torch and per-rank offsets included, takes it)",
    )
    domains: list[str] = Field(
        default_factory=lambda: [
            "arith/addition-v1",
            "text/reverse-v1",
            "list/sort-v1",
            "tools/calculator-v1",
        ],
        description="domain ids of the mix (see `posttrain domains list`)",
    )
    mixture: dict[str, float] = Field(
        default_factory=dict,
        description="DPO/GRPO task weights by domain id, family or axis=value (default 1 each)",
    )
    datasets: list[DatasetConfig] = Field(
        default_factory=list, description="domains from your own files; name their ids in domains"
    )
    max_new_tokens: int = Field(80, ge=1, description="token budget per assistant turn")
    model: ModelConfig = Field(default_factory=lambda: ModelConfig())
    sft: SFTConfig = Field(default_factory=lambda: SFTConfig())
    dpo: DPOConfig = Field(default_factory=lambda: DPOConfig())
    grpo: GRPOConfig = Field(default_factory=lambda: GRPOConfig())
    eval: EvalConfig = Field(default_factory=lambda: EvalConfig())
    context: ContextConfig = Field(default_factory=lambda: ContextConfig())
    rollout: RolloutConfig = Field(default_factory=lambda: RolloutConfig())
    control: ControlConfig = Field(default_factory=lambda: ControlConfig())
    alerts: AlertsConfig = Field(default_factory=lambda: AlertsConfig())
    logging: LoggingConfig = Field(default_factory=lambda: LoggingConfig())
    train: TrainConfig = Field(default_factory=lambda: TrainConfig())

    @model_validator(mode="after")
    def _combinations(self) -> RunConfig:
        g = self.grpo
        if g.batch_size % g.group_size:
            raise ValueError(
                f"grpo.batch_size={g.batch_size} is not divisible by "
                f"grpo.group_size={g.group_size}; pick a multiple of {g.group_size}"
            )
        if not self.domains:
            raise ValueError("domains must name at least one domain")
        if twice := _repeated(self.domains):  # its held-out tasks would count twice
            raise ValueError(f"domains names {twice!r} twice; give each domain once")
        if twice := _repeated([d.id for d in self.datasets]):
            raise ValueError(f"datasets: two datasets have the id {twice!r}; give each its own")
        stray = sorted(set(self.sft.domain_weights) - set(self.domains))
        if stray:
            raise ValueError(f"sft.domain_weights names domains not in the mix: {stray}")
        for name, weight in self.sft.domain_weights.items():
            if not 0 <= weight < math.inf:
                raise ValueError(
                    f"sft.domain_weights: the weight of {name!r} must be a finite number "
                    f">= 0, got {weight}"
                )
        if not any(self.sft.domain_weights.get(d, 1.0) > 0 for d in self.domains):
            raise ValueError(
                f"sft.domain_weights gives every domain of the mix weight 0 "
                f"({self.sft.domain_weights}); give at least one a weight > 0"
            )
        for key, weight in self.mixture.items():
            if not 0 <= weight < math.inf:
                raise ValueError(
                    f"mixture: the weight of {key!r} must be a finite number >= 0, got {weight}"
                )
        return self


def _repeated(items: list[str]) -> str | None:
    """The first item that `items` holds twice, or None."""
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


# Every stage with a tiny budget: `posttrain run --smoke`.
SMOKE_OVERRIDES = [
    "sft.num_examples=256",
    "sft.max_steps=30",
    "sft.eval_every=10",
    "sft.val_examples=32",
    "dpo.num_tasks=16",
    "dpo.val_tasks=8",
    "dpo.batch_size=8",
    "grpo.steps=3",
    "grpo.batch_size=32",
    "grpo.minibatch_size=32",
    "eval.tasks_per_domain=10",
    "eval.every_steps=2",
    "eval.monitor_per_domain=3",
]


def load_config(recipe: str | Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    """Read the recipe (if any), apply overrides, validate. Raises ConfigError."""
    data = read_recipe(recipe) if recipe is not None else {}
    for item in overrides or []:
        _apply_override(data, item)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(exc)) from None


_TOO_DEEP = (
    "nests lists or mappings too deeply to parse (hundreds of levels); no setting needs that"
)


def read_recipe(recipe: str | Path) -> dict[str, Any]:
    """The settings a YAML recipe file holds, unvalidated ({} for an empty file).
    ConfigError naming the file when it is missing, a directory, not UTF-8, not YAML,
    nested too deeply to parse, or not a mapping."""
    path = Path(recipe)
    if path.is_dir():
        raise ConfigError(f"recipe file {str(path)!r} is a directory, not a recipe file")
    if not path.exists():  # a pipe, as from `posttrain run <(...)`, is read like a file
        looks_like_key = path.suffix not in (".yaml", ".yml") and "/" not in str(recipe)
        hint = " (an override is written key.path=value)" if looks_like_key else ""
        raise ConfigError(f"recipe file {str(path)!r} does not exist{hint}")
    try:
        with path.open(encoding="utf-8") as f:
            loaded = load_yaml(f)
    except YAMLTooDeepError:
        raise ConfigError(f"recipe file {str(path)!r} {_TOO_DEEP}") from None
    except YAMLRefusedError as exc:  # a duplicate key, an alias bomb: see yaml_reader
        raise ConfigError(f"recipe file {str(path)!r}: {exc}") from None
    except YAMLInputError as exc:
        raise ConfigError(f"recipe file {str(path)!r} is not valid YAML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"recipe file {str(path)!r} is not UTF-8 text: {exc}") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ConfigError(f"recipe file {str(path)!r} must hold a mapping of settings")
    return loaded or {}


def _apply_override(data: dict[str, Any], item: str) -> None:
    if "=" not in item:
        raise ConfigError(f"override {item!r} must look like key.path=value")
    key, raw = item.split("=", 1)
    parts = key.strip().split(".")
    model: type[BaseModel] | None = RunConfig
    node = data
    for i, part in enumerate(parts):
        if model is None or part not in model.model_fields:
            known = list(model.model_fields) if model is not None else []
            where = ".".join(parts[:i]) or "the top level"
            raise ConfigError(f"unknown key {key!r}: no {part!r} in {where}{_nearest(part, known)}")
        annotation = model.model_fields[part].annotation
        if i == len(parts) - 1:
            if annotation in (str, str | None) and raw.strip() not in ("null", "~"):
                node[part] = raw  # a name like 2024 stays the string "2024"
                continue
            try:
                node[part] = load_yaml(raw) if raw.strip() else raw
            except YAMLTooDeepError:
                raise ConfigError(f"override {key!r}: the value {_TOO_DEEP}") from None
            except YAMLRefusedError as exc:
                raise ConfigError(f"override {key!r}: {exc}") from None
            except YAMLInputError:  # not YAML at all: the text itself
                node[part] = raw
        else:
            if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
                raise ConfigError(
                    f"unknown key {key!r}: {'.'.join(parts[: i + 1])} is not a section"
                )
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r}: {'.'.join(parts[: i + 1])} is not a section")
            model = annotation


def _nearest(word: str, options: list[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(options)}"


def _explain(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == BOOL_AS_NUMBER:
            lines.append(f"{loc}{err.get('ctx', {}).get('at', '')}: {err['msg']}")
        elif err["type"] == "extra_forbidden":
            parent = _section(err["loc"][:-1])
            known = list(parent.model_fields) if parent is not None else []
            lines.append(f"unknown key {loc!r}{_nearest(str(err['loc'][-1]), known)}")
        elif err["type"] == "list_type" and loc:
            lines.append(
                f"{loc}: expected a list, got {_shown(err.get('input'))}; write '{loc}=[a,b]' "
                "(quoted in a shell)"
            )
        elif err["type"] == "model_type" and (section := _section(err["loc"])) is not None:
            first = next(iter(section.model_fields))
            lines.append(
                f"{loc} is a section of settings, not a value (got {_shown(err.get('input'))}); "
                f"set its fields, e.g. {loc}.{first}=..."
            )
        elif loc and not (err["type"] == "value_error" and _section(err["loc"])):
            message = str(err["msg"]).removeprefix("Value error, ")
            lines.append(f"{loc}: {message} (got {_shown(err.get('input'))})")
        else:
            lines.append(str(err["msg"]).removeprefix("Value error, "))
    return "; ".join(lines)


_SHOWN = reprlib.Repr()  # a few items of a few levels: cheap for any value
_SHOWN.maxlevel = 3
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxset = _SHOWN.maxdict = 4
_SHOWN.maxstring = _SHOWN.maxother = _SHOWN.maxlong = 60


def _shown(value: Any, limit: int = 100) -> str:
    """`value`'s repr, cut to `limit` characters: a message stays one readable line.
    Only the first items of the first levels are shown (reprlib), so a huge value, or one
    a YAML alias shares across a thousand places, costs no more than a small one."""
    try:
        text = _SHOWN.repr(value)
    except (RecursionError, ValueError):  # ValueError: an int over Python's 4300 digits
        text = f"<a {type(value).__name__} too large to show>"
    return text if len(text) <= limit else f"{text[: limit - 4]} ..."


def _section(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] = RunConfig
    for part in loc:
        field = model.model_fields.get(str(part))
        if field is None or not (
            isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        ):
            return None
        model = field.annotation
    return model


def config_to_yaml(config: RunConfig) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
