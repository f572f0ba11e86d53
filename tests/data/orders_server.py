"""A listing whose records hold names, dates, notes and a reference of an id's form, and a tool that takes one
order by that reference under a name no field shares (`handle`), as a git server's `git_show` takes a commit's
hash as a `revision`.

    python tests/data/orders_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.servers import serve  # noqa: E402

ORDERS = [
    {
        "customer": "Ann Lee",
        "placed": "2024-03-05",
        "note": "Leave it at the door",
        "city": "Porto",
        "status": "shipped",
        "carrier": "Speedy Post",
        "ref": "ORD7f3a9c21",
    },
    {
        "customer": "Bob Stone",
        "placed": "2024-03-07",
        "note": "Gift wrap please",
        "city": "Lyon",
        "status": "packed",
        "carrier": "Rail Freight",
        "ref": "ORD0b44de90",
    },
    {
        "customer": "Carla Diaz",
        "placed": "2024-03-09",
        "note": "Call before coming",
        "city": "Oslo",
        "status": "paid",
        "carrier": "Blue Van",
        "ref": "ORD5c1e7a08",
    },
]


def list_orders() -> list[dict]:
    """List the orders."""
    return ORDERS


def order_detail(handle: str) -> dict:
    """One order's items and total."""
    for order in ORDERS:
        if order["ref"] == handle:
            return {"items": 3, "total": 42.5, "ref": handle}
    raise ValueError(f"no order {handle!r}")


def build(seed: int = 0):
    server = serve.new_server("orders", "Orders.")
    serve.add_tools(server, [list_orders, order_detail])
    return server


if __name__ == "__main__":
    serve.main(build, "Orders.")
