"""State hashing: what counts as the same state, and what is rejected."""

from __future__ import annotations

import doctest
import enum
import random
import string
import subprocess
import sys
import time

import pytest

from posttrain.verify import canonical_json, state, state_hash


def test_doctests_pass() -> None:
    assert doctest.testmod(state).failed == 0


def test_dict_key_order_does_not_matter() -> None:
    assert state_hash({"a": 1, "b": {"c": 2, "d": 3}}) == state_hash(
        {"b": {"d": 3, "c": 2}, "a": 1}
    )


def test_list_order_matters() -> None:
    assert state_hash({"q": [1, 2, 3]}) != state_hash({"q": [3, 2, 1]})


def test_floats_agree_to_nine_significant_digits() -> None:
    assert state_hash(0.1 + 0.2) == state_hash(0.3)
    assert state_hash(1234.5678901) == state_hash(1234.56789012)


def test_floats_differing_in_the_ninth_digit_differ() -> None:
    assert state_hash(1.00000001) != state_hash(1.00000002)


def test_whole_floats_equal_their_integers() -> None:
    assert state_hash({"n": 2.0}) == state_hash({"n": 2})
    assert state_hash(-0.0) == state_hash(0)


def test_whole_floats_of_ten_or_more_digits_equal_their_integers() -> None:
    # Nine significant digits would write 12345678901.0 as 12345678900: unequal to the
    # int 12345678901, and the same as the int 12345678900.
    assert state_hash(12345678901.0) == state_hash(12345678901)
    assert state_hash(12345678904.0) != state_hash(12345678900)
    assert state_hash(-(2.0**52) - 1) == state_hash(-(2**52) - 1)


def test_large_floats_agree_to_the_nearest_whole_number() -> None:
    assert state_hash(12345678901 + 1e-6) == state_hash(12345678901)
    assert state_hash(12345678901.4) != state_hash(12345678902.0)


def test_bool_is_not_an_integer() -> None:
    assert state_hash(True) != state_hash(1)
    assert state_hash(False) != state_hash(0)


def test_none_and_empty_containers_differ() -> None:
    hashes = {state_hash(v) for v in (None, [], {}, "", 0)}
    assert len(hashes) == 5


def test_tuples_hash_as_lists() -> None:
    assert state_hash((1, "a")) == state_hash([1, "a"])


def test_int_enum_hashes_by_value() -> None:
    class Level(enum.IntEnum):
        HIGH = 3

    assert state_hash({"level": Level.HIGH}) == state_hash({"level": 3})


@pytest.mark.parametrize("value", [{1, 2}, frozenset({"a"}), {"s": {1}}])
def test_sets_are_rejected(value: object) -> None:
    with pytest.raises(TypeError, match="sorted list"):
        state_hash(value)


def test_non_string_keys_are_rejected() -> None:
    with pytest.raises(TypeError, match="keys must be str"):
        state_hash({1: "a"})


def test_unsupported_objects_are_rejected_with_their_path() -> None:
    with pytest.raises(TypeError, match=r"\$\['rows'\]\[1\]"):
        state_hash({"rows": [1, object()]})


def test_cycles_are_rejected() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="cycle"):
        state_hash(loop)


def test_shared_subvalues_are_not_cycles() -> None:
    shared = [1, 2]
    assert state_hash([shared, shared]) == state_hash([[1, 2], [1, 2]])


def test_non_finite_floats_are_written_as_tokens() -> None:
    assert canonical_json([float("nan"), float("inf"), -float("inf")]) == "[NaN,Infinity,-Infinity]"


def test_lone_surrogates_hash_without_error() -> None:
    assert len(state_hash("\ud800")) == 64


def test_hash_is_the_same_in_another_process() -> None:
    value = {"b": [1.5, "x", None], "a": {"z": True, "y": 0.1 + 0.2}}
    code = (
        "from posttrain.verify.state import state_hash;"
        "print(state_hash({'a': {'y': 0.3, 'z': True}, 'b': [1.5, 'x', None]}))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    )
    assert other.stdout.strip() == state_hash(value)


def test_junk_text_values_hash_quickly_and_distinctly() -> None:
    rng = random.Random(0)
    junk = [
        "",
        "".join(rng.choice(string.printable) for _ in range(100_000)),
        b"\xff\xfe 4\xc3(2 \xed\xa0\x80".decode(errors="replace"),
        "\ud800 12",
        "9" * 5000,
        "[" * 100_000,
    ]
    started = time.perf_counter()
    hashes = {state_hash({"text": text}) for text in junk}
    assert time.perf_counter() - started < 1.0 * len(junk)
    assert len(hashes) == len(junk)
