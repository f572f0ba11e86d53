"""Inventory tasks: lookups (1-2), stock changes checked on the final state (3, 5), aggregates (4)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from mcprl.checks import ServerCheck
from mcprl.servers.checking import answered, replay
from mcprl.servers.inventory.world import CATALOGUE, Item, Warehouse
from mcprl.types import Scenario, Trajectory

SERVER = "python -m mcprl.servers.inventory --seed {seed}"  # the world these tasks ask about (mcprl.tasks)

Task = tuple[str, dict[str, Any], list[str]]  # text, check fields, tools


# One solved first turn, shown to the policy before its task (its demonstration): small models
# make no tool calls zero-shot, and an example that looks like a real task works far better than a
# generic one (docs/benchmarks.md).
DEMONSTRATION = [
    {"role": "user", "content": "How many units of item SKU-1000 are in stock?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_example",
                "type": "function",
                "function": {"name": "get_item", "arguments": '{"sku": "SKU-1000"}'},
            }
        ],
    },
]


def _by_sku(rng: random.Random, w: Warehouse) -> Task:
    item = rng.choice(list(w.items.values()))
    if rng.random() < 0.5:
        return f"What is the price of item {item.sku}?", {"answer": item.price}, ["get_item"]
    return f"How many units of item {item.sku} are in stock?", {"answer": str(item.stock)}, ["get_item"]


def _unique_names(w: Warehouse) -> list[Item]:
    """Items whose full name finds only themselves, so a name task has one right item."""
    return [i for i in w.items.values() if w.search_items(i.name).count("\n") == 0]


def _by_name(rng: random.Random, w: Warehouse) -> Task:
    item = rng.choice(_unique_names(w))
    if rng.random() < 0.5:
        return f"What does the {item.name} cost?", {"answer": item.price}, ["search_items"]
    return f"How many {item.name} units are in stock?", {"answer": str(item.stock)}, ["search_items"]


def _change_by_name(rng: random.Random, w: Warehouse) -> Task:
    item = rng.choice([i for i in _unique_names(w) if i.stock >= 5])
    if rng.random() < 0.5:
        change = rng.randint(5, 50)
        text = f"We received {change} more units of the {item.name}. Add them to its stock."
    else:
        change = -rng.randint(1, min(item.stock, 20))
        text = f"A customer bought {-change} units of the {item.name}. Remove them from its stock."
    return text, {"expect_change": {"sku": item.sku, "change": change}}, ["search_items", "update_stock"]


def _lowest_in(w: Warehouse, categories: list[str]) -> tuple[str, Item]:
    """A category whose lowest-stock item is unique, and that item."""
    for category in categories:
        items = sorted((i for i in w.items.values() if i.category == category), key=lambda i: i.stock)
        if items[0].stock < items[1].stock:
            return category, items[0]
    raise ValueError("no category has a unique lowest-stock item")


def _aggregate(rng: random.Random, w: Warehouse) -> Task:
    category = rng.choice(list(CATALOGUE))
    if rng.random() < 0.5:
        total = sum(i.stock for i in w.items.values() if i.category == category)
        return (
            f"How many units are in stock in total across the {category} category?",
            {"answer": str(total)},
            ["list_items"],
        )
    category, item = _lowest_in(w, rng.sample(list(CATALOGUE), len(CATALOGUE)))
    return (
        f"Which item in the {category} category has the lowest stock? Answer with its name.",
        {"answer": item.name},
        ["list_items"],
    )


def _restock_lowest(rng: random.Random, w: Warehouse) -> Task:
    category, item = _lowest_in(w, rng.sample(list(CATALOGUE), len(CATALOGUE)))
    change = rng.choice((10, 20, 25, 50))
    text = f"Restock the {category} item with the lowest stock by {change} units."
    return text, {"expect_change": {"sku": item.sku, "change": change}}, ["list_items", "update_stock"]


KINDS: dict[int, Callable[[random.Random, Warehouse], Task]] = {
    1: _by_sku,
    2: _by_name,
    3: _change_by_name,
    4: _aggregate,
    5: _restock_lowest,
}


def generate(
    n: int, seed: int = 0, difficulties: Sequence[int] = (1, 2, 3, 4, 5), world_seed: int = 0
) -> list[Scenario]:
    """Tasks about the warehouse `python -m mcprl.servers.inventory --seed {world_seed}` serves."""
    rng = random.Random(f"inventory-tasks/{seed}")
    world = Warehouse(world_seed)
    scenarios = []
    for i in range(n):
        difficulty = rng.choice(list(difficulties))
        text, fields, tools = KINDS[difficulty](rng, world)
        scenarios.append(
            Scenario(
                id=f"inventory-{world_seed}-{seed}-{i}",
                task=text,
                difficulty=difficulty,
                answer=fields.get("answer"),
                check=ServerCheck(server="inventory", world_seed=world_seed, **fields),
                tools=tools,
            )
        )
    return scenarios


def check(scenario: Scenario, trajectory: Trajectory) -> float:
    """Questions: the final answer. Stock changes: replaying the trajectory's successful calls on a
    fresh warehouse must leave exactly the expected stock levels (one item changed by the amount)."""
    spec = scenario.check
    assert isinstance(spec, ServerCheck)
    if "answer" in spec:
        return answered(trajectory, spec["answer"], scenario.task)
    world = Warehouse(spec["world_seed"])
    replay(world, Warehouse.TOOL_NAMES, trajectory)
    expected = Warehouse(spec["world_seed"]).stock_levels()
    expected[spec["expect_change"]["sku"]] += spec["expect_change"]["change"]
    return float(world.stock_levels() == expected)
