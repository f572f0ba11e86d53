"""The plain agent loop: the policy (through its OpenAI-compatible endpoint) against an MCP
server's real tools, recording the exact tokens of every assistant turn.

Each turn's `max_tokens` bounds that turn, not the episode: an agent that needs several tool
calls is never cut off by a budget meant for one reply.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcprl.types import Generation, Message, Scenario, Trajectory

if TYPE_CHECKING:
    from mcprl.model import Model
    from mcprl.tools import ToolPool

COMPLETE_TASK = {
    "type": "function",
    "function": {
        "name": "complete_task",
        "description": "Finish the task and give the final answer.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "the final answer for the user"}},
            "required": ["answer"],
        },
    },
}

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent that solves the user's task with the tools you are given. "
    "Call a tool when you need information or need to act; when you have what you need, "
    "reply with the final answer as plain text."
)


class RolloutConfig(BaseModel):
    """How the agent is prompted and sampled: the same for a run's training and its evaluation."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(default=4, ge=1, description="assistant turns per episode")
    max_tokens: int = Field(default=128, ge=1, description="tokens per assistant turn")
    temperature: float = Field(default=1.0, ge=0, description="sampling temperature, training and evaluation")
    top_p: float = Field(default=1.0, gt=0, le=1, description="nucleus sampling: the smallest set of tokens with this much probability")
    system_prompt: str = Field(default=DEFAULT_SYSTEM_PROMPT, description="the policy's system prompt (a scenario's own wins)")
    finish: Literal["text", "tool"] = Field(
        default="text", description="how the agent ends: a plain-text reply, or a call to a complete_task(answer) tool")
    # Small models make no tool calls zero-shot. `example` gives that exchange (best: a task like the
    # real ones; a run settles it in mcprl.demonstration); without it, one is made up from the first
    # tool's schema.
    demonstration: bool = Field(default=True, description="show one example exchange (a request and a tool-call reply) before the task")
    example: list[Message] | None = Field(default=None, description="the example exchange: chat messages")


def example_arguments(parameters: dict[str, Any]) -> dict[str, Any]:
    """Plausible arguments for a JSON schema: its examples/defaults/enums, else typed placeholders."""
    out: dict[str, Any] = {}
    props = parameters.get("properties") or {}
    required = parameters.get("required") or list(props)
    for name in required:
        p = props.get(name, {})
        if p.get("examples"):
            out[name] = p["examples"][0]
        elif "default" in p:
            out[name] = p["default"]
        elif p.get("enum"):
            out[name] = p["enum"][0]
        else:
            t = p.get("type")
            t = t[0] if isinstance(t, list) else t
            out[name] = {"string": "example", "integer": 3, "number": 3, "boolean": True, "array": [], "object": {}}.get(t, "example")
    return out


def demonstration(tools: list[dict[str, Any]]) -> list[Message]:
    """One example exchange calling the first tool, so the format is shown, not just described."""
    fn = tools[0]["function"]
    args = example_arguments(fn.get("parameters") or {})
    return [
        {"role": "user", "content": f"Example request: use {fn['name']}."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_example", "type": "function", "function": {"name": fn["name"], "arguments": json.dumps(args)}}
        ]},
    ]


def initial_messages(scenario: Scenario, tools: list[dict[str, Any]], config: RolloutConfig) -> list[Message]:
    system = scenario.system_prompt or config.system_prompt
    msgs: list[Message] = [{"role": "system", "content": system}]
    if config.demonstration and tools:
        msgs += config.example or demonstration(tools)
    msgs.append({"role": "user", "content": scenario.task})
    return msgs


def missing_prompt_tokens(endpoint: str | None) -> str:
    """Why a reply with completion token ids but no `prompt_token_ids` fails its rollout: training on
    it would score the first completion token from its own position."""
    return (f"policy endpoint {endpoint} returned completion token ids without prompt_token_ids, so this "
            "rollout cannot be trained on; serve the policy with mcprl's endpoint or a vLLM that answers "
            "return_token_ids=true with prompt_token_ids")


def _bump(metrics: dict[str, float], key: str, by: float = 1.0) -> None:
    metrics[key] = metrics.get(key, 0.0) + by


