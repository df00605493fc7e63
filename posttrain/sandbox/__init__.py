"""Isolated, pooled, snapshotting execution of model-written code and tools.

`Sandbox` is one isolated workspace with a warm fork-server; `SandboxPool` keeps
sandboxes started and clean between tasks; `layers.doctor()` says which isolation
layers this machine offers. What is and is not isolated: see `sandbox.py`.
"""

from posttrain.sandbox.layers import Layer, active_layers, doctor
from posttrain.sandbox.pool import SandboxPool
from posttrain.sandbox.results import (
    ExecResult,
    SandboxCleanupError,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
    Snapshot,
)
from posttrain.sandbox.sandbox import Sandbox
from posttrain.sandbox.session import PythonSession, SessionResult

__all__ = [
    "ExecResult",
    "Layer",
    "PythonSession",
    "Sandbox",
    "SandboxCleanupError",
    "SandboxError",
    "SandboxPool",
    "SandboxSpec",
    "SandboxUnavailable",
    "SessionResult",
    "Snapshot",
    "active_layers",
    "doctor",
]
