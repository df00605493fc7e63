"""Isolated, pooled, snapshotting execution of model-written code and tools.

`Sandbox` is one isolated workspace with a warm fork-server; `SandboxPool` keeps
sandboxes started and clean between tasks; `layers.doctor()` says which isolation
layers this machine offers. What is and is not isolated: see `sandbox.py`.
"""

from posttrain.sandbox.layers import Layer, active_layers, doctor
from posttrain.sandbox.results import ExecResult, SandboxSpec, Snapshot
from posttrain.sandbox.sandbox import Sandbox, SandboxError, SandboxUnavailable

__all__ = [
    "ExecResult",
    "Layer",
    "Sandbox",
    "SandboxError",
    "SandboxSpec",
    "SandboxUnavailable",
    "Snapshot",
    "active_layers",
    "doctor",
]
