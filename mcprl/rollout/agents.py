"""Agents by name, so training and evaluation can roll out any of them with the same report.

    agent = load("plain")                 # or "langgraph", "my_agents:solve", "my_agents:MyAgent"
    traj = await agent(model, scenario, pool, rollout_config)

An `Agent` is `async (model, scenario, pool, rollout_config) -> Trajectory`; every kind records
through `mcprl.rollout.recording`, so their trajectories carry the same tokens, logprobs and metrics.

    plain            the plain tool-calling loop (`mcprl.rollout.loop.rollout`)
    langgraph        the prebuilt LangGraph ReAct agent (`mcprl.rollout.langgraph.react_agent`)
    module:function  your agent: `async def function(rec: Recorder, config: RolloutConfig)` that
                     talks to the policy through `rec.openai_client()` (or any client over
                     `mcprl.rollout.recording`'s HTTP clients, e.g. `mcprl.rollout.langgraph.init_chat_model`),
                     calls tools through `rec.tools` and returns the final answer (a str), a dict
                     with `reward`/`metrics`/`metadata`, or None (see `mcprl.rollout.recording`)
    module:Class     a `mcprl.rollout.loop.ToolAgent` subclass: the plain loop with your overrides of
                     `setup`, `env_response`, `is_done` (made with no arguments)

`module` is imported with the current directory on `sys.path`, as `python -m` would.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from mcprl.errors import UserError
from mcprl.loading import named_object
from mcprl.rollout import loop
from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.recording import Recorder

if TYPE_CHECKING:
    from mcprl.model.trainable import Model
    from mcprl.tools import ToolPool
    from mcprl.types import Scenario, Trajectory

Agent = Callable[["Model", "Scenario", "ToolPool | None", "RolloutConfig | None"], Awaitable["Trajectory"]]

FORMS = (
    "plain, langgraph, module:function (async def function(rec, config) -> str | dict | None) "
    "or module:Class (a mcprl.rollout.loop.ToolAgent subclass)"
)


def load(spec: str) -> Agent:
    """The agent `spec` names; a bad spec is a one-line UserError saying what is wrong."""
    if spec == "plain":
        return loop.rollout
    if spec == "langgraph":
        # Lazy: LangGraph and LangChain load only for this agent (a second of imports, and the GPU
        # image, docs/gpu.md, carries neither).
        from mcprl.rollout.langgraph import react_agent

        return react_agent
    obj = named_object(spec, "agent", "a known agent nor module:function", FORMS)
    if inspect.isclass(obj) and issubclass(obj, loop.ToolAgent):
        return obj()
    if not inspect.iscoroutinefunction(obj):
        kind = "a sync function" if inspect.isfunction(obj) else f"of type {type(obj).__name__}"
        raise UserError(f"agent {spec!r} is {kind}, not an async function nor a ToolAgent subclass; give {FORMS}")
    try:
        inspect.signature(obj).bind(None, None)
    except TypeError:
        raise UserError(f"agent {spec!r} takes {inspect.signature(obj)}, not (rec, config); give {FORMS}") from None

    async def agent(
        model: Model, scenario: Scenario, pool: ToolPool | None = None, config: RolloutConfig | None = None
    ) -> Trajectory:
        config = config or RolloutConfig()
        return await Recorder(
            model,
            scenario,
            pool,
            constrain_tool_calls=config.constrain_tool_calls,
            time_limit_s=config.episode_timeout_s,
        ).run(obj, config)

    return agent
