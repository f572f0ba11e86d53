"""A deterministic agent for the inventory's tasks (tests/tools/test_replay.py): it reads the task, makes the
calls a person would (a lookup, a search, a listing, a stock change and a read after it) and answers
with what the last result said. The same tasks give the same calls, so a replay can answer them."""

import json
import re

SKU = re.compile(r"SKU-\d+")


def _name(task: str) -> str | None:
    found = re.search(r"(?:of the|does the|How many) ([a-z0-9 -]+?)(?:\.| cost| units)", task)
    return found.group(1) if found else None


async def inventory(rec, config):
    messages = [{"role": "user", "content": rec.scenario.task}]
    rec.conversation = messages

    async def call(name: str, **arguments) -> str:
        n = sum(m["role"] == "tool" for m in messages)
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ],
            }
        )
        out = await rec.tools.call(name, arguments)
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": out.text})
        return out.text

    task = rec.scenario.task
    text = ""
    if sku := SKU.search(task):
        text = await call("get_item", sku=sku.group())
    elif category := re.search(r"(?:the|Restock the) ([a-z ]+?) (?:category|item with)", task):
        text = await call("list_items", category=category.group(1))
        if task.startswith("Restock") and (lines := [line for line in text.splitlines() if "stock:" in line]):
            lowest = min(lines, key=lambda line: int(re.search(r"stock: (\d+)", line).group(1)))
            sku = SKU.search(lowest).group()
            await call("update_stock", sku=sku, change=int(re.search(r"by (\d+)", task).group(1)))
            text = await call("get_item", sku=sku)
    elif name := _name(task):
        text = await call("search_items", query=name)
        change = re.search(r"(received|bought) (\d+)", task)
        if change and (sku := SKU.search(text)):
            units = int(change.group(2)) * (1 if change.group(1) == "received" else -1)
            await call("update_stock", sku=sku.group(), change=units)
            text = await call("get_item", sku=sku.group())
    messages.append({"role": "assistant", "content": text})
    return text


async def sampled_then_inventory(rec, config):
    """One reply sampled from the policy (so the rollout has tokens to train), then `inventory`'s calls."""
    reply = await rec.openai_client().chat.completions.create(
        model=rec.model_name,
        messages=[{"role": "user", "content": rec.scenario.task}],
        max_tokens=config.max_tokens,
        temperature=config.temperature,
    )
    answer = await inventory(rec, config)
    rec.conversation.insert(1, {"role": "assistant", "content": reply.choices[0].message.content or ""})
    return answer
