"""The example exchange shown to the policy before its task: where it comes from.

Small models make no tool calls zero-shot; one example exchange fixes the format, and an example
that looks like the real tasks works far better than a made-up one. In order of preference:

    file          `--example FILE` (a JSON list of OpenAI chat messages) or `rollout.example` in a
                  run file: the user's own messages
    task-module   the task set's hand-written EXAMPLE (`--tasks NAME`, unless `--no-task-help`)
    scenario:<id> built from one real training scenario, which is then kept out of training and
                  evaluation: the generator model writes the first tool call, constrained by that
                  tool's own input schema (strings and arrays kept short, strings first made of
                  the task's words), and the call is executed against the server; the
                  exchange is kept only if the tool answers without error
    generic       `Example request: use <first tool>.` with placeholder arguments (mcprl.rollout)

A scenario demonstration ends at the assistant's tool call, like the hand-written ones: there is
no ground truth for a final answer in general, and a tool result in the prompt would put one
successful call into every trajectory, which checkers that replay a trajectory's calls (the
inventory's) would count as the agent's own.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from mcprl.errors import UserError, first_problem
from mcprl.types import Message, Scenario

if TYPE_CHECKING:
    from mcprl.tools import ToolPool

CANDIDATES = 3  # scenarios tried before falling back to the generic example (each costs 1-2 generator calls)
# A demonstration's call is short: every string and array of the constraint gets at most this many
# characters or items unless its schema bounds it already, so that a small generator repeating
# itself inside a string (greedy decoding loops) still ends with a complete call instead of
# running out of tokens mid-string.
MAX_STRING, MAX_ITEMS = 48, 4
WRITER_PROMPT = (
    "You are an agent that solves the user's task by calling tools. Write the arguments of your first call "
    "to the tool `{name}`{description} for the task the user gives. Use the values the task mentions."
)
PICKER_PROMPT = (
    "You are an agent that solves the user's task by calling tools. Choose the tool to call first. Tools:\n{tools}"
)


class ChatMessage(BaseModel):
    """An OpenAI chat message, as far as `--example` needs it checked."""

    role: Literal["system", "user", "assistant", "tool"]
    content: Any = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class Demonstration(BaseModel):
    messages: list[Message] | None  # None: the generic example, made up from the tool list
    source: str  # "file" | "task-module" | "scenario:<id>" | "generic"


def load_example(path: Path) -> list[Message]:
    """`--example FILE`: a JSON list of chat messages; anything else is a one-line UserError."""
    fix = 'fix: a JSON list like [{"role": "user", "content": "..."}, {"role": "assistant", "tool_calls": [...]}]'
    if not path.exists():
        raise UserError(f"--example {path}: no such file; {fix}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"--example {path}: not valid JSON ({e.msg} at line {e.lineno}); {fix}") from None
    if not isinstance(data, list) or not data:
        raise UserError(f"--example {path}: expected a non-empty JSON list of chat messages, got {type(data).__name__}; {fix}")
    try:
        TypeAdapter(list[ChatMessage]).validate_python(data)
    except ValidationError as e:
        raise UserError(f"--example {path}: message {first_problem(e)}; {fix}") from None
    return data


def task_words_pattern(task: str) -> str:
    """A regex for strings made of the task's own words (one or more, space-separated)."""
    words = sorted({w.strip(".,;:!?\"'()") for w in task.split()} - {""}, key=len, reverse=True)
    word = "(?:" + "|".join(re.escape(w) for w in words) + ")"
    return f"^{word}(?: {word})*$"


def short_call_schema(schema: Any, words: str | None = None) -> Any:
    """`schema` with MAX_STRING / MAX_ITEMS on every string and array that has no bound of its own
    (nested ones, `$defs`, `anyOf` branches included), and, with `words` (a pattern), every free
    string made of those words; nothing else changes."""
    if isinstance(schema, list):
        return [short_call_schema(s, words) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: short_call_schema(v, words) if k not in ("enum", "const", "default", "examples", "required") else v
           for k, v in schema.items()}
    types = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    if "string" in types and not {"maxLength", "enum", "const", "format", "pattern"} & set(schema):
        out["maxLength"] = MAX_STRING
        if words:
            out["pattern"] = words
    if "array" in types and "maxItems" not in schema:
        out["maxItems"] = max(MAX_ITEMS, schema.get("minItems", 0))
    return out


