"""The calculator's tools: stateless arithmetic on two numbers at a time."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import Field

from mcprl.servers import serve


def format_number(x: float) -> str:
    """Integers print without a decimal point (444, not 444.0); others with up to 10 significant digits."""
    if not math.isfinite(x):
        raise ValueError("the result is not a finite number")
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.10g}"


def add(
    a: Annotated[float, Field(description="first number")], b: Annotated[float, Field(description="second number")]
) -> str:
    """Add two numbers and return a + b."""
    return format_number(a + b)


def subtract(
    a: Annotated[float, Field(description="number to subtract from")],
    b: Annotated[float, Field(description="number to subtract")],
) -> str:
    """Subtract b from a and return a - b."""
    return format_number(a - b)


def multiply(
    a: Annotated[float, Field(description="first factor")], b: Annotated[float, Field(description="second factor")]
) -> str:
    """Multiply two numbers and return a * b."""
    return format_number(a * b)


def divide(
    a: Annotated[float, Field(description="dividend")], b: Annotated[float, Field(description="divisor, not zero")]
) -> str:
    """Divide a by b and return a / b."""
    if b == 0:
        raise ValueError("division by zero")
    return format_number(a / b)


def power(
    base: Annotated[float, Field(description="the base")],
    exponent: Annotated[float, Field(description="the exponent, between -100 and 100")],
) -> str:
    """Raise base to the power exponent and return base ** exponent."""
    if abs(exponent) > 100:
        raise ValueError("exponent must be between -100 and 100")
    try:
        return format_number(math.pow(base, exponent))
    except (OverflowError, ValueError):
        raise ValueError(f"{format_number(base)} ** {format_number(exponent)} is not a finite real number") from None


TOOLS = (add, subtract, multiply, divide, power)


def build(seed: int = 0) -> Any:
    """The calculator has no state, so the seed changes nothing; it is accepted like every server's."""
    server = serve.new_server("calculator", "Arithmetic on two numbers at a time. Chain calls for longer expressions.")
    serve.add_tools(server, TOOLS)
    return server
