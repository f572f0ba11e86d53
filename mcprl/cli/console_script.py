"""How every console script of ours (`mcprl`, `autorl`) runs its Typer app."""

from __future__ import annotations

import sys

import typer


def run_app(typer_app: typer.Typer) -> None:
    """Run a Typer app as a console script: user errors print one line and exit 2, never a
    traceback; usage errors and exit codes are click's own (standalone mode)."""
    from mcprl.errors import UserError

    try:
        typer_app()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
