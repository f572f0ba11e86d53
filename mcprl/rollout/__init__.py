"""The rollout stage: an agent against an MCP server's real tools, its every policy reply recorded
as exact tokens.

    config.py     how the agent is prompted and sampled (`RolloutConfig`)
    loop.py       the plain tool-calling loop (`rollout`, `ToolAgent`)
    recording.py  the one recording client every agent reaches the policy through (`Recorder`)
    langgraph.py  LangChain / LangGraph agents over the same client
    agents.py     agents by name (`rollout.agent` / `--agent`)
    gather.py     many rollouts at once, collected into TrajectoryGroups

The names below are imported on first use, so that reading a run's settings loads no agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcprl.loading import exports

_EXPORTS = {
    "RolloutConfig": "mcprl.rollout.config",
    "ToolAgent": "mcprl.rollout.loop",
    "rollout": "mcprl.rollout.loop",
    "Recorder": "mcprl.rollout.recording",
    "gather_trajectory_groups": "mcprl.rollout.gather",
}

if TYPE_CHECKING:
    from mcprl.rollout.config import RolloutConfig
    from mcprl.rollout.gather import gather_trajectory_groups
    from mcprl.rollout.loop import ToolAgent, rollout
    from mcprl.rollout.recording import Recorder

__getattr__ = exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
