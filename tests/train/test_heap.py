"""limit_heap_growth pins glibc's mmap threshold here and for spawned children."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from posttrain.train.heap import MMAP_THRESHOLD_BYTES, limit_heap_growth


def test_the_threshold_takes_effect_and_is_exported_to_children() -> None:
    code = (
        "import os, sys; from posttrain.train.heap import limit_heap_growth; "
        "ok = limit_heap_growth(); "
        "print(ok, os.environ['MALLOC_MMAP_THRESHOLD_'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["True", str(MMAP_THRESHOLD_BYTES)]


def test_a_value_the_user_exported_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "4194304")
    assert limit_heap_growth() is True
    assert os.environ["MALLOC_MMAP_THRESHOLD_"] == "4194304"
