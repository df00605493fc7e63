"""`load_yaml`: safe_load's data, with duplicate keys, alias bombs, self-holding aliases
and unreadable values refused in one line naming where."""

from __future__ import annotations

import pytest
import yaml

from posttrain.yaml_reader import (
    MAX_ALIAS_VALUES,
    YAMLInputError,
    YAMLRefusedError,
    YAMLTooDeepError,
    load_yaml,
)


@pytest.mark.parametrize(
    "text",
    ["", "a: 1\nb: [x, {c: 2.5}]\n", "base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  x: 3\n",
     "a: &a [1, 2]\nb: [*a, *a]\n", "{1: a, '1': b}"],
)  # fmt: skip
def test_what_safe_load_reads_reads_the_same(text: str) -> None:
    """Merge keys (`<<`) overridden by the mapping's own key are no duplicate."""
    assert load_yaml(text) == yaml.safe_load(text)


def test_a_key_given_twice_is_refused_naming_it_and_where() -> None:
    with pytest.raises(YAMLRefusedError, match=r"^duplicate key 'steps' at line 3, column 3$"):
        load_yaml("grpo:\n  steps: 1\n  steps: 2\n")


def test_aliases_expanding_to_just_the_limit_are_read_and_past_it_refused() -> None:
    one_short = "a: &a [" + ", ".join(["x"] * (MAX_ALIAS_VALUES - 1)) + "]\nb: *a\n"
    assert len(load_yaml(one_short)["b"]) == MAX_ALIAS_VALUES - 1  # the alias adds 10,000
    with pytest.raises(YAMLRefusedError, match=r"its aliases \(\*name\) expand to more than"):
        load_yaml(one_short + "c: *a\n")


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(YAMLRefusedError, match=r"refers to the value it sits in .* line 1"):
        load_yaml("a: &a [1, [2, *a]]\n")


def test_a_syntax_error_is_one_line_with_its_line_and_column() -> None:
    with pytest.raises(YAMLInputError) as info:
        load_yaml("a: b: c\n")
    assert str(info.value) == "mapping values are not allowed here at line 1, column 5"
    assert not isinstance(info.value, YAMLRefusedError)  # not YAML at all, not refused


@pytest.mark.parametrize(
    ("text", "message"),
    [("n: " + "9" * 5000, r"cannot read the value '9999.*4300 digits.* at line 1, column 4"),
     ("d: 2024-13-45", r"cannot read the value '2024-13-45': month must be in 1\.\.12 at line 1")],
)  # fmt: skip
def test_a_value_python_cannot_make_is_refused_naming_it(text: str, message: str) -> None:
    with pytest.raises(YAMLRefusedError, match=message):
        load_yaml(text)


def test_nesting_too_deep_is_a_yaml_error() -> None:
    with pytest.raises(YAMLTooDeepError, match="too deeply"):
        load_yaml("[" * 10_000)


@pytest.mark.parametrize("char", ["\x07", "\x00"])
def test_a_character_yaml_does_not_allow_is_a_yaml_input_error(char: str) -> None:
    # PyYAML's ReaderError carries no mark: it had escaped as a traceback.
    with pytest.raises(YAMLInputError, match="unacceptable character"):
        load_yaml(f"grpo:\n  steps: 1{char}\n")
