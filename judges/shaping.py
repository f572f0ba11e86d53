"""Tool-use shaping: a score for using the tools well, for any server, from the recorded messages
and the offered tool schemas alone.

A task reward that is all-or-nothing gives GRPO nothing to learn from while the policy solves no
task (every group scores 0). This judge scores how far the agent's best tool call got:

    1/4  its arguments parse as a JSON object
    2/4  ... and it names an offered tool
    3/4  ... and the arguments validate against that tool's input schema (no undeclared names)
    4/4  ... and the tool answered without error

An episode without a call (a prose answer, or a call the endpoint could not parse) scores 0.
Only the agent's own turns count: the demonstration before the task is skipped. It is combined
with the task's judge by `judges.combine.ShapedJudge`, which caps it below a solved task.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from judges.base import zero_failed
from mcprl.tools.client import schema_validator
from mcprl.types import Message, Trajectory, TrajectoryGroup

STAGES = 4


def agent_messages(trajectory: Trajectory) -> list[Message]:
    """The messages after the task (the last user message): what the agent did, without the
    system prompt and demonstration before it."""
    msgs = trajectory.messages
    last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"), default=-1)
    return msgs[last_user + 1 :]


def _schemas(trajectory: Trajectory) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"].get("parameters") or {} for t in trajectory.tools or []}


def _valid(arguments: dict[str, Any], schema: dict[str, Any]) -> bool:
    """As the MCP client checks a call, and with no argument the tool does not declare unless its
    schema allows more: servers drop or refuse those, and a call that runs only because the tool
    ignored what it was given (`list_items {"query": ...}` listing everything) is not a call made
    well. A broken schema cannot be held against the agent."""
    declared = schema.get("properties")
    if isinstance(declared, dict) and not schema.get("additionalProperties") and set(arguments) - set(declared):
        return False
    validator = schema_validator(schema)
    return validator is None or validator.is_valid(arguments)


def call_stages(call: dict[str, Any], schemas: dict[str, dict[str, Any]], results: dict[str, str]) -> int:
    """How many of the STAGES this tool call passes, in order."""
    fn = call.get("function") or {}
    try:
        args = json.loads(fn.get("arguments") or "{}") if isinstance(fn.get("arguments"), str) else fn.get("arguments")
    except ValueError:
        return 0
    if not isinstance(args, dict):
        return 0
    if fn.get("name") not in schemas:
        return 1
    if not _valid(args, schemas[fn["name"]]):
        return 2
    result = results.get(call.get("id", ""))
    if result is None or result.lstrip().lower().startswith("error"):
        return 3  # mcprl's client starts every error result with "Error" (MCP isError included)
    return 4


def tool_use_score(trajectory: Trajectory) -> float:
    """The best call's stages / STAGES, in [0, 1]."""
    msgs = agent_messages(trajectory)
    schemas = _schemas(trajectory)
    results = {m.get("tool_call_id"): str(m.get("content") or "") for m in msgs if m.get("role") == "tool"}
    calls = [c for m in msgs if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
    return max((call_stages(c, schemas, results) for c in calls), default=0) / STAGES


@dataclass
class ToolUseShaping:
    name: str = "shaping"

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        zero_failed(group)
        for t in group.valid:
            t.reward = t.metrics[self.name] = tool_use_score(t)
        return group
