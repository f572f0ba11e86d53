"""The plain loop's override points (`ToolAgent.setup`, `env_response`, `is_done`) against the
scripted policy endpoint and the real calculator server."""

import pytest

from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.loop import ToolAgent
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario
from tests.scripted_policy import call, scripted_endpoint
from tests.server_fork import shipped

pytestmark = pytest.mark.anyio
CALC = shipped("calculator")  # `python -m mcprl.servers.calculator`, forked under pytest (tests/server_fork.py)
TASK = Scenario(id="t1", task="What is 17 * 25? Use the tools.")


async def _run(tiny_model_dir, agent, replies, config=None):
    with scripted_endpoint(tiny_model_dir, replies) as (model, engine):
        async with ToolPool(ServerSpec.parse(CALC)) as pool:
            traj = await agent(model, TASK, pool, config or RolloutConfig())
    assert traj.error is None
    return traj, engine


async def test_setup_sets_the_initial_messages(tiny_model_dir):
    class Terse(ToolAgent):
        async def setup(self, episode):
            return [{"role": "user", "content": f"Compute with the tools: {episode.scenario.task}"}]

    traj, engine = await _run(tiny_model_dir, Terse(), ["425"])
    assert engine.seen[0]["messages"] == [{"role": "user", "content": f"Compute with the tools: {TASK.task}"}]
    assert [m["role"] for m in traj.messages] == ["user", "assistant"] and traj.generations[0].message_index == 1
    assert traj.final_answer() == "425" and traj.metrics["finished"] == 1


async def test_env_response_replaces_running_the_tools(tiny_model_dir):
    class Canned(ToolAgent):
        """Answers every tool call itself: the server is never called."""

        async def env_response(self, episode, reply):
            return [
                {"role": "tool", "tool_call_id": c["id"], "content": "425 (canned)"}
                for c in reply.get("tool_calls") or []
            ]

    traj, engine = await _run(tiny_model_dir, Canned(), [call("multiply", a=17, b=25), "425"])
    assert engine.seen[1]["messages"][-1]["content"] == "425 (canned)"
    assert traj.metrics["tool_calls"] == 0 and "calls/multiply" not in traj.metrics
    assert traj.final_answer() == "425" and traj.metrics["finished"] == 1


async def test_is_done_ends_the_episode_early_with_an_answer(tiny_model_dir):
    class StopAtResult(ToolAgent):
        async def is_done(self, episode):
            if episode.messages[-1]["role"] == "tool" and episode.messages[-1]["content"].strip() == "425":
                episode.answer = "425"
                return True
            return await super().is_done(episode)

    replies = [call("multiply", a=17, b=25), call("add", a=400, b=25), "done"]
    default, _ = await _run(tiny_model_dir, ToolAgent(), list(replies))
    assert len(default.generations) == 3 and default.metrics["tool_calls"] == 2 and default.final_answer() == "done"
    traj, engine = await _run(tiny_model_dir, StopAtResult(), list(replies))
    assert len(engine.seen) == len(traj.generations) == 1 and traj.messages[-1]["role"] == "tool"
    assert traj.final_answer() == "425" and traj.metrics["finished"] == 1 and "max_turns_reached" not in traj.metrics


async def test_hooks_together_make_a_simulated_user_with_state(tiny_model_dir):
    class Doubtful(ToolAgent):
        """Asks once whether a text answer is right, and takes the second one."""

        async def env_response(self, episode, reply):
            if reply.get("tool_calls") or episode.state.get("asked"):
                return await super().env_response(episode, reply)
            episode.state["asked"] = True
            return [{"role": "user", "content": "Are you sure?"}]

        async def is_done(self, episode):
            return episode.messages[-1]["role"] == "assistant" and await super().is_done(episode)

    traj, engine = await _run(tiny_model_dir, Doubtful(), ["42", call("multiply", a=17, b=25), "425"])
    assert [m["role"] for m in traj.messages[-6:]] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    assert traj.messages[-4]["content"] == "Are you sure?" and len(engine.seen) == 3
    assert [g.message_index for g in traj.generations] == [
        len(traj.messages) - 5,
        len(traj.messages) - 3,
        len(traj.messages) - 1,
    ]
    assert traj.final_answer() == "425" and traj.metrics["tool_calls"] == 1 and traj.metrics["finished"] == 1


async def test_max_turns_still_bounds_an_agent_that_never_stops(tiny_model_dir):
    class Endless(ToolAgent):
        async def env_response(self, episode, reply):
            return [{"role": "user", "content": "Go on."}]

        async def is_done(self, episode):
            return episode.turns >= episode.config.max_turns

    traj, engine = await _run(tiny_model_dir, Endless(), ["a", "b", "c"], RolloutConfig(max_turns=3))
    assert len(engine.seen) == 3 and traj.messages[-1] == {"role": "user", "content": "Go on."}
    assert traj.metrics["finished"] == 1 and traj.final_answer() == "c"
