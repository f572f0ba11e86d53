"""Email tasks: questions about facts planted in the mailbox, easiest when the answer shows in a
search snippet (1), hardest when several emails must be found and added up (5)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from mcprl.checks import ServerCheck
from mcprl.servers.checking import answered
from mcprl.servers.email.mailbox import Mailbox
from mcprl.types import Scenario, Trajectory

SERVER = "python -m mcprl.servers.email --seed {seed}"  # the world these tasks ask about (mcprl.tasks)


# One solved first turn, shown to the policy before its task (its demonstration): small models
# make no tool calls zero-shot, and an example that looks like a real task works far better than a
# generic one (docs/benchmarks.md).
DEMONSTRATION = [
    {"role": "user", "content": "What is the confirmation code for my hotel in Oslo?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_example",
                "type": "function",
                "function": {"name": "search_emails", "arguments": '{"query": "Oslo hotel confirmation"}'},
            }
        ],
    },
]


def generate(
    n: int, seed: int = 0, difficulties: Sequence[int] = (1, 2, 3, 4, 5), world_seed: int = 0
) -> list[Scenario]:
    """Questions about the mailbox `python -m mcprl.servers.email --seed {world_seed}` serves."""
    rng = random.Random(f"email-tasks/{seed}")
    facts = [f for f in Mailbox(world_seed).facts if f.difficulty in difficulties]
    if not facts:
        raise ValueError(f"no email tasks with difficulty in {list(difficulties)}")
    scenarios = []
    for i in range(n):
        fact = rng.choice(facts)
        scenarios.append(
            Scenario(
                id=f"email-{world_seed}-{seed}-{i}",
                task=fact.question,
                difficulty=fact.difficulty,
                answer=fact.answer,
                check=ServerCheck(server="email", world_seed=world_seed, answer=fact.answer),
                tools=fact.tools,
            )
        )
    return scenarios


def check(scenario: Scenario, trajectory: Trajectory) -> float:
    """1.0 when the final answer contains the planted answer (a number must be the last one given)."""
    assert isinstance(scenario.check, ServerCheck)
    return answered(trajectory, scenario.check["answer"], scenario.task)
