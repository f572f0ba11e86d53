"""mcprl: MCP-native reinforcement learning for LLM agents.

The public API is imported lazily so that `mcprl --help` stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcprl.lazy import exports
from mcprl.version import __version__

_EXPORTS = {
    "Scenario": "mcprl.types",
    "Trajectory": "mcprl.types",
    "TrajectoryGroup": "mcprl.types",
    "Generation": "mcprl.types",
    "gather_trajectory_groups": "mcprl.rollout.gather",
    "TrainableModel": "mcprl.model.trainable",
    "Model": "mcprl.model.trainable",
    "TrainConfig": "mcprl.train.config",
    "LocalBackend": "mcprl.backends.local",
    "UserError": "mcprl.errors",
}

if TYPE_CHECKING:
    from mcprl.backends.local import LocalBackend
    from mcprl.errors import UserError
    from mcprl.model.trainable import Model, TrainableModel
    from mcprl.rollout.gather import gather_trajectory_groups
    from mcprl.train.config import TrainConfig
    from mcprl.types import Generation, Scenario, Trajectory, TrajectoryGroup

__getattr__ = exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
