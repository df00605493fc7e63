"""`posttrain serve CHECKPOINT`: an OpenAI-compatible server for a checkpoint.

    posttrain serve tiny                                  # http://127.0.0.1:8000/v1
    posttrain serve runs/20260509-142301 --port 9000      # the run's latest stage checkpoint
    POSTTRAIN_KEY=s3cret posttrain serve ckpt/ --api-key-env POSTTRAIN_KEY

CHECKPOINT is a built-in model name (tiny, smollm2-135m), a Hugging Face model
directory, or a run directory (its grpo, else dpo, else sft, else control
checkpoint). The API key is read from the environment variable named by
`--api-key-env`, never from the command line (where `ps` would show it).

Not guaranteed: any protection beyond the optional key; serving on an address other
than loopback without a key prints a warning and serves anyway.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from posttrain.cli_console import console, err_console, fail, plain

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(
    checkpoint: Annotated[
        str,
        typer.Argument(help="tiny, smollm2-135m, a model directory, or a run directory."),
    ],
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    api_key_env: Annotated[
        str | None,
        typer.Option(help="Name of an environment variable holding the API key clients must send."),
    ] = None,
    model_name: Annotated[
        str | None, typer.Option(help="Model id to serve under (default: from CHECKPOINT).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed (and the tiny model's init).")] = 0,
) -> None:
    """Serve a checkpoint over an OpenAI-compatible API (/v1/chat/completions)."""
    api_key = None
    if api_key_env is not None:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            fail(f"--api-key-env {api_key_env}: the environment variable ${api_key_env} is not set")
            return
    if not 0 <= port <= 65535:
        fail(f"--port must be in 0..65535, got {port}")
        return
    import uvicorn

    from posttrain.models.loading import ModelNotFoundError
    from posttrain.serve import CheckpointNotFoundError
    from posttrain.serve.app import app_for_checkpoint

    try:
        app = app_for_checkpoint(checkpoint, model_name=model_name, api_key=api_key, seed=seed)
    except (CheckpointNotFoundError, ModelNotFoundError) as exc:
        fail(str(exc))
        return
    except (OSError, ValueError) as exc:  # a directory transformers cannot load
        reason = " ".join(str(exc).split())
        fail(f"cannot load checkpoint {checkpoint!r}: {reason}")
        return
    if host not in LOOPBACK and api_key is None:
        err_console.print(
            f"[yellow]warning:[/] serving on {plain(host)} with no API key; anyone who can reach "
            "this port can use the model (set --api-key-env)"
        )
    console.print(
        f"serving [bold]{plain(app.state.model_name)}[/] at {plain(f'http://{host}:{port}/v1')}"
    )
    uvicorn.run(app, host=host, port=port, log_level="info")
