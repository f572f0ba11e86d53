"""How every console script of ours (`mcprl`, `autorl`) runs its Typer app."""

from __future__ import annotations

import sys

import typer

from mcprl.errors import UserError, clip


def run_app(typer_app: typer.Typer) -> None:
    """Run a Typer app as a console script: user errors print one line and exit 2, never a
    traceback; usage errors and exit codes are click's own (standalone mode)."""
    try:
        typer_app()
    except (UserError, BaseExceptionGroup) as e:
        # a UserError raised in a task group (concurrent generator calls, tool sessions) arrives
        # wrapped: it is still one line, unless something else failed beside it
        found = _user_error(e)
        if found is None:
            raise
        print(f"error: {clip(str(found), 2000)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


def _user_error(error: BaseException):
    """The UserError `error` is or (as the only kind of failure in it) a group holds, else None."""
    if isinstance(error, UserError):
        return error
    if isinstance(error, BaseExceptionGroup):
        found = [_user_error(e) for e in error.exceptions]
        if found and all(f is not None for f in found):
            return found[0]
    return None
