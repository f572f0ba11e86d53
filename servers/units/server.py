"""The units server's tools: exact conversions between common units, stateless."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from mcprl.servers import serve
from mcprl.servers.calculator.server import format_number

# Each unit's size in its quantity's base unit (metre, kilogram, litre, second).
FACTORS: dict[str, dict[str, float]] = {
    "length": {
        "mm": 0.001,
        "cm": 0.01,
        "m": 1.0,
        "km": 1000.0,
        "in": 0.0254,
        "ft": 0.3048,
        "yd": 0.9144,
        "mi": 1609.344,
    },
    "mass": {"g": 0.001, "kg": 1.0, "t": 1000.0, "oz": 0.028349523125, "lb": 0.45359237},
    "volume": {"ml": 0.001, "l": 1.0, "tsp": 0.00492892159375, "cup": 0.2365882365, "gal": 3.785411784},
    "time": {"s": 1.0, "min": 60.0, "h": 3600.0, "day": 86400.0, "week": 604800.0},
}
QUANTITY = {unit: quantity for quantity, units in FACTORS.items() for unit in units}
Unit = Literal[
    "mm",
    "cm",
    "m",
    "km",
    "in",
    "ft",
    "yd",
    "mi",
    "g",
    "kg",
    "t",
    "oz",
    "lb",
    "ml",
    "l",
    "tsp",
    "cup",
    "gal",
    "s",
    "min",
    "h",
    "day",
    "week",
]
Scale = Literal["C", "F", "K"]
Quantity = Literal["length", "mass", "volume", "time", "temperature"]


def _base(value: float, unit: str) -> float:
    return value * FACTORS[QUANTITY[unit]][unit]


def _same_quantity(a: str, b: str) -> None:
    if QUANTITY[a] != QUANTITY[b]:
        raise ValueError(f"cannot relate {a} ({QUANTITY[a]}) to {b} ({QUANTITY[b]}); use units of one quantity")


def convert(
    value: Annotated[float, Field(description="the amount to convert")],
    from_unit: Annotated[Unit, Field(description="the unit of value")],
    to_unit: Annotated[Unit, Field(description="the unit to convert to (same quantity)")],
) -> str:
    """Convert an amount of length, mass, volume or time from one unit to another."""
    _same_quantity(from_unit, to_unit)
    return f"{format_number(_base(value, from_unit) / FACTORS[QUANTITY[to_unit]][to_unit])} {to_unit}"


def convert_temperature(
    value: Annotated[float, Field(description="the temperature to convert")],
    from_scale: Annotated[Scale, Field(description="C (Celsius), F (Fahrenheit) or K (Kelvin)")],
    to_scale: Annotated[Scale, Field(description="the scale to convert to")],
) -> str:
    """Convert a temperature between Celsius, Fahrenheit and Kelvin."""
    kelvin = {"C": value + 273.15, "F": (value - 32) * 5 / 9 + 273.15, "K": value}[from_scale]
    if kelvin < 0:
        raise ValueError(f"{format_number(value)} {from_scale} is below absolute zero")
    out = {"C": kelvin - 273.15, "F": (kelvin - 273.15) * 9 / 5 + 32, "K": kelvin}[to_scale]
    return f"{format_number(round(out, 10))} {to_scale}"


def compare(
    a: Annotated[float, Field(description="the first amount")],
    a_unit: Annotated[Unit, Field(description="the unit of a")],
    b: Annotated[float, Field(description="the second amount")],
    b_unit: Annotated[Unit, Field(description="the unit of b (same quantity as a_unit)")],
) -> str:
    """Say which of two amounts of the same quantity is larger, and by what ratio."""
    _same_quantity(a_unit, b_unit)
    x, y = _base(a, a_unit), _base(b, b_unit)
    first, second = f"{format_number(a)} {a_unit}", f"{format_number(b)} {b_unit}"
    if x == y:
        return f"{first} equals {second}"
    big, small, ratio = (
        (first, second, x / y if y else float("inf")) if x > y else (second, first, y / x if x else float("inf"))
    )
    return f"{big} is larger than {small}" + (
        f" ({format_number(round(ratio, 6))} times)" if ratio != float("inf") else ""
    )


def list_units(quantity: Annotated[Quantity, Field(description="the kind of quantity")]) -> str:
    """List the units this server knows for a quantity."""
    return "C, F, K" if quantity == "temperature" else ", ".join(FACTORS[quantity])


TOOLS = (convert, convert_temperature, compare, list_units)


def build(seed: int = 0) -> Any:
    """Stateless: the seed changes nothing; it is accepted like every shipped server's."""
    server = serve.new_server(
        "units", "Unit conversions. Convert between units of one quantity, or compare two amounts."
    )
    serve.add_tools(server, TOOLS)
    return server
