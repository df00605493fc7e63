"""The consoles the `posttrain` command prints to, and `fail`: one red line, exit code 2."""

from __future__ import annotations

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def fail(message: str) -> None:
    """Print `error: message` to stderr and exit with code 2 (bad input)."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)
