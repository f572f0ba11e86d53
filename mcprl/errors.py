"""User-facing errors: one line saying what is wrong and how to fix it; the CLI prints it without a traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class UserError(Exception):
    """A problem with the user's input or environment, with the fix in the message."""


def first_problem(error: ValidationError, whole: str = "") -> str:
    """A pydantic error as one line, `field.path: message`, from its first problem (the rest
    usually follow from it); `whole` names the value when the problem is at its root. A
    request body's `body` prefix is dropped, so an HTTP client sees its own field names."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or whole
    message = first["msg"].removeprefix("Value error, ")  # a validator's own ValueError says it all
    return f"{where}: {message}" if where else message


MAX_MESSAGE = 500  # characters of an error message shown to the model or on the console


def clip(message: str, limit: int = MAX_MESSAGE) -> str:
    """`message` on one line and at most about `limit` characters: an error can quote its input
    (a 75,000-value enum, a server's whole output), and neither a model's context nor a console
    line is the place for that."""
    line = " ".join(message.split())
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line) - limit} more characters)"