def _tool_fn(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(t["function"] for t in tools if t["function"]["name"] == name)


def _summary(fn: dict[str, Any]) -> str:
    """The first line of a tool's description."""
    return (fn.get("description") or "").strip().partition("\n")[0]


async def _json(prompt: str, task: str, schema: dict[str, Any], *, model: str, api_base: str | None, seed: int) -> Any:
    from mcprl.llm import complete, extract_json

    messages = [{"role": "system", "content": prompt}, {"role": "user", "content": task}]
    reply = await complete(model, messages, api_base=api_base, json_schema=schema, temperature=0.0,
                           max_tokens=256, seed=seed)
    return extract_json(reply.text)


async def _first_tool(scenario: Scenario, tools: list[dict[str, Any]], *, model: str, api_base: str | None, seed: int) -> str:
    """The scenario's own first tool when it names an offered one, else the generator's choice
    (an enum of the offered names, so the answer is always a real tool)."""
    names = [t["function"]["name"] for t in tools]
    for name in scenario.tools:
        if name in names:
            return name
    if len(names) == 1:
        return names[0]
    listing = "\n".join(f"- {n}: {_summary(_tool_fn(tools, n))}" for n in names)
    schema = {"type": "object", "properties": {"tool": {"type": "string", "enum": names}}, "required": ["tool"]}
    choice = await _json(PICKER_PROMPT.format(tools=listing), scenario.task, schema, model=model, api_base=api_base, seed=seed)
    if not isinstance(choice, dict) or choice.get("tool") not in names:
        raise ValueError(f"the generator chose no offered tool ({choice!r})")
    return choice["tool"]


async def from_scenario(scenario: Scenario, pool: ToolPool, *, model: str, api_base: str | None, seed: int) -> list[Message] | None:
    """The exchange `task -> first tool call` for `scenario`, or None when no call the generator
    writes runs without error. Its string arguments are first made of the task's own words (the
    values a task names: an item, a city, a path), then, if that call fails, free (short_call_schema)."""
    tools = pool.toolset.tools
    name = await _first_tool(scenario, tools, model=model, api_base=api_base, seed=seed)
    fn = _tool_fn(tools, name)
    description = f" ({_summary(fn)})" if _summary(fn) else ""
    schema = fn.get("parameters") or {"type": "object", "properties": {}}
    for words in (task_words_pattern(scenario.task), None):
        args = await _json(WRITER_PROMPT.format(name=name, description=description), scenario.task,
                           short_call_schema(schema, words), model=model, api_base=api_base, seed=seed)
        if not isinstance(args, dict):
            continue
        async with pool.session() as session:
            outcome = await session.call(name, args)
        if not outcome.is_error:
            return [
                {"role": "user", "content": scenario.task},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_example", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ]},
            ]
    return None


async def build(train: list[Scenario], pool: ToolPool, *, model: str, api_base: str | None, seed: int,
                say=print) -> tuple[Demonstration, list[Scenario]]:
    """A scenario demonstration from one of at most CANDIDATES training scenarios (picked by the
    seed), and the training scenarios without it; the generic one when none works."""
    from mcprl.llm import LLMError

    if len(train) < 2:
        return Demonstration(messages=None, source="generic"), train
    for scenario in random.Random(f"{seed}/demonstration").sample(train, min(CANDIDATES, len(train) - 1)):
        try:
            messages = await from_scenario(scenario, pool, model=model, api_base=api_base, seed=seed)
        except (LLMError, UserError, ValueError) as e:
            say(f"warning: no demonstration from scenario {scenario.id}: {e}")
            continue
        if messages is not None:
            return Demonstration(messages=messages, source=f"scenario:{scenario.id}"), [s for s in train if s is not scenario]
    say("no training scenario gave a tool call that runs without error; showing the generic example")
    return Demonstration(messages=None, source="generic"), train


async def settle(train: list[Scenario], pool: ToolPool | None, *, enabled: bool, example: list[Message] | None,
                 example_file: str | None, shipped: list[Message] | None, model: str, api_base: str | None, seed: int,
                 say=print) -> tuple[Demonstration, list[Scenario]]:
    """The run's demonstration, in the order of preference above (`example`: messages given as
    they are; `shipped`: the task set's EXAMPLE, when its help is on), and the training
    scenarios without one it was built from."""
    if not enabled:
        return Demonstration(messages=None, source="none"), train
    if example is not None:
        return Demonstration(messages=example, source="file"), train
    if example_file:
        return Demonstration(messages=load_example(Path(example_file)), source="file"), train
    if shipped is not None:
        return Demonstration(messages=shipped, source="task-module"), train
    if pool is None:
        return Demonstration(messages=None, source="generic"), train
    say(f"building the demonstration from a training scenario with {model} ...")
    return await build(train, pool, model=model, api_base=api_base, seed=seed, say=say)
