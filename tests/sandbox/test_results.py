"""`results.py`: `SandboxSpec` validation and `Snapshot` editing, on the host alone."""

from __future__ import annotations

import glob

import pytest

from posttrain.sandbox import SandboxSpec, Snapshot


def test_preload_as_one_string_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="preload.*'pytest'"):
        SandboxSpec(preload="pytest")  # type: ignore[arg-type]


def test_preload_takes_any_sequence_of_module_names() -> None:
    spec = SandboxSpec(preload=["pytest", "numpy"])  # type: ignore[arg-type]
    assert spec.preload == ("pytest", "numpy") and hash(spec)
    with pytest.raises(TypeError, match="module names"):
        SandboxSpec(preload=("pytest", 3))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="module names"):
        SandboxSpec(preload=("",))


def test_with_files_drops_a_literal_name_when_escaped() -> None:
    snap = Snapshot.from_files({"x[1].py": "a", "x1.py": "b", "*.py": "c"})
    assert set(snap.with_files({}, drop=["x[1].py"]).files()) == {"x[1].py", "*.py"}  # a glob
    kept = snap.with_files({}, drop=[glob.escape("x[1].py"), glob.escape("*.py")]).files()
    assert set(kept) == {"x1.py"}
