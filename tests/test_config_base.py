"""The strict base of every config section: a boolean is never a number, while the
coercions a YAML recipe relies on (1 for a float, "1e-4" for a float, 3.0 for an int)
still work."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel, ValidationError

from posttrain.config import ConfigError, GRPOConfig, RunConfig, load_config


def _number_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted keys of every int or float field (optional ones too), sections included."""
    keys = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys += _number_keys(annotation, f"{prefix}{name}.")
            continue
        options: Any = (
            get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else ()
        )
        if annotation in (int, float) or int in options or float in options:
            keys.append(f"{prefix}{name}")
    return keys


NUMBER_KEYS = _number_keys(RunConfig)


def test_every_number_field_is_found() -> None:
    """The sweep below covers the optional numbers and the nested sections too."""
    assert {"seed", "grpo.steps", "grpo.lr", "grpo.tis_cap", "model.lora.r"} <= set(NUMBER_KEYS)
    assert len(NUMBER_KEYS) > 50


@pytest.mark.parametrize("key", NUMBER_KEYS)
def test_a_boolean_for_any_number_field_is_refused_naming_the_key(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, [f"{key}=true"])
    assert str(info.value).startswith(f"{key}: expected a")
    assert "got a boolean (true)" in str(info.value)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("grpo.steps=false", "grpo.steps: expected an integer, got a boolean (false)"),
        ("grpo.lr=true", "grpo.lr: expected a number, got a boolean (true)"),
        ("eval.difficulties=[3, true]", "eval.difficulties.1: expected an integer, got a boolean (true)"),
        ("mixture={list: true}", "mixture.list: expected a number, got a boolean (true)"),
        ("sft.domain_weights={list/sort-v1: false}",
         "sft.domain_weights.list/sort-v1: expected a number, got a boolean (false)"),
        ("datasets=[{id: a/b-v1, path: x, reward: [m:f], reward_weights: [1, true]}]",
         "datasets.0.reward_weights.1: expected a number, got a boolean (true)"),
    ],
)  # fmt: skip
def test_a_boolean_inside_a_list_or_mapping_of_numbers_is_named_where(
    override: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, [override])
    assert str(info.value) == message


def test_a_boolean_in_a_recipe_file_is_refused_naming_the_key(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("grpo:\n  steps: yes\n")  # YAML 1.1: yes is a boolean
    with pytest.raises(ConfigError, match=r"^grpo\.steps: expected an integer, got a boolean"):
        load_config(recipe)


def test_assigning_a_boolean_to_a_number_field_is_refused() -> None:
    config = GRPOConfig()
    with pytest.raises(ValidationError, match="expected an integer, got a boolean"):
        config.steps = True
    with pytest.raises(ValidationError, match="expected a number, got a boolean"):
        GRPOConfig(lr=False)


def test_boolean_fields_still_take_booleans() -> None:
    config = load_config(None, ["grpo.enabled=false", "control.enabled=true"])
    assert config.grpo.enabled is False and config.control.enabled is True


def test_the_kept_coercions_still_read_numbers(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("sft:\n  lr: 1e-4\n")  # PyYAML reads 1e-4 as the string '1e-4'
    config = load_config(recipe, ["grpo.lr=1", "grpo.steps=3.0", "seed='7'"])
    assert config.sft.lr == pytest.approx(1e-4)
    assert config.grpo.lr == 1.0 and isinstance(config.grpo.lr, float)
    assert config.grpo.steps == 3 and isinstance(config.grpo.steps, int)
    assert config.seed == 7


def test_a_fraction_for_an_integer_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"grpo\.steps: .*fractional part \(got 2\.5\)"):
        load_config(None, ["grpo.steps=2.5"])
