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


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [("timeout_s", float("inf"), "sandbox timeout_s must be a number of seconds in"),
     ("timeout_s", 1e300, "sandbox timeout_s"), ("timeout_s", float("nan"), "sandbox timeout_s"),
     ("start_timeout_s", float("inf"), "sandbox start_timeout_s"),
     ("memory_mb", 99_999_999_999_999, "sandbox memory_mb must be an integer in 1..16777216"),
     ("memory_mb", 512.0, "sandbox memory_mb must be an integer"),
     ("max_open_files", 1 << 40, "sandbox max_open_files"), ("tmpfs_mb", 0, "sandbox tmpfs_mb"),
     ("cpu_cores", float("inf"), "sandbox cpu_cores"), ("cpu_cores", float("nan"), "sandbox cpu_cores")],
)  # fmt: skip
def test_a_limit_no_consumer_can_take_is_refused_naming_the_field(
    field: str, value: float, named: str
) -> None:
    """Infinity overflowed `math.ceil` (the CPU rlimit), 1e300 a deadline, a huge
    memory_mb the rlimit in bytes (the task's process died with exit code 126)."""
    with pytest.raises(ValueError, match=named):
        SandboxSpec(**{field: value})


def test_the_default_and_largest_limits_are_taken() -> None:
    from posttrain.sandbox.results import MAX_LIMITS, MAX_TIMEOUT_S

    SandboxSpec()
    SandboxSpec(timeout_s=MAX_TIMEOUT_S, start_timeout_s=MAX_TIMEOUT_S, **MAX_LIMITS)


def test_with_files_drops_a_literal_name_when_escaped() -> None:
    snap = Snapshot.from_files({"x[1].py": "a", "x1.py": "b", "*.py": "c"})
    assert set(snap.with_files({}, drop=["x[1].py"]).files()) == {"x[1].py", "*.py"}  # a glob
    kept = snap.with_files({}, drop=[glob.escape("x[1].py"), glob.escape("*.py")]).files()
    assert set(kept) == {"x1.py"}
