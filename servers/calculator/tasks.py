"""Calculator tasks: integer expressions whose difficulty is their number of operations (1..5)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from mcprl.checks import ServerCheck, numbers
from mcprl.servers.checking import answered, successful_tool_calls
from mcprl.types import Scenario, Trajectory

SERVER = "python -m mcprl.servers.calculator --seed {seed}"  # the world these tasks ask about (mcprl.tasks)

TOOL_FOR = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}
PHRASES = ("What is {}? Use the tools.", "Compute {} using the tools.", "Use the calculator tools to work out {}.")


# One solved first turn, shown to the policy before its task (its demonstration): small models
# make no tool calls zero-shot, and an example that looks like a real task works far better than a
# generic one (docs/benchmarks.md).
DEMONSTRATION = [
    {"role": "user", "content": "What is 3 + 4? Use the tools."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_example", "type": "function", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}}
        ],
    },
]


def _expression(rng: random.Random, n_ops: int) -> tuple[str, int, list[str]]:
    """A left-nested expression with exact integer intermediate results: text, value, ops used."""
    value = rng.randint(10, 99)
    text = str(value)
    ops: list[str] = []
    while len(ops) < n_ops:
        op = rng.choice("+-*/")
        if op == "/":
            divisors = [d for d in range(2, 13) if value % d == 0]
            if not divisors:
                continue
            operand = rng.choice(divisors)
            value //= operand
        elif op == "*":
            operand = rng.randint(11, 99) if n_ops == 1 else rng.randint(2, 19)
            value *= operand
        else:
            operand = rng.randint(10, 999)
            value = value + operand if op == "+" else value - operand
        text = f"{text} {op} {operand}" if not ops else f"({text}) {op} {operand}"
        ops.append(op)
    return text, value, ops


def generate(n: int, seed: int = 0, difficulties: Sequence[int] = (1, 2, 3, 4, 5)) -> list[Scenario]:
    rng = random.Random(f"calculator/{seed}")
    scenarios = []
    for i in range(n):
        difficulty = rng.choice(list(difficulties))
        text, value, ops = _expression(rng, difficulty)
        scenarios.append(
            Scenario(
                id=f"calculator-{seed}-{i}",
                task=rng.choice(PHRASES).format(text),
                difficulty=difficulty,
                answer=str(value),
                check=ServerCheck(server="calculator", answer=str(value)),
                tools=sorted({TOOL_FOR[op] for op in ops}),
            )
        )
    return scenarios


# Partial credit, so that a model that solves no task yet still sees reward differences within
# a group (GRPO learns nothing from a group that is all zeros). Success rates count only 1.0.
COMPUTED_BUT_NOT_ANSWERED = 0.5
CALLED_A_NEEDED_TOOL = 0.1


def check(scenario: Scenario, trajectory: Trajectory) -> float:
    """1.0 when the final answer gives the expression's value; 0.5 when a tool returned that value
    but the answer did not state it; 0.1 for a successful call to a tool the task needs; else 0."""
    assert isinstance(scenario.check, ServerCheck)
    answer = scenario.check["answer"]
    if answered(trajectory, answer, scenario.task):
        return 1.0
    results = [str(m.get("content") or "") for m in trajectory.agent_messages() if m.get("role") == "tool"]
    if any(float(answer) in numbers(r) for r in results if not r.startswith("Error")):
        return COMPUTED_BUT_NOT_ANSWERED
    if any(name in scenario.tools for name, _ in successful_tool_calls(trajectory.agent_messages())):
        return CALLED_A_NEEDED_TOOL
    return 0.0
