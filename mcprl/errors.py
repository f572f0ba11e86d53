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
    errors = error.errors()
    first = errors[0]
    loc = first.get("loc", ())
    # a value none of a union's kinds takes: pydantic says why for each kind, under the field's path and the kind's
    # name ("gradient_checkpointing.bool", "gradient_checkpointing.literal['auto']"), each a problem of another type;
    # said as one, of the field
    kinds = [e for e in errors if e.get("loc", ())[:-1] == loc[:-1] and e.get("input") == first.get("input")]
    if len(loc) > 1 and len({e["type"] for e in kinds}) == len(kinds) > 1:
        loc, said = loc[:-1], "; or ".join(e["msg"] for e in kinds)
    else:
        said = first["msg"]
    where = ".".join(str(p) for p in loc if p != "body") or whole
    message = said.removeprefix("Value error, ")  # a validator's own ValueError says it all
    return f"{where}: {message}" if where else message


MAX_MESSAGE = 500  # characters of an error message shown to the model or on the console


def clip(message: str, limit: int = MAX_MESSAGE) -> str:
    """`message` on one line and at most about `limit` characters: an error can quote its input
    (a 75,000-value enum, a server's whole output), and neither a model's context nor a console
    line is the place for that."""
    line = " ".join(message.split())
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line) - limit} more characters)"
