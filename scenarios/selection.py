"""Which grounded tasks a run gets: one per meaning, however worded or however its chain found its
answer (`meaning`: the field it asks for, its answer, the values it states, but not the values of
filters that changed nothing), the most focused of them kept (`focus`: the answer in the fewest
records, then the fewest calls and arguments), spread over the tools and, within a tool, over what
they ask for (`select`)."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from mcprl.checks import normalize_text
from mcprl.scenarios.phrasing import value_text
from mcprl.types import Scenario


def focus(task: Scenario) -> tuple[int, int, int]:
    """How hard a grounded task's reference is to follow: the records of the result that holds its
    answer (one, or a listing to find a line in), then its calls, then the arguments they take."""
    return task.metadata.get("records", 1), len(task.reference), sum(len(c.arguments) for c in task.reference)


def meaning(task: Scenario, optional: Mapping[str, set[str]]) -> tuple[Any, ...]:
    """What a task asks, whatever its wording or the chain that grounded it: the field it asks for (else
    the tool its chain ends with), its answer and the values it states, but those of `optional`
    parameters (tool -> names): a filter that left the answer where it was does not make another question."""
    given = task.metadata.get("given") or [value_text(v) for v in task.reference[-1].arguments.values()]
    filters = {
        normalize_text(value_text(v))
        for c in task.reference
        for k, v in c.arguments.items()
        if k in optional.get(c.tool, ())
    }
    return (
        task.metadata.get("field") or task.reference[-1].tool,
        normalize_text(str(task.answer)),
        task.read_back is not None,
        tuple(sorted(g for g in map(normalize_text, map(str, given)) if g not in filters)),
    )


def optional_parameters(tools: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Each tool's parameters that its input schema does not require."""
    out = {}
    for tool in tools:
        schema = tool.get("inputSchema") or {}
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        out[tool["name"]] = set(properties) - set(schema.get("required") or [])
    return out


def select(
    tasks: list[Scenario], n: int, *, seed: int, optional: Mapping[str, set[str]] | None = None
) -> tuple[list[Scenario], Counter]:
    """At most `n` tasks, one per meaning (`meaning`: one question worded four ways, or asked with filters that
    change nothing, is one task; the most focused kept), spread over the tools
    their chains end with and,
    within a tool, over what they ask for (the field; round robin, each group's tasks shuffled by
    the seed): a mailbox's every email has a subject, few a confirmation code, and both are asked
    about as often. Also the count of those left out."""
    rng = random.Random(f"{seed}/grounded/select")
    dropped: Counter = Counter()
    unique: dict[str, Scenario] = {}
    for t in tasks:
        key = repr(meaning(t, optional or {}))
        if key in unique:
            dropped["duplicate"] += 1
            # of the chains that answer one task, the one a rollout can best follow: the answer in the
            # fewest records (`get_item` over a listing's fifteenth line), then the fewest calls
            if focus(t) < focus(unique[key]):
                unique[key] = t
        else:
            unique[key] = t
    by_tool: dict[str, dict[str, list[Scenario]]] = defaultdict(lambda: defaultdict(list))
    for t in unique.values():
        by_tool[t.reference[-1].tool][t.metadata.get("field", t.metadata["kind"])].append(t)
    for asks in by_tool.values():
        for group in asks.values():
            rng.shuffle(group)
            group.sort(key=lambda t: t.difficulty or 1)  # easy first within a group: a curriculum's start
    turn = {tool: 0 for tool in by_tool}  # the next group of each tool's to take from

    def take(tool: str) -> Scenario:
        groups = [g for _, g in sorted(by_tool[tool].items()) if g]
        turn[tool] += 1
        return groups[(turn[tool] - 1) % len(groups)].pop(0)

    picked: list[Scenario] = []
    while len(picked) < n and any(g for asks in by_tool.values() for g in asks.values()):
        for tool in sorted(by_tool):
            if any(by_tool[tool].values()) and len(picked) < n:
                picked.append(take(tool))
    if left := sum(len(g) for asks in by_tool.values() for g in asks.values()):
        dropped["beyond the number asked for"] += left
    return picked, dropped
