"""The plain agent loop: the policy (through its OpenAI-compatible endpoint) against an MCP
server's real tools, recording the exact tokens of every assistant turn (`mcprl.rollout.recording`).

`rollout(model, scenario, pool, config)` runs one episode; `ToolAgent` is the same loop with
override points (the initial messages, the environment's reply to a turn, when it is done).

Each turn's `max_tokens` bounds that turn, not the episode: an agent that needs several tool
calls is never cut off by a budget meant for one reply.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.recording import Recorder
from mcprl.types import Message, Scenario, ToolSchema, Trajectory

if TYPE_CHECKING:
    from mcprl.model.trainable import Model
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
            out[name] = {
                "string": "example",
                "integer": 3,
                "number": 3,
                "boolean": True,
                "array": [],
                "object": {},
            }.get(t, "example")
    return out


def demonstration(tools: list[dict[str, Any]]) -> list[Message]:
    """One example exchange calling the first tool, so the format is shown, not just described."""
    fn = tools[0]["function"]
    args = example_arguments(fn.get("parameters") or {})
    return [
        {"role": "user", "content": f"Example request: use {fn['name']}."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_example",
                    "type": "function",
                    "function": {"name": fn["name"], "arguments": json.dumps(args)},
                }
            ],
        },
    ]


def initial_messages(scenario: Scenario, tools: list[dict[str, Any]], config: RolloutConfig) -> list[Message]:
    system = scenario.system_prompt or config.system_prompt
    msgs: list[Message] = [{"role": "system", "content": system}]
    if config.demonstration and tools:
        if shown := config.demonstrations:  # by a stable hash of the id: every rollout of a scenario sees the same one
            msgs += shown[zlib.crc32(scenario.id.encode()) % len(shown)]
        else:
            msgs += demonstration(tools)
    msgs.append({"role": "user", "content": scenario.task})
    return msgs


@dataclass
class Episode:
    """One episode of the plain loop, as its override points see it (and may change it)."""

    scenario: Scenario
    config: RolloutConfig
    recorder: Recorder  # the trajectory, and `recorder.tools`: the MCP session (None without a server)
    tools: list[ToolSchema]  # what the model is offered: the server's tools (+ complete_task with finish="tool")
    messages: list[Message] = field(default_factory=list)  # the conversation, sent whole every turn
    reply: Message = field(default_factory=dict)  # the last assistant message
    finish_reason: str = ""  # the last reply's
    turns: int = 0
    answer: str | None = None  # the final answer, once given (complete_task): the episode is finished
    state: dict[str, Any] = field(default_factory=dict)  # anything an override keeps between turns

    @property
    def trajectory(self) -> Trajectory:
        return self.recorder.trajectory


class ToolAgent:
    """The plain agent loop, an `Agent`: `await ToolAgent()(model, scenario, pool, config)`.

    Each turn the model replies to the whole conversation, then the environment replies to it
    (`env_response`), then `is_done` says whether the episode ends. Subclass and override:

    - `setup(episode)`: the initial messages (default: system prompt, one-shot demonstration, task);
    - `env_response(episode, reply)`: the messages after an assistant turn (default: run its tool
      calls against the MCP session; complete_task gives the answer; nothing for a text reply);
    - `is_done(episode)`: after the environment's reply (default: a text reply, an answer, or max_turns).

    The episode ends finished with `episode.answer` when one was given, else finished (or
    truncated) on a text reply, else with `metrics["max_turns_reached"]` at max_turns.
    """

    async def __call__(
        self, model: Model, scenario: Scenario, pool: ToolPool | None = None, config: RolloutConfig | None = None
    ) -> Trajectory:
        config = config or RolloutConfig()
        return await Recorder(
            model,
            scenario,
            pool,
            constrain_tool_calls=config.constrain_tool_calls,
            time_limit_s=config.episode_timeout_s,
        ).run(self._episode, config)

    async def setup(self, episode: Episode) -> list[Message]:
        return initial_messages(episode.scenario, episode.tools, episode.config)

    async def env_response(self, episode: Episode, reply: Message) -> list[Message]:
        tools, out = episode.recorder.tools, []
        if tools is None:  # no server: nothing runs the calls
            return out
        for call in reply.get("tool_calls") or []:
            name, args = call["function"]["name"], call["function"]["arguments"]
            if name == COMPLETE_TASK["function"]["name"] and episode.config.finish == "tool":
                try:
                    answer = json.loads(args).get("answer", "")
                except (json.JSONDecodeError, AttributeError):
                    answer = args
                episode.answer = str(answer)
                return [*out, {"role": "tool", "tool_call_id": call["id"], "content": "Task completed."}]
            outcome = await tools.call(name, args)
            out.append({"role": "tool", "tool_call_id": call["id"], "content": outcome.text})
        return out

    async def is_done(self, episode: Episode) -> bool:
        unanswered = not episode.reply.get("tool_calls") or episode.recorder.tools is None
        return unanswered or episode.answer is not None or episode.turns >= episode.config.max_turns

    async def _episode(self, rec: Recorder, config: RolloutConfig) -> None:
        schemas = rec.tools.schemas if rec.tools is not None else []
        ep = Episode(
            rec.scenario,
            config,
            rec,
            schemas + ([COMPLETE_TASK] if config.finish == "tool" and rec.tools is not None else []),
        )
        rec.trajectory.tools = ep.tools or None
        client = rec.openai_client()  # asks for token ids and logprobs, and records every turn
        try:
            ep.messages = await self.setup(ep)
            while True:
                resp = await client.chat.completions.create(
                    model=rec.model_name,
                    messages=ep.messages,
                    **({"tools": ep.tools} if ep.tools else {}),
                    temperature=config.temperature,
                    top_p=config.top_p,
                    max_tokens=config.max_tokens,
                    **({"seed": config.sampling_seed + ep.turns} if config.sampling_seed is not None else {}),
                )
                choice = resp.choices[0]
                ep.reply = choice.message.model_dump(
                    exclude_none=True, exclude={"refusal", "annotations", "audio", "function_call"}
                )
                ep.reply.setdefault("content", "")
                ep.finish_reason, ep.turns = choice.finish_reason or "stop", ep.turns + 1
                ep.messages.append(ep.reply)
                ep.messages += await self.env_response(ep, ep.reply)
                if await self.is_done(ep):
                    break
        finally:
            rec.conversation = ep.messages
        m = rec.trajectory.metrics
        if ep.answer is not None:
            rec.trajectory.metadata["final_answer"] = ep.answer
            m["finished"] = 1.0
        elif not ep.reply.get("tool_calls") or rec.tools is None:
            rec.trajectory.metadata["final_answer"] = ep.reply.get("content") or ""
            m["truncated"] = float(ep.finish_reason == "length")
            m["finished"] = 1.0 - m["truncated"]
        elif ep.turns >= config.max_turns:
            m["max_turns_reached"] = 1.0


async def rollout(
    model: Model, scenario: Scenario, tools: ToolPool | None = None, config: RolloutConfig | None = None
) -> Trajectory:
    """Run one episode of the plain loop. Never raises for tool or policy misbehaviour; a dead
    server or endpoint marks the trajectory failed (`error`) with the reason."""
    return await ToolAgent()(model, scenario, tools, config)
