"""The warehouse: a deterministic item list built from a seed, and the operations the tools expose.

The methods named in `TOOL_NAMES` are the MCP tools themselves (their docstrings and annotated
parameters become the tool descriptions and schemas), so replaying a trajectory's tool calls on
a fresh `Warehouse(seed)` reproduces exactly what the live server did.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

CATALOGUE = {
    "tools": ("hammer", "screwdriver", "wrench", "drill", "saw", "chisel", "pliers", "level"),
    "electrical": (
        "extension cord",
        "light bulb",
        "switch",
        "outlet",
        "fuse",
        "wire spool",
        "battery pack",
        "flashlight",
    ),
    "plumbing": (
        "pipe wrench",
        "faucet",
        "valve",
        "pipe fitting",
        "drain snake",
        "hose clamp",
        "shower head",
        "plunger",
    ),
    "garden": ("rake", "shovel", "garden hose", "pruner", "wheelbarrow", "sprinkler", "seed tray", "trowel"),
    "paint": (
        "paint roller",
        "brush",
        "primer",
        "drop cloth",
        "paint tray",
        "spray paint",
        "masking tape",
        "putty knife",
    ),
    "fasteners": ("wood screw", "anchor bolt", "nail box", "hex nut", "washer set", "rivet pack", "cable tie", "hook"),
}
ADJECTIVES = ("steel", "brass", "compact", "heavy-duty", "cordless", "premium", "basic", "pro", "mini", "industrial")
ITEMS_PER_CATEGORY = 6
MAX_CHANGE = 1000

Sku = Annotated[str, Field(description="the item's SKU, e.g. SKU-1234 (list_items and search_items show them)")]


@dataclass
class Item:
    sku: str
    name: str
    category: str
    stock: int
    price_cents: int
    location: str

    @property
    def price(self) -> str:
        return f"{self.price_cents // 100}.{self.price_cents % 100:02d}"

    def line(self) -> str:
        return f"{self.sku} | {self.name} | {self.category} | stock: {self.stock} | price: ${self.price}"


class Warehouse:
    TOOL_NAMES = ("list_categories", "list_items", "search_items", "get_item", "update_stock")

    def __init__(self, seed: int = 0) -> None:
        rng = random.Random(f"inventory/{seed}")
        skus = rng.sample(range(1000, 10000), len(CATALOGUE) * ITEMS_PER_CATEGORY)
        self.items: dict[str, Item] = {}
        for category, nouns in CATALOGUE.items():
            for noun in rng.sample(nouns, ITEMS_PER_CATEGORY):
                sku = f"SKU-{skus.pop()}"
                self.items[sku] = Item(
                    sku=sku,
                    name=f"{rng.choice(ADJECTIVES)} {noun}",
                    category=category,
                    stock=rng.randint(0, 120),
                    price_cents=rng.randint(99, 25000),
                    location=f"aisle {rng.randint(1, 12)}, bin {rng.randint(1, 40)}",
                )

    def stock_levels(self) -> dict[str, int]:
        return {sku: item.stock for sku, item in self.items.items()}

    def _item(self, sku: str) -> Item:
        item = self.items.get(sku.strip().upper())
        if item is None:
            raise ValueError(f"no item with SKU {sku!r}; use search_items or list_items to find SKUs")
        return item

    def list_categories(self) -> str:
        """List the warehouse's item categories."""
        return ", ".join(CATALOGUE)

    def list_items(
        self, category: Annotated[str, Field(description="only items in this category; empty for all items")] = ""
    ) -> str:
        """List items with SKU, name, category, stock and price, one per line."""
        wanted = category.strip().lower()
        if wanted and wanted not in CATALOGUE:
            raise ValueError(f"no category {category!r}; categories are: {self.list_categories()}")
        return "\n".join(item.line() for item in self.items.values() if not wanted or item.category == wanted)

    def search_items(
        self, query: Annotated[str, Field(description="words to look for in item names, e.g. 'drill'")]
    ) -> str:
        """Find items whose name or category contains every word of the query."""
        words = query.lower().split()
        found = [i.line() for i in self.items.values() if all(w in f"{i.name} {i.category}" for w in words)]
        return "\n".join(found) if found else f"no items match {query!r}"

    def get_item(self, sku: Sku) -> str:
        """Show one item's details: name, category, stock, price and warehouse location."""
        item = self._item(sku)
        return f"{item.line()} | location: {item.location}"

    def update_stock(
        self,
        sku: Sku,
        change: Annotated[int, Field(description="units to add (positive, restock) or remove (negative, sold)")],
    ) -> str:
        """Change an item's stock by a number of units and return the new stock level."""
        item = self._item(sku)
        if change == 0 or abs(change) > MAX_CHANGE:
            raise ValueError(f"change must be a non-zero number of units between -{MAX_CHANGE} and {MAX_CHANGE}")
        if item.stock + change < 0:
            raise ValueError(f"only {item.stock} units of {item.sku} in stock; cannot remove {-change}")
        before, item.stock = item.stock, item.stock + change
        return f"{item.sku} ({item.name}): stock {before} -> {item.stock}"
