"""Reward functions given by import path in the dataset-domain tests (TRL's shape)."""

from __future__ import annotations

from typing import Any


def exact(prompts: list[str], completions: list[str], answer: list[Any], **columns: list[Any]) -> list[float | None]:  # fmt: skip
    return [float(c.strip() == str(a)) for c, a in zip(completions, answer, strict=True)]


def short(prompts: list[str], completions: list[str], answer: list[Any], **columns: list[Any]) -> list[float | None]:  # fmt: skip
    return [1.0 if len(c) <= 2 * len(str(a)) + 2 else 0.0 for c, a in zip(completions, answer, strict=True)]  # fmt: skip


def uses_column(prompts: list[str], completions: list[str], answer: list[Any], **columns: list[Any]) -> list[float | None]:  # fmt: skip
    return [float(c.strip() == u) for c, u in zip(completions, columns["unit"], strict=True)]


def raises(prompts: list[str], completions: list[str], answer: list[Any], **columns: list[Any]) -> list[float | None]:  # fmt: skip
    raise RuntimeError("reward bug")


def out_of_range(prompts: list[str], completions: list[str], answer: list[Any], **columns: list[Any]) -> list[float | None]:  # fmt: skip
    return [2.0 for _ in completions]


not_callable = 3
