"""mcprl: MCP-native reinforcement learning for LLM agents.

The public API is imported lazily so that `mcprl --help` stays instant.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mcprl.lazy import exports
from mcprl.version import __version__

# A wheel installs the repository's top-level judges/, scenarios/, servers/ and autorl/ inside this
# package (pyproject.toml's package-dir). A source checkout (PYTHONPATH=., a stdio server's
# `--env PYTHONPATH=...`) keeps them beside it, and mcprl.judges etc. are found there.
_here = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(_here, "judges")):
    __path__.append(os.path.dirname(_here))
del _here

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
