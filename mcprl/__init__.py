"""mcprl: MCP-native reinforcement learning for LLM agents.

The public API is imported lazily so that `mcprl --help` stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcprl.lazy import exports
__version__ = "0.1.0"

_EXPORTS = {
    "Scenario": "mcprl.types",
    "Trajectory": "mcprl.types",
    "TrajectoryGroup": "mcprl.types",
    "Generation": "mcprl.types",
    "gather_trajectory_groups": "mcprl.gather",
    "TrainableModel": "mcprl.model",
    "Model": "mcprl.model",
    "TrainConfig": "mcprl.train.config",
    "LocalBackend": "mcprl.backends.local",
    "UserError": "mcprl.errors",
}

if TYPE_CHECKING:
    from mcprl.backends.local import LocalBackend
    from mcprl.errors import UserError
    from mcprl.gather import gather_trajectory_groups
    from mcprl.model import Model, TrainableModel
    from mcprl.train.config import TrainConfig
    from mcprl.types import Generation, Scenario, Trajectory, TrajectoryGroup

__getattr__ = exports(__name__, _EXPORTS)


__all__ = sorted(_EXPORTS)
