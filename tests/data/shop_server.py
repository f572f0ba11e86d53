"""A small shop for the grounding tests: a catalogue to list and look up, a clock, a cart whose
state lives in the process, a query tool that reports errors in plain text, and a tool that hangs.

    python tests/data/shop_server.py [--transport http --port P]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import time  # noqa: E402
from typing import Annotated  # noqa: E402

from pydantic import Field  # noqa: E402

from mcprl.servers import serve  # noqa: E402

PRODUCTS = {
    "P-101": ("blue mug", 12.5, 4),
    "P-102": ("red kettle", 39.0, 11),
    "P-103": ("green teapot", 27.25, 0),
    "P-104": ("steel spoon set", 8.75, 25),
}
CART: list[str] = []
HANG = "--hang" in sys.argv  # also offer a tool that never answers
if HANG:
    sys.argv.remove("--hang")


def _line(pid: str) -> str:
    name, price, stock = PRODUCTS[pid]
    return f"{pid} | {name} | price: {price} | stock: {stock}"


def list_products() -> str:
    """List the products with their id, name, price and stock."""
    return "\n".join(_line(pid) for pid in PRODUCTS)


def get_product(product_id: Annotated[str, Field(description="the product's id, e.g. P-101")]) -> str:
    """Show one product's details, including its colour."""
    if product_id not in PRODUCTS:
        raise ValueError(f"no product {product_id!r}")
    return f"{_line(product_id)} | colour: {PRODUCTS[product_id][0].split()[0]}"


def now() -> str:
    """The shop's clock, in seconds."""
    return f"{time.time():.6f}"


def run_query(query: Annotated[str, Field(description="a SQL query")]) -> str:
    """Run a read-only SQL query on the shop's database."""
    return f'Database error: near "{query.split()[0] if query.split() else query}": syntax error'


def add_to_cart(product_id: Annotated[str, Field(description="the product's id, e.g. P-101")]) -> str:
    """Add a product to the cart."""
    CART.append(product_id)
    return f"added {product_id}"


def cart_size() -> str:
    """How many products the cart holds."""
    return str(len(CART))


def wait_forever() -> str:
    """Look up the delivery estimate (this one never answers)."""
    time.sleep(3600)
    return "never"


def build(seed: int = 0):
    server = serve.new_server("shop", "A small shop.")
    tools = [list_products, get_product, now, run_query, add_to_cart, cart_size] + ([wait_forever] if HANG else [])
    serve.add_tools(server, tools, writes=["add_to_cart"])
    return server


if __name__ == "__main__":
    serve.main(build, "A small shop for the grounding tests.")
