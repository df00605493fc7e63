"""`text_ops/ciphers.py`: Caesar encoding, Vigenère decoding, run-length encoding."""

from __future__ import annotations

from posttrain.domains.text_ops.ciphers import (
    CaesarEncode,
    RunLengthEncode,
    VigenereDecode,
    caesar,
    run_length,
    vigenere,
)


def test_caesar_wraps_and_keeps_spaces() -> None:
    assert caesar("xyz ab", 3) == "abc de"


def test_caesar_refuses_decoding_instead_of_encoding() -> None:
    domain = CaesarEncode()
    task = domain.generate(0, 5)
    backwards = caesar(task.meta["plain"], -task.meta["k"])
    assert domain.judge(task, task.answer).passed and not domain.judge(task, backwards).passed


def test_vigenere_spaces_do_not_use_key_letters() -> None:
    assert vigenere("ab ab", "bc", 1) == "bd bd"
    assert vigenere(vigenere("hello world", "key", 1), "key", -1) == "hello world"


def test_vigenere_answer_is_the_plain_text() -> None:
    domain = VigenereDecode()
    task = domain.generate(1, 8)
    assert vigenere(task.answer, task.meta["key"], 1) == task.meta["cipher"]
    assert not domain.judge(task, task.answer.upper()).passed


def test_run_length_writes_every_count() -> None:
    assert run_length("aaabcc") == "3a1b2c"


def test_run_length_refuses_dropped_ones() -> None:
    domain = RunLengthEncode()
    task = domain.generate(0, 3)
    assert "1" in task.answer
    without_ones = "".join(c for i, c in enumerate(task.answer) if not (c == "1" and i % 2 == 0))
    assert not domain.judge(task, without_ones).passed
