"""The inventory MCP server: the warehouse's operations as tools, plus a resource and a prompt
(context a scenario synthesizer can use)."""

from __future__ import annotations

from typing import Any

from mcprl.servers import serve
from mcprl.servers.inventory.world import Warehouse


def build(seed: int = 0) -> Any:
    warehouse = Warehouse(seed)
    server = serve.new_server(
        "inventory",
        "A hardware warehouse. Look items up by SKU, name or category, and change stock levels.",
    )
    serve.add_tools(server, [getattr(warehouse, name) for name in Warehouse.TOOL_NAMES], writes=["update_stock"])

    @server.resource(
        "inventory://categories", name="categories", description="The item categories.", mime_type="text/plain"
    )
    def categories() -> str:
        return warehouse.list_categories()

    @server.prompt(name="restock_plan", description="Ask for the low-stock items of a category to be restocked.")
    def restock_plan(category: str) -> str:
        return f"Find the {category} items with fewer than 10 units in stock and restock each of them by 20 units."

    return server
