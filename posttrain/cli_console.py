"""The consoles the `posttrain` command prints to, `fail` (one red line, exit code 2) and
`plain`, which every text not written by the command itself goes through before a
rich print: a path, a domain id, a model's answer or an error message holding `[...]`
would otherwise be read as markup (`[old]/x` printed as `/x`, `[/x]` a MarkupError)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

console = Console()
err_console = Console(stderr=True)


def plain(text: object) -> str:
    """`str(text)` for a rich print: markup escaped, and lone surrogates (which a stored
    model text can hold, and no terminal encoding takes) written as `\\udXXX`."""
    from posttrain.types import escape_surrogates

    return escape(escape_surrogates(str(text)))


def fail(message: str) -> None:
    """Print `error: message` to stderr, the message as it is (never markup), and exit
    with code 2 (bad input)."""
    err_console.print(f"[bold red]error:[/] {plain(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)
