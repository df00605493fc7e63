"""Serving: a checkpoint over an OpenAI-compatible HTTP API (`serve.app`), finding the
checkpoint a path names (`resolve_checkpoint`), and the read-only trace viewer pages
(`serve.viewer`).

    from posttrain.serve import resolve_checkpoint
    resolve_checkpoint("runs/20260509-142301")   # -> runs/.../checkpoints/grpo
    from posttrain.serve.app import app_for_checkpoint, run_in_thread
    server = run_in_thread(app_for_checkpoint("tiny"))   # server.base_url ends in /v1

`resolve_checkpoint` is cheap (no FastAPI or torch import); the app lives in
`posttrain.serve.app` and is imported on first use of `create_app` and friends.

Not guaranteed: a run directory's "latest" checkpoint is chosen by stage order
(grpo, dpo, sft, control), not by file times; a stage still being written (no
`COMPLETE` marker) is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from posttrain.store.atomic import is_complete

# A run's stages, latest first: serving a run directory serves the first one present.
STAGE_ORDER = ("grpo", "dpo", "sft", "control")

__all__ = [
    "STAGE_ORDER",
    "CheckpointNotFoundError",
    "app_for_checkpoint",
    "create_app",
    "resolve_checkpoint",
    "run_in_thread",
]


class CheckpointNotFoundError(ValueError):
    """A path is neither a model directory nor a run directory with a complete checkpoint."""


def resolve_checkpoint(path: str | Path) -> Path:
    """The model directory that `path` names.

    A directory holding `config.json` is a model directory and is returned as is.
    A run directory (one holding `checkpoints/`) resolves to its latest complete
    stage checkpoint: `grpo`, then `dpo`, then `sft`, then `control`. Anything else
    raises `CheckpointNotFoundError` naming the path and what was expected."""
    path = Path(path).expanduser()
    if not path.exists():
        raise CheckpointNotFoundError(
            f"checkpoint {str(path)!r} does not exist: expected a model directory "
            "(with config.json) or a run directory (with checkpoints/)"
        )
    if not path.is_dir():
        raise CheckpointNotFoundError(
            f"checkpoint {str(path)!r} is a file: expected a model directory "
            "(with config.json) or a run directory (with checkpoints/)"
        )
    if (path / "config.json").is_file():
        return path
    checkpoints = path / "checkpoints"
    if not checkpoints.is_dir():
        raise CheckpointNotFoundError(
            f"{str(path)!r} is neither a model directory (no config.json) "
            "nor a run directory (no checkpoints/)"
        )
    for stage in STAGE_ORDER:
        candidate = checkpoints / stage
        if is_complete(candidate) and (candidate / "config.json").is_file():
            return candidate
    raise CheckpointNotFoundError(
        f"run directory {str(path)!r} has no complete checkpoint: looked for "
        f"checkpoints/{{{','.join(STAGE_ORDER)}}} with a COMPLETE marker"
    )


def __getattr__(name: str) -> Any:
    # The app pulls in FastAPI, uvicorn and torch; import it only when asked for.
    if name in ("app_for_checkpoint", "create_app", "run_in_thread"):
        from posttrain.serve import app

        return getattr(app, name)
    raise AttributeError(f"module 'posttrain.serve' has no attribute {name!r}")
