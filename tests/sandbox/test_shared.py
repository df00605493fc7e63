"""Process-wide named pools: one per name, a name reused with other settings refused, and
a forked child's pools its own."""

from __future__ import annotations

import os

import pytest

from posttrain.sandbox import SandboxSpec
from posttrain.sandbox import shared as shared_module
from posttrain.sandbox.shared import shared_pool


class FakePool:
    def __init__(self, size: int, spec: SandboxSpec, max_tasks: int) -> None:
        self.size, self.spec, self.max_tasks = size, spec, max_tasks
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def fake_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_module, "SandboxPool", FakePool)
    monkeypatch.setattr(shared_module, "_pools", {})


def test_the_same_name_gives_the_same_pool() -> None:
    spec = SandboxSpec(memory_mb=256)
    first = shared_pool("a", spec, size=2, max_tasks=10)
    assert shared_pool("a", spec, size=2, max_tasks=10) is first
    assert shared_pool("b", spec, size=2, max_tasks=10) is not first


def test_a_name_reused_with_other_settings_is_refused() -> None:
    shared_pool("a", SandboxSpec(memory_mb=256), size=2, max_tasks=10)
    with pytest.raises(ValueError, match="'a' exists with other settings"):
        shared_pool("a", SandboxSpec(memory_mb=512), size=2, max_tasks=10)


def test_a_forked_child_has_pools_of_its_own_and_closes_only_those() -> None:
    spec = SandboxSpec(memory_mb=256)
    parent = shared_pool("a", spec, size=2, max_tasks=10)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            child = shared_pool("a", spec, size=2, max_tasks=10)
            shared_module._close_all()  # what the child's exit runs
            os.write(w, f"{child is parent} {child.closed} {parent.closed}".encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r) as f:
        assert f.read() == "False True False"
    assert not parent.closed and shared_pool("a", spec, size=2, max_tasks=10) is parent
