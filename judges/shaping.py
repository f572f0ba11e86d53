"""Tool-use shaping: a score for using the tools well, for any server, from the recorded messages
and the offered tool schemas alone.

A task reward that is all-or-nothing gives GRPO nothing to learn from while the policy solves no
task (every group scores 0). This judge scores how far the agent's best tool call got:

    1/4  its arguments parse as a JSON object
    2/4  ... and it names an offered tool
    3/4  ... and the arguments validate against that tool's input schema (no undeclared names)
    4/4  ... and the tool answered without error

When the scenario has a known answer, a fifth stage scores whether the call found it
(`evidence`): scores are then out of 5, and a lookup that brought the answer back ranks above one
that ran well and found nothing, or the wrong thing. That is the step between calling a tool
and solving a lookup task: without it, shaping rewards the demonstration's call copied onto every
task as much as the right one (measured on the inventory server: docs/benchmarks.md).

An episode without a call (a prose answer, or a call the endpoint could not parse) scores 0.
Only the agent's own turns count: the demonstration before the task is skipped. It is combined
with the task's judge by `mcprl.judges.combine.ShapedJudge`, which caps it below a solved task.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcprl.checks import holds_answer, live_of, words
from mcprl.judges.base import zero_failed
from mcprl.judges.verify import live_value
from mcprl.tools.client import schema_validator
from mcprl.types import Trajectory, TrajectoryGroup

STAGES = 4
# A result that brings at most this many words its call did not already hold counts as finding
# the answer outright; a longer one (a listing that contains the answer among everything else)
# earns EVIDENCE_WORDS / its new words. One inventory record brings ~8, a 60-item listing ~400.
EVIDENCE_WORDS = 32


def novel_words(result: str, known: str) -> int:
    """How many distinct words `result` brings that `known` (the task and the call) does not hold."""
    return len(set(words(result)) - set(words(known)))


def evidence(result: str, answer: Any, known: str) -> float:
    """How squarely a tool result gives a known answer, in [0, 1]: 0 when it does not hold it, or
    when `known` already did (a call that put a guess in its arguments and got it echoed back
    found nothing), 1 when it holds it with at most EVIDENCE_WORDS new words, else
    EVIDENCE_WORDS / new words."""
    if answer is None or not holds_answer(result, answer) or holds_answer(known, answer):
        return 0.0
    return min(1.0, EVIDENCE_WORDS / max(1, novel_words(result, known)))


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
    """How many of the STAGES this tool call passes, in order (the evidence stage aside)."""
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


def tool_use_score(trajectory: Trajectory, answer: Any = None, task: str = "") -> float:
    """The best call's stages / STAGES, in [0, 1]; with a known `answer`, (stages + evidence) /
    (STAGES + 1), the evidence counted for a call that passed every other stage."""
    msgs = trajectory.agent_messages()
    schemas = _schemas(trajectory)
    results = {m.get("tool_call_id"): str(m.get("content") or "") for m in msgs if m.get("role") == "tool"}
    calls = [c for m in msgs if m.get("role") == "assistant" for c in m.get("tool_calls") or []]

    def score(call: dict[str, Any]) -> float:
        stages = call_stages(call, schemas, results)
        if answer is None or stages < STAGES:
            return stages
        return stages + evidence(
            results[call.get("id", "")], answer, f"{task} {(call.get('function') or {}).get('arguments')}"
        )

    return max((score(c) for c in calls), default=0) / (STAGES + (answer is not None))


@dataclass
class ToolUseShaping:
    name: str = "shaping"

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        zero_failed(group)
        scenario = group.scenario
        answer, task = (scenario.answer, scenario.task) if scenario else (None, "")
        # where the server answers anew each time, the answer is what the episode's own call gave; without such a
        # call, "" (which no result holds: no evidence, on the same scale out of 5 as the group's other rollouts)
        live = live_of(scenario.check) if scenario else None
        for t in group.valid:
            known = answer if live is None else (value if (value := live_value(t, live)) is not None else "")
            t.reward = t.metrics[self.name] = tool_use_score(t, known, task)
        return group
