"""mcprl: MCP-native reinforcement learning for LLM agents.

The public API is imported lazily so that `mcprl --help` stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcprl.loading import exports
from mcprl.version import __version__

_EXPORTS = {
    "Scenario": "mcprl.types",
    "Trajectory": "mcprl.types",
    "TrajectoryGroup": "mcprl.types",
    "Generation": "mcprl.types",
    "gather_trajectory_groups": "mcprl.rollout.gather",
    # the plain tool loop (`rollout.agent = "plain"`); `mcprl.rollout` is the stage's package
    "plain_rollout": "mcprl.rollout.loop:rollout",
    "Recorder": "mcprl.rollout.recording",  # a rollout of your own agent, recorded
    "RolloutConfig": "mcprl.rollout.config",
    "ServerSpec": "mcprl.tools",
    "ToolPool": "mcprl.tools",
    "VerifyJudge": "mcprl.judges",
    "RulerJudge": "mcprl.judges",
    "score_groups": "mcprl.judges",
    "TrainableModel": "mcprl.model.trainable",
    "Model": "mcprl.model.trainable",
    "TrainConfig": "mcprl.train.config",
    "LocalBackend": "mcprl.backends.local",
    "UserError": "mcprl.errors",
}

if TYPE_CHECKING:
    from mcprl.backends.local import LocalBackend
    from mcprl.errors import UserError
    from mcprl.judges import RulerJudge, VerifyJudge, score_groups
    from mcprl.model.trainable import Model, TrainableModel
    from mcprl.rollout.config import RolloutConfig
    from mcprl.rollout.gather import gather_trajectory_groups
    from mcprl.rollout.loop import rollout as plain_rollout
    from mcprl.rollout.recording import Recorder
    from mcprl.tools import ServerSpec, ToolPool
    from mcprl.train.config import TrainConfig
    from mcprl.types import Generation, Scenario, Trajectory, TrajectoryGroup

__getattr__ = exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
