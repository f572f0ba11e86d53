"""`mcprl models pull|list`."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="Fetch and list the embedded models.", no_args_is_help=True)


@app.command("pull")
def pull(alias: str = typer.Argument("smollm2-135m", help="model alias"), force: bool = False) -> None:
    """Download and convert a model alias into the cache."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.model import weights

    print(weights.pull(alias, force=force))


@app.command("list")
def list_() -> None:
    """Show the aliases and which are cached."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.model import weights

    cached = {alias: (d, size) for alias, d, size in weights.list_cached()}
    table = Table("alias", "cached", "size", "path", "description")
    for alias, spec in weights.ALIASES.items():
        d, size = cached.get(alias, (None, 0))
        table.add_row(alias, "yes" if d else "no", f"{size / 1e6:.0f} MB" if d else "", str(d or ""), spec.description)
    Console().print(table)
