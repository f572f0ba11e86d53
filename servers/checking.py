"""What the shipped servers' checkers share: reading a trajectory's answer and replaying its tool calls.

Answers: a text answer counts when it is contained in the final answer, both normalised (case,
whitespace, thousands separators). A numeric answer counts when it stands as a number in the final
answer next to at most `MAX_OTHER_NUMBERS` other numbers that the task text does not mention (a
worked answer passes; a list of guesses, which would otherwise be rewarded, does not).

Replays: a tool call counts as successful when the trajectory holds its tool message and that
message is not an error (mcprl's client starts every error text with "Error", as the MCP SDKs
do for failing tools). Replaying them on a fresh world built from the same seed reproduces the
state the live server ended in, because the worlds are deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import validate_call

from mcprl.checks import NUMBER, THOUSANDS, numbers
from mcprl.types import Message, Trajectory

MAX_OTHER_NUMBERS = 2


def normalise(text: str) -> str:
    return " ".join(THOUSANDS.sub("", text).lower().split())


def answered(trajectory: Trajectory, answer: str | float, task: str = "") -> float:
    """1.0 when the final answer gives `answer` (see the module docstring), else 0.0."""
    final = trajectory.final_answer()
    if isinstance(answer, int | float) or NUMBER.fullmatch(str(answer).strip()):
        expected, given = float(answer), numbers(final)
        return float(expected in given and len(given - numbers(task) - {expected}) <= MAX_OTHER_NUMBERS)
    return float("".join(normalise(str(answer)).split()) in "".join(normalise(final).split()))


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def successful_tool_calls(messages: list[Message]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, arguments) of each call that got a non-error tool result, in call order."""
    results = {m.get("tool_call_id"): _text(m.get("content")) for m in messages if m.get("role") == "tool"}
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for call in m.get("tool_calls") or []:
            result = results.get(call.get("id"))
            if result is None or result.lstrip().lower().startswith("error"):
                continue
            fn = call.get("function") or {}
            args = fn.get("arguments") or {}
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    continue
            if isinstance(args, dict) and isinstance(fn.get("name"), str):
                yield fn["name"], args


def replay(world: Any, tool_names: tuple[str, ...], trajectory: Trajectory) -> None:
    """Apply the trajectory's successful calls to `world`, coercing arguments as the server's SDK does."""
    for name, args in successful_tool_calls(trajectory.agent_messages()):
        if name not in tool_names:
            continue
        try:
            validate_call(getattr(world, name))(**args)
        except Exception:  # the world rejects it (bad arguments, out of stock...): no state change, as live
            continue
