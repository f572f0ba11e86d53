"""Tasks played against the live servers through the MCP client, scored by the checkers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from mcprl import tasks
from mcprl.tools import ServerSpec, ToolSession, open_session
from mcprl.types import Trajectory

pytestmark = pytest.mark.anyio


async def play(
    session: ToolSession, calls: list[tuple[str, dict[str, Any]]], messages: list[dict[str, Any]]
) -> list[str]:
    """Make the calls as a model would, appending OpenAI-format messages; return the result texts."""
    texts = []
    for name, args in calls:
        call_id = f"call_{len(messages)}"
        outcome = await session.call(name, json.dumps(args))
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": outcome.text},
        ]
        texts.append(outcome.text)
    return texts


async def test_a_live_restock_is_scored_by_replaying_its_calls():
    inventory = tasks.get("inventory")
    scenario = inventory.generate(1, seed=3, difficulties=(5,))[0]
    category = re.search(r"Restock the (\w+) item", scenario.task).group(1)
    change = scenario.check["expect_change"]["change"]
    spec = ServerSpec.parse(inventory.command(seed=0))

    async with open_session(spec) as session:
        messages: list[dict[str, Any]] = [{"role": "user", "content": scenario.task}]
        (listing,) = await play(session, [("list_items", {"category": category})], messages)
        lowest = min(listing.splitlines(), key=lambda line: int(re.search(r"stock: (\d+)", line).group(1)))
        sku = lowest.split(" | ")[0]
        failed, done = await play(
            session,
            [("update_stock", {"sku": sku, "change": 100_000}), ("update_stock", {"sku": sku, "change": change})],
            messages,
        )
        assert failed.startswith("Error") and "->" in done
        messages.append({"role": "assistant", "content": f"Restocked {sku}."})
    assert inventory.check(scenario, Trajectory(messages=messages)) == 1.0

    async with open_session(spec) as session:
        messages = [{"role": "user", "content": scenario.task}]
        await play(session, [("update_stock", {"sku": sku, "change": change + 1})], messages)
        messages.append({"role": "assistant", "content": f"Restocked {sku}."})
    assert inventory.check(scenario, Trajectory(messages=messages)) == 0.0


async def test_a_live_email_question_is_answerable_in_one_search():
    email = tasks.get("email")
    scenario = email.generate(1, seed=0, difficulties=(1,))[0]
    city = re.search(r"flight to (\w+)", scenario.task).group(1)
    async with open_session(ServerSpec.parse(email.command(seed=0))) as session:
        messages: list[dict[str, Any]] = [{"role": "user", "content": scenario.task}]
        (found,) = await play(session, [("search_emails", {"query": f"flight {city} confirmed"})], messages)
    code = re.search(r"Confirmation code: (\w+)", found).group(1)
    messages.append({"role": "assistant", "content": f"Your confirmation code is {code}."})
    assert email.check(scenario, Trajectory(messages=messages)) == 1.0
