"""Held-out questions for mcp-units (PyPI), a server mcprl was never written for: questions a person
would ask, in words the grounding never writes, each answer the server's own (asked once here, so
the answer is what a right call returns).

    python bench/scenarios/make_heldout_units.py "mcp-units" > bench/scenarios/heldout-units.jsonl
"""

from __future__ import annotations

import json
import random
import sys

import anyio

from mcprl.tools import ServerSpec, ToolPool

# (tool, from, to, question with {v})
ASKS = [
    ("convert_temperature", "F", "C", "What is {v} degrees Fahrenheit in Celsius?"),
    ("convert_temperature", "C", "F", "Convert {v}°C to Fahrenheit."),
    ("convert_temperature", "F", "C", "A recipe says to bake at {v} F. What is that in Celsius?"),
    ("convert_temperature", "C", "F", "The thermometer reads {v} degrees Celsius. How much is that in Fahrenheit?"),
    ("convert_weight", "kg", "g", "How many grams are in {v} kg?"),
    ("convert_weight", "kg", "lb", "How many pounds is {v} kilograms?"),
    ("convert_weight", "oz", "g", "Convert {v} ounces to grams."),
    ("convert_weight", "lb", "kg", "My suitcase weighs {v} lb. How many kilograms is that?"),
    ("convert_volume", "cup", "tbsp", "How many tablespoons are in {v} cups?"),
    ("convert_volume", "l", "ml", "How many milliliters is {v} liters?"),
    ("convert_volume", "tsp", "ml", "A recipe needs {v} teaspoons of vanilla. How many ml is that?"),
    ("convert_volume", "ml", "cup", "How many cups are {v} ml of milk?"),
]
VALUES = {
    "convert_temperature": [-10, 0, 5, 12, 20, 25, 30, 37, 50, 68, 72, 100, 180, 350, 400, 425],
    "convert_weight": [0.5, 0.75, 1.5, 2, 3, 5, 8, 12, 16, 20, 25, 40, 50, 75, 100, 250],
    "convert_volume": [0.5, 0.75, 1.5, 2, 3, 4, 5, 8, 10, 12, 25, 50, 100, 250, 500, 750],
}


async def main(server: str) -> None:
    rng = random.Random(0)
    async with ToolPool(ServerSpec.parse(server)) as pool, pool.session() as session:
        for i in range(48):
            tool, src, dst, question = ASKS[i % len(ASKS)]
            value = rng.choice(VALUES[tool])
            outcome = await session.call(tool, {"value": value, "from_unit": src, "to_unit": dst})
            answer = json.loads(outcome.text)["value"]
            task = question.format(v=value)
            check = {"kind": "holds", "value": answer}
            print(json.dumps({"id": f"units-heldout-{i}", "task": task, "answer": str(answer), "check": check}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