async def rollout(model: Model, scenario: Scenario, tools: ToolPool | None = None, config: RolloutConfig | None = None) -> Trajectory:
    """Run one episode. Never raises for tool or policy misbehaviour; a dead server or endpoint
    marks the trajectory failed (`error`) with the reason."""
    import openai

    from mcprl.tools import ServerGone

    config = config or RolloutConfig()
    t0 = time.perf_counter()
    traj = Trajectory(scenario_id=scenario.id, metadata={"task": scenario.task, "model": model.get_inference_name()})
    m = traj.metrics
    for k in ("turns", "tool_calls", "tool_errors", "invalid_tool_calls", "truncated", "finished"):
        m[k] = 0.0
    try:
        async with model.openai_client() as client:
            if tools is None:
                await _episode(client, model, scenario, traj, None, [], config)
            else:
                async with tools.session() as session:
                    await _episode(client, model, scenario, traj, session, list(tools.toolset.tools), config)
    except ServerGone as e:
        traj.error = f"MCP server gone: {e}"
    except openai.APIError as e:
        traj.error = f"policy endpoint error: {type(e).__name__}: {e}"
    m["seconds"] = time.perf_counter() - t0
    return traj


async def _episode(client, model, scenario, traj: Trajectory, session, schemas, config: RolloutConfig) -> None:
    m = traj.metrics
    offered = schemas + ([COMPLETE_TASK] if config.finish == "tool" and session is not None else [])
    traj.tools = offered or None
    messages = initial_messages(scenario, offered, config)
    traj.messages = messages
    for _ in range(config.max_turns):
        resp = await client.chat.completions.create(
            model=model.get_inference_name(),
            messages=messages,
            tools=offered or openai_not_given(),
            temperature=config.temperature,
            top_p=config.top_p,
            max_tokens=config.max_tokens,
            logprobs=True,
            extra_body={"return_token_ids": True},
        )
        choice = resp.choices[0]
        extra = choice.model_extra or {}
        msg = choice.message.model_dump(exclude_none=True, exclude={"refusal", "annotations", "audio", "function_call"})
        msg.setdefault("content", "")
        messages.append(msg)
        m["turns"] += 1
        if "token_ids" in extra:
            if not (resp.model_extra or {}).get("prompt_token_ids"):
                traj.error = missing_prompt_tokens(model.inference_base_url)
                return
            traj.generations.append(Generation(
                prompt_token_ids=resp.model_extra["prompt_token_ids"],
                completion_token_ids=extra["token_ids"],
                logprobs=[t.logprob for t in (choice.logprobs.content or [])] if choice.logprobs else [],
                temperature=config.temperature, top_p=config.top_p,  # what the logprobs were recorded under
                model=resp.model, finish_reason=choice.finish_reason or "stop", message_index=len(messages) - 1,
            ))
        if extra.get("tool_call_error"):
            _bump(m, "invalid_tool_calls")
            traj.log(f"turn {int(m['turns'])}: unparseable tool call: {extra['tool_call_error']}")
        calls = msg.get("tool_calls") or []
        if not calls or session is None:
            if choice.finish_reason == "length":
                m["truncated"] = 1.0
            else:
                m["finished"] = 1.0
            traj.metadata["final_answer"] = msg.get("content") or ""
            return
        for call in calls:
            name, args = call["function"]["name"], call["function"]["arguments"]
            if name == COMPLETE_TASK["function"]["name"] and config.finish == "tool":
                try:
                    answer = json.loads(args).get("answer", "")
                except (json.JSONDecodeError, AttributeError):
                    answer = args
                traj.metadata["final_answer"] = str(answer)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": "Task completed."})
                m["finished"] = 1.0
                return
            out = await session.call(name, args)
            _bump(m, "tool_calls")
            _bump(m, f"calls/{name}")
            if out.is_error:
                _bump(m, "tool_errors")
                _bump(m, f"errors/{name}")
                _bump(m, f"error_kind/{out.error_kind}")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": out.text})
    m["max_turns_reached"] = 1.0


def openai_not_given():
    from openai import NOT_GIVEN

    return NOT_GIVEN
