"""`posttrain view RUN`: serve the trace viewer of a run directory on this machine.

    posttrain view runs/20260509-142301                 # http://127.0.0.1:8001/
    posttrain view runs/20260509-142301 --port 9000

`posttrain.cli` registers `view`; FastAPI and uvicorn are imported inside it, so
`posttrain --help` stays quick. The pages are described in `posttrain.serve.viewer`.

Not guaranteed: the viewer has no authentication; `--host 0.0.0.0` shows every
rollout of the run to anyone who can reach the port. A port already in use makes
uvicorn print its own error and exit with code 1.
"""

from __future__ import annotations

from typing import Annotated

import typer

from posttrain.cli_console import console, fail, plain


def view(
    run: Annotated[str, typer.Argument(help="The run directory (the one holding traces.sqlite).")],
    host: Annotated[str, typer.Option(help="Address to bind; keep 127.0.0.1 unless trusted.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8001,
) -> None:
    """Browse a run's rollouts in the browser (read-only), with filters and full traces."""
    from posttrain.serve.viewer import TraceViewerError, create_viewer

    if not 0 <= port <= 65535:
        fail(f"--port must be in 0..65535, got {port}")
        return
    try:
        app = create_viewer(run)
    except TraceViewerError as exc:
        fail(str(exc))
        return
    import uvicorn

    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{port}/"
    console.print(f"trace viewer of {plain(run)}: {plain(url)}  (Ctrl+C stops it)", soft_wrap=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
