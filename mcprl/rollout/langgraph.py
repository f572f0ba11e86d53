"""LangChain / LangGraph agents as rollouts that train exactly like the plain loop's.

    llm = init_chat_model(model)               # ChatOpenAI at the policy endpoint, recording
    rollout = wrap_rollout(model, my_graph_fn)  # (scenario) -> Trajectory
    traj = await rollout(scenario)

`init_chat_model` returns a ChatOpenAI over `mcprl.rollout.recording`'s HTTP clients, so every call
it makes inside a rollout is recorded in that rollout's Trajectory (the same recording as the
plain loop's and any agent's; see `mcprl.rollout.recording` for what is recorded and how concurrent
rollouts and LangGraph's worker threads keep apart). Calls made outside a rollout are not
recorded. `mcp_tools` are an MCP session's tools as LangChain tools, recorded likewise.
`react_agent` is the prebuilt ReAct agent as an `Agent` (`mcprl.rollout.agents.load("langgraph")`).

Create the chat model per rollout (or after each training step): the served name changes
with every step.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import ToolMessage, convert_to_messages
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import ToolNode, create_react_agent
from pydantic import ValidationError

from mcprl.errors import UserError, first_problem
from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.loop import initial_messages
from mcprl.rollout.recording import McpTools, Recorder, async_http_client, http_client
from mcprl.types import Scenario, Trajectory

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from mcprl.model.trainable import Model
    from mcprl.tools import ToolPool

__all__ = ["create_mcp_agent", "init_chat_model", "mcp_tools", "react_agent", "wrap_rollout"]


def init_chat_model(model: Model, **kwargs: Any) -> ChatOpenAI:
    """A ChatOpenAI at `model`'s endpoint, sampling as a run does by default (`RolloutConfig`'s
    temperature and top_p), that records its calls into the current rollout. `kwargs` override
    the defaults."""
    if not model.inference_base_url:
        raise UserError(f"model {model.name!r} has no endpoint; register it with a backend first")
    sampling = RolloutConfig()
    settings: dict[str, Any] = {
        "model": model.get_inference_name(),
        "base_url": model.inference_base_url,
        "api_key": model.inference_api_key or "mcprl",
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_retries": 0,
        "timeout": 600,
        "disable_streaming": True,  # the endpoint answers whole completions only
        "http_client": http_client(),
        "http_async_client": async_http_client(),
    }
    return ChatOpenAI(**{**settings, **kwargs})


def wrap_rollout(model: Model, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Trajectory]]:
    """Turn `fn(scenario, *args, **kwargs)` (your graph code) into a rollout returning the
    Trajectory its chat-model calls recorded.

    `fn` may return the final answer (a str, -> `metadata["final_answer"]`), a dict whose
    `reward`, `metrics` and `metadata` are merged into the trajectory (other keys, like a
    graph's state `messages`, are ignored: messages are recorded from the wire), or None.
    An exception marks the trajectory failed (`error`) instead of propagating.
    """

    async def run(scenario: Scenario, *args: Any, **kwargs: Any) -> Trajectory:
        return await Recorder(model, scenario).run(lambda _: fn(scenario, *args, **kwargs))

    return run


def mcp_tools(tools: McpTools) -> list[BaseTool]:
    """LangChain tools over a rollout's MCP tools (`Recorder.tools`). Tool errors come back to
    the model as text; a dead server raises `ServerGone` (and marks the current trajectory
    failed even if the graph swallows it). Calls and errors are counted in the current
    trajectory's metrics."""
    return [_mcp_tool(tools, schema["function"]) for schema in tools.schemas]


def _mcp_tool(tools: McpTools, fn: dict[str, Any]) -> BaseTool:
    async def call(**arguments: Any) -> str:
        return (await tools.call(fn["name"], arguments)).text

    schema = fn.get("parameters") or {"type": "object", "properties": {}}
    return StructuredTool(
        name=fn["name"], description=fn.get("description") or fn["name"], args_schema=schema, coroutine=call
    )


def create_mcp_agent(
    model: Model, pool: ToolPool, config: RolloutConfig | None = None, **settings: Any
) -> Callable[[Scenario], Awaitable[Trajectory]]:
    """`react_agent` over `pool` as a rollout `(scenario) -> Trajectory`, with the rollout settings
    `config` (default: a run's, `RolloutConfig()`) and any of them changed by keyword
    (`max_turns=2`, `system_prompt=...`)."""
    try:
        config = RolloutConfig.model_validate({**(config or RolloutConfig()).model_dump(), **settings})
    except ValidationError as e:
        raise UserError(f"bad rollout setting {first_problem(e)}") from None

    async def agent(scenario: Scenario) -> Trajectory:
        return await react_agent(model, scenario, pool, config)

    return agent


async def react_agent(
    model: Model, scenario: Scenario, pool: ToolPool | None = None, config: RolloutConfig | None = None
) -> Trajectory:
    """The prebuilt LangGraph ReAct agent over `pool`'s MCP tools, as an `Agent`.

    It sees the same prompt as the plain loop (`mcprl.rollout.loop.initial_messages`: system prompt,
    optional one-shot demonstration, the task), samples with the config's temperature, top_p
    and max_tokens per turn, makes at most `max_turns` model calls, and opens one pool session
    per rollout. It ends on a text reply (`finish="text"`); an agent still calling tools after
    `max_turns` ends with `metrics["max_turns_reached"] = 1`."""
    config = config or RolloutConfig()
    if config.finish != "text":
        raise UserError(
            'the langgraph agent ends on a text reply; set finish = "text" (complete_task is the plain loop\'s)'
        )
    return await Recorder(
        model, scenario, pool, constrain_tool_calls=config.constrain_tool_calls, time_limit_s=config.episode_timeout_s
    ).run(_react_episode, config)


async def _react_episode(rec: Recorder, config: RolloutConfig) -> None:
    prompt = initial_messages(rec.scenario, rec.tools.schemas if rec.tools is not None else [], config)
    # System prompt and demonstration go in through `prompt`: LangGraph refuses a state holding
    # the demonstration's tool call without a tool result.
    prefix = convert_to_messages(prompt[:-1])
    llm = init_chat_model(rec.model, max_tokens=config.max_tokens, temperature=config.temperature, top_p=config.top_p)
    try:
        graph = _react_graph(llm, rec.tools, lambda state: [*prefix, *state["messages"]])
        # Each turn is a model step and a tools step; on its last step the agent stops instead
        # of calling tools it has no step left to run.
        await graph.ainvoke({"messages": convert_to_messages(prompt[-1:])}, {"recursion_limit": 2 * config.max_turns})
    finally:
        await llm.http_async_client.aclose()
        llm.http_client.close()
    m = rec.trajectory.metrics
    if not (m["finished"] or m["truncated"]):
        m["max_turns_reached"] = 1.0


def _react_graph(llm: ChatOpenAI, tools: McpTools | None, prompt: Callable[[Any], list[Any]]) -> Any:
    async def unknown_to_session(request: Any, execute: Callable[[Any], Awaitable[Any]]) -> Any:
        """Calls of tools the agent lacks get the session's answer (and metrics), as in the plain loop."""
        if request.tool is not None or tools is None:
            return await execute(request)
        call = request.tool_call
        out = await tools.call(call["name"], call["args"])
        return ToolMessage(out.text, name=call["name"], tool_call_id=call["id"], status="error")

    node = ToolNode(mcp_tools(tools) if tools is not None else [], awrap_tool_call=unknown_to_session)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "moved to langchain.agents" since LangGraph 1.0
        return create_react_agent(llm, node, prompt=prompt)
