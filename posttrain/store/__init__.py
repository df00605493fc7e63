"""The run store: run directory layout, atomic writes, metrics and the rollout trace store."""

from posttrain.store.atomic import (
    COMPLETE_MARKER,
    atomic_directory,
    atomic_write_bytes,
    atomic_write_text,
    is_complete,
)
from posttrain.store.metrics import MetricsLogger, read_metrics
from posttrain.store.run_dir import RunDir, RunDirError
from posttrain.store.traces import TraceStore, degraded_metrics

__all__ = [
    "COMPLETE_MARKER",
    "MetricsLogger",
    "RunDir",
    "RunDirError",
    "TraceStore",
    "atomic_directory",
    "atomic_write_bytes",
    "atomic_write_text",
    "degraded_metrics",
    "is_complete",
    "read_metrics",
]
