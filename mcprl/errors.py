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
    return f"{where}: {first['msg']}" if where else first["msg"]
