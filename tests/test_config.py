"""load_config: defaults, YAML recipe plus overrides, and start-up errors naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from posttrain.config import (
    SMOKE_OVERRIDES,
    ConfigError,
    RunConfig,
    config_to_yaml,
    load_config,
)


def write_recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def test_defaults_are_a_valid_config() -> None:
    config = load_config()
    assert config == RunConfig()
    assert config.model.name == "tiny"
    assert config.grpo.batch_size % config.grpo.group_size == 0
    assert len(config.domains) == 4


def test_smoke_overrides_are_a_valid_config() -> None:
    config = load_config(None, SMOKE_OVERRIDES)
    assert config.grpo.steps == 3
    assert config.sft.max_steps == 30


def test_recipe_values_are_read_and_overrides_win(tmp_path: Path) -> None:
    recipe = write_recipe(
        tmp_path, "seed: 5\ngrpo:\n  steps: 7\n  lr: 0.001\nsft:\n  enabled: false\n"
    )
    config = load_config(recipe, ["grpo.steps=20", "model.name=smollm2-135m"])
    assert config.seed == 5
    assert config.grpo.lr == 0.001
    assert config.sft.enabled is False
    assert config.grpo.steps == 20
    assert config.model.name == "smollm2-135m"


def test_override_values_are_parsed_as_yaml_scalars_and_lists() -> None:
    config = load_config(
        None, ["grpo.scale_rewards=false", "sft.lr=1e-4", "domains=[list/sort-v1]"]
    )
    assert config.grpo.scale_rewards is False
    assert config.sft.lr == pytest.approx(1e-4)
    assert config.domains == ["list/sort-v1"]


def test_an_empty_recipe_file_means_the_defaults(tmp_path: Path) -> None:
    assert load_config(write_recipe(tmp_path, "")) == RunConfig()


def test_the_logged_yaml_loads_back_to_the_same_config(tmp_path: Path) -> None:
    config = load_config(None, ["grpo.steps=9", "name=x"])
    assert load_config(write_recipe(tmp_path, config_to_yaml(config))) == config


def test_an_unknown_override_key_suggests_the_nearest_one() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'grpo\.stpes'.*did you mean 'steps'"):
        load_config(None, ["grpo.stpes=3"])


def test_an_unknown_section_suggests_the_nearest_one() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'grpo'"):
        load_config(None, ["grop.steps=3"])


def test_there_is_no_sandbox_section_to_set_and_be_ignored() -> None:
    # Domains size their own sandboxes (pytool 512 MB, openscad 2 GB, ...); a run-level
    # section that nothing read was accepted and silently ignored.
    with pytest.raises(ConfigError, match=r"unknown key 'sandbox\.isolation'"):
        load_config(None, ["sandbox.isolation=none"])


def test_an_unknown_recipe_key_suggests_the_nearest_one(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "sft:\n  learning_rate: 0.1\n  bach_size: 8\n")
    with pytest.raises(ConfigError) as info:
        load_config(recipe)
    message = str(info.value)
    assert "unknown key 'sft.bach_size'" in message
    assert "did you mean 'batch_size'" in message
    assert "sft.learning_rate" in message


def test_a_wrong_type_names_the_field_and_the_value() -> None:
    with pytest.raises(ConfigError, match=r"grpo\.steps.*'abc'"):
        load_config(None, ["grpo.steps=abc"])


def test_a_value_out_of_range_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"grpo\.group_size"):
        load_config(None, ["grpo.group_size=1"])


def test_a_batch_size_not_divisible_by_the_group_size_names_both() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, ["grpo.batch_size=10", "grpo.group_size=4"])
    assert "grpo.batch_size=10" in str(info.value)
    assert "grpo.group_size=4" in str(info.value)


@pytest.mark.parametrize(
    "other", ["dpo.loss=ipo", "dpo.reference_free=true", "dpo.label_smoothing=0.1"]
)
def test_dpo_positive_with_a_clashing_setting_names_both_fields(other: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, ["dpo.positive_lambda=5", other])
    assert "dpo.positive_lambda=5.0" in str(info.value) and other in str(info.value)


def test_ipo_with_label_smoothing_is_refused_naming_both() -> None:
    # It had been accepted and the smoothing silently ignored.
    with pytest.raises(ConfigError, match="dpo.label_smoothing=0.1.*dpo.loss=ipo"):
        load_config(None, ["dpo.loss=ipo", "dpo.label_smoothing=0.1"])


def test_an_empty_domain_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="domains"):
        load_config(None, ["domains=[]"])


def test_a_domain_given_twice_is_refused_naming_it() -> None:
    """Its held-out tasks would be evaluated twice, doubling n in every interval and test."""
    with pytest.raises(ConfigError, match=r"^domains names 'arith/addition-v1' twice"):
        load_config(None, ["domains=[arith/addition-v1, list/sort-v1, arith/addition-v1]"])
    with pytest.raises(ConfigError, match=r"two datasets have the id 'mine/x-v1'"):
        load_config(None, ["datasets=[{id: mine/x-v1, path: a.jsonl, verifier: exact}, "
                           "{id: mine/x-v1, path: b.jsonl, verifier: exact}]"])  # fmt: skip


@pytest.mark.parametrize("seed", ["-1", "2147483648", "99999999999999999999999"])
def test_a_seed_that_torch_or_a_rank_offset_would_overflow_is_refused(seed: str) -> None:
    with pytest.raises(ConfigError, match=rf"^seed: Input should be .* \(got {seed}\)$"):
        load_config(None, [f"seed={seed}"])


def test_the_largest_seed_is_taken_by_every_consumer() -> None:
    import random

    import torch

    from posttrain.train.distributed import rank_seed

    seed = load_config(None, [f"seed={2**31 - 1}"]).seed
    torch.manual_seed(rank_seed(seed) + 1_000_003 * 4096)  # a rank's offset, many ranks
    torch.Generator().manual_seed(seed)
    random.Random(seed)


def test_a_missing_recipe_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"recipe file .*nope\.yaml.* does not exist"):
        load_config(missing)


def test_a_directory_as_recipe_is_named_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory, not a recipe file"):
        load_config(tmp_path)


def test_an_override_given_as_a_recipe_gets_a_hint() -> None:
    """`posttrain run grpo.steps 50`: the first word is taken for the recipe file."""
    with pytest.raises(ConfigError, match=r"'grpo\.steps' does not exist \(an override is"):
        load_config("grpo.steps")


def test_a_recipe_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "- grpo\n- sft\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(recipe)


def test_a_recipe_that_is_not_yaml_is_refused_in_one_line_with_line_and_column(
    tmp_path: Path,
) -> None:
    recipe = write_recipe(tmp_path, "grpo:\n  steps: [1\n")
    with pytest.raises(ConfigError) as error:
        load_config(recipe)
    assert str(error.value) == (
        f"recipe file '{recipe}' is not valid YAML: expected ',' or ']', but got "
        "'<stream end>' at line 3, column 1 (while parsing a flow sequence at line 2, column 10)"
    )


def test_a_key_given_twice_is_refused_naming_it_and_its_line(tmp_path: Path) -> None:
    """PyYAML keeps the last of two equal keys, silently."""
    recipe = write_recipe(tmp_path, "seed: 1\ngrpo:\n  steps: 1\n  lr: 0.1\n  steps: 2\n")
    with pytest.raises(
        ConfigError, match=r"recipe\.yaml': duplicate key 'steps' at line 5, column 3"
    ):
        load_config(recipe)
    with pytest.raises(ConfigError, match=r"override 'grpo': duplicate key 'steps' at line 1"):
        load_config(None, ["grpo={steps: 1, steps: 2}"])


# Six lists of nine aliases each to the one before: 9**6 strings when expanded. An error
# message showing the value, and the validation, walk it expanded (at 9 levels, 354
# bytes took 31.8 s and 3 GB to print the error).
BOMB_LISTS = [
    f"&{name} [{', '.join([f'*{prev}'] * 9 if prev else ['lol'] * 9)}]"
    for prev, name in zip(["", *"abcde"], "abcdef", strict=True)
]
ALIAS_BOMB = "".join(f"{n}: {v}\n" for n, v in zip("abcdef", BOMB_LISTS, strict=True))


def test_aliases_that_expand_past_the_limit_are_refused_before_validation(
    tmp_path: Path,
) -> None:
    recipe = write_recipe(tmp_path, ALIAS_BOMB + "mixture: *f\n")
    with pytest.raises(ConfigError, match=r"recipe\.yaml': its aliases \(\*name\) expand to more "
                       r"than 10000 values"):  # fmt: skip
        load_config(recipe)
    with pytest.raises(ConfigError, match=r"override 'domains': its aliases .* expand"):
        load_config(None, [f"domains=[{', '.join(BOMB_LISTS)}]"])


def test_a_shared_value_is_shown_in_an_error_without_walking_it_expanded() -> None:
    """An error shows a few items of a few levels: never the whole value."""
    import tracemalloc

    from posttrain.config import _shown

    value: list = ["lol"] * 9
    for _ in range(6):  # one list object per level: 9**7 strings when expanded
        value = [value] * 9
    tracemalloc.start()
    try:
        shown = _shown(value)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert shown.startswith("[[[") and len(shown) <= 100
    assert peak < 1 << 20, f"showing the value took {peak} bytes"


def test_an_integer_too_long_to_read_is_refused_naming_where(tmp_path: Path) -> None:
    recipe = write_recipe(tmp_path, "seed: " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"recipe\.yaml': cannot read the value '9999.* line 1"):
        load_config(recipe)


@pytest.mark.parametrize("text", ["[" * 10_000, "grpo:\n  difficulties: " + "[" * 5_000,
                                  "mixture: " + "{a: " * 10_000])  # fmt: skip
def test_a_recipe_nested_too_deeply_to_parse_is_refused_naming_the_file(
    tmp_path: Path, text: str
) -> None:
    recipe = write_recipe(tmp_path, text)
    with pytest.raises(ConfigError, match=rf"recipe file '{recipe}' nests .* too deeply"):
        load_config(recipe)


def test_an_override_nested_too_deeply_to_parse_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"override 'mixture': the value nests .* too deeply"):
        load_config(None, ["mixture=" + "[" * 10_000])


def test_a_long_bad_value_is_shown_cut_short() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, ["mixture=" + "[" * 300 + "]" * 300])
    assert str(info.value).startswith("mixture: Input should be a valid dictionary (got [[[")
    assert str(info.value).endswith("(got [[[[...]]]])")
    assert len(str(info.value)) < 200


def test_an_override_without_equals_sign_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"'grpo\.steps' must look like key\.path=value"):
        load_config(None, ["grpo.steps"])


def test_an_override_into_a_plain_value_is_refused() -> None:
    with pytest.raises(ConfigError, match="seed"):
        load_config(None, ["seed.x=1"])


def test_config_to_yaml_writes_every_section() -> None:
    data = yaml.safe_load(config_to_yaml(RunConfig()))
    assert set(data) >= {"model", "sft", "dpo", "grpo", "eval", "control", "domains", "seed"}


def test_a_number_like_value_for_a_string_field_is_kept_as_a_string() -> None:
    config = load_config(None, ["name=2024", "out_dir=123"])
    assert (config.name, config.out_dir) == ("2024", "123")


def test_a_dataset_path_that_is_a_directory_is_named_a_directory(tmp_path: Path) -> None:
    """Not "does not exist", which the dataset loader would say."""
    with pytest.raises(ConfigError, match=rf"datasets\.0\.path: '{tmp_path}' is a directory, not"):
        load_config(None, [f"datasets=[{{id: mine/x-v1, path: {tmp_path}, verifier: exact}}]"])


def test_a_dataset_needs_exactly_one_of_verifier_and_reward() -> None:
    base = {"id": "mine/x-v1", "path": "x.jsonl"}
    with pytest.raises(ConfigError, match="exactly one of 'verifier' and 'reward'"):
        load_config(overrides=[f"datasets=[{json.dumps(base)}]"])
    both = {**base, "verifier": "exact", "reward": ["m:f"]}
    with pytest.raises(ConfigError, match="exactly one of 'verifier' and 'reward'"):
        load_config(overrides=[f"datasets=[{json.dumps(both)}]"])
    config = load_config(overrides=[f"datasets=[{json.dumps({**base, 'verifier': 'exact'})}]"])
    assert config.datasets[0].verifier == "exact" and config.datasets[0].heldout_fraction == 0.1


def test_an_unknown_over_long_strategy_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"context\.over_long.*'shorten'"):
        load_config(None, ["context.over_long=shorten"])


def test_heldout_difficulties_outside_1_to_10_are_named() -> None:
    with pytest.raises(ConfigError, match=r"eval\.difficulties must be 1\.\.10.*\[11\]"):
        load_config(None, ["eval.difficulties=[3, 11]"])


@pytest.mark.parametrize(
    ("weights", "needle"),
    [
        ("{arith/addition-v1: .nan}", r"\.arith/addition-v1: .* a finite number \(got nan\)"),
        ("{arith/addition-v1: .inf}", r"\.arith/addition-v1: .* a finite number \(got inf\)"),
        ("{arith/addition-v1: -1}", r": the weight of 'arith/addition-v1' must be .* got -1"),
    ],
)
def test_an_sft_domain_weight_that_is_not_finite_and_non_negative_is_named(
    weights: str, needle: str
) -> None:
    with pytest.raises(ConfigError, match=rf"sft\.domain_weights{needle}"):
        load_config(None, [f"sft.domain_weights={weights}"])


def test_sft_domain_weights_that_leave_every_domain_at_zero_are_refused() -> None:
    zeros = "{arith/addition-v1: 0, text/reverse-v1: 0, list/sort-v1: 0, tools/calculator-v1: 0}"
    with pytest.raises(ConfigError, match=r"sft\.domain_weights gives every domain .* weight 0"):
        load_config(None, [f"sft.domain_weights={zeros}"])
    config = load_config(None, ["sft.domain_weights={arith/addition-v1: 0}"])  # the others weigh 1
    assert config.sft.domain_weights == {"arith/addition-v1": 0.0}


@pytest.mark.parametrize(
    ("weight", "needle"),
    [
        (".inf", r"mixture\.arith: .* a finite number \(got inf\)"),
        (".nan", r"mixture\.arith: .* a finite number \(got nan\)"),
        ("-1", r"mixture: the weight of 'arith' must be a finite number >= 0, got -1"),
    ],
)
def test_a_mixture_weight_that_is_not_finite_and_non_negative_is_named(
    weight: str, needle: str
) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_config(None, [f"mixture={{arith: {weight}}}"])


@pytest.mark.parametrize(
    "override",
    ["grpo.lr=.inf", "dpo.beta=.inf", "sft.weight_decay=.inf", "grpo.kl_coef=.inf",
     "train.timeout_s=.inf", "datasets=[{id: a/b-v1, path: x, reward: [m:f], reward_weights: [.nan]}]"],
)  # fmt: skip
def test_an_infinite_or_nan_number_is_refused_naming_the_field(override: str) -> None:
    """An infinite learning rate turns every weight into inf at the first step."""
    key = override.split("=", 1)[0]
    with pytest.raises(ConfigError, match=rf"{key}(\.0\.reward_weights\.0)?: .* a finite number"):
        load_config(None, [override])


def test_a_head_count_that_does_not_divide_the_width_names_both_and_the_choices() -> None:
    with pytest.raises(
        ConfigError,
        match=r"model\.num_heads=3 does not divide model\.hidden_size=128.*\[1, 2, 4, 8, 16",
    ):
        load_config(None, ["model.num_heads=3"])


def test_an_odd_head_size_is_refused_for_rotary_embeddings() -> None:
    with pytest.raises(ConfigError, match=r"model\.num_heads=16 gives a head size of 3"):
        load_config(None, ["model.hidden_size=48", "model.num_heads=16"])
    with pytest.raises(ConfigError, match=r"model\.hidden_size=17 is odd"):
        load_config(None, ["model.hidden_size=17", "model.num_heads=1"])
    assert load_config(None, ["model.hidden_size=48", "model.num_heads=8"]).model.num_heads == 8


def test_the_head_check_leaves_other_models_alone() -> None:
    config = load_config(None, ["model.name=smollm2-135m", "model.num_heads=3"])
    assert config.model.name == "smollm2-135m"


def test_a_section_check_reads_as_its_own_message() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, ["eval.difficulties=[0]"])
    assert str(info.value) == "eval.difficulties must be 1..10 and not empty, got [0]"


def test_a_grpo_temperature_the_engines_would_sample_greedily_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"grpo\.temperature: .*greater than or equal to 0\.00001"
    ):
        load_config(None, ["grpo.temperature=1e-6"])
    assert load_config(None, ["grpo.temperature=1e-5"]).grpo.temperature == 1e-5


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("domains=arith/addition-v1", r"domains: expected a list, .* write 'domains=\[a,b\]'"),
        ("grpo=5", r"grpo is a section of settings, not a value \(got 5\); .* grpo\.enabled="),
        ("model=tiny", r"model is a section .* e\.g\. model\.name=\.\.\."),
    ],
)
def test_shape_errors_say_how_to_write_the_setting(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_a_recipe_that_is_not_utf8_text_is_refused(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_bytes("name: café\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"recipe\.yaml' is not UTF-8 text"):
        load_config(recipe)


def test_a_recipe_from_a_pipe_is_read(tmp_path: Path) -> None:
    """`posttrain run <(sed ... recipe.yaml)` gives a named pipe, not a regular file."""
    import os
    import threading

    pipe = tmp_path / "recipe-pipe"
    os.mkfifo(pipe)
    writer = threading.Thread(target=pipe.write_text, args=("seed: 7\n",))
    writer.start()
    try:
        assert load_config(pipe).seed == 7
    finally:
        # A writer still alive after the read may only be closing: opening the pipe then
        # would wait for a writer forever. Only one still blocked in open() after a wait
        # means the reader failed before opening; a reader then unblocks it.
        writer.join(timeout=10)
        if writer.is_alive():
            with pipe.open(encoding="utf-8") as f:
                f.read()
        writer.join()
