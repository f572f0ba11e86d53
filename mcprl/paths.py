"""Where mcprl keeps things: `$MCPRL_HOME` (default ~/.cache/mcprl)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get("MCPRL_HOME") or Path.home() / ".cache" / "mcprl").expanduser()


def model_dir(project: str, name: str) -> Path:
    """A trainable model's directory: checkpoints, trajectories, metrics and reports live here."""
    return home() / project / name


def checkpoints_dir(project: str, name: str) -> Path:
    return model_dir(project, name) / "checkpoints"
