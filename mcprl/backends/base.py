"""What a backend does for a TrainableModel: serve it (OpenAI-compatible, `NAME@STEP`), train it
one GRPO step at a time, and keep its checkpoints. CPU and GPU runtimes share this contract and
the checkpoint layout; only how they sample and how they take gradient steps differ."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

from mcprl.errors import UserError
from mcprl.train import checkpoints

if TYPE_CHECKING:
    from mcprl.model import TrainableModel
    from mcprl.train.config import TrainConfig
    from mcprl.types import TrajectoryGroup


class Runtime(ABC):
    """Serving + training for one registered model."""

    def __init__(self, model: TrainableModel):
        self.model = model
        self.root = model.checkpoints_dir
        self.step = 0

    @property
    def served_name(self) -> str:
        return f"{self.model.name}@{self.step}"

    @property
    @abstractmethod
    def base_url(self) -> str: ...

    @property
    def api_key(self) -> str:
        return "mcprl"

    @abstractmethod
    async def start(self) -> None:
        """Load the model, resume from the latest checkpoint (writing step 0 if there is none), serve it."""

    @abstractmethod
    async def train(self, groups: list[TrajectoryGroup], config: TrainConfig) -> dict[str, float]:
        """One GRPO step; writes checkpoint `step+1` and serves it before returning."""

    @abstractmethod
    async def close(self) -> None: ...

    def checkpoint_state(self, metrics: dict[str, float] | None = None) -> dict:
        m = self.model
        return {"name": m.name, "project": m.project, "base_model": m.base_model, "lora": m.lora.model_dump(),
                "metrics": metrics or {}, "time": time.time()}

    def check_resumable(self) -> int | None:
        """Latest checkpoint step, after checking it belongs to this model's base."""
        latest = checkpoints.latest_step(self.root)
        if latest is not None:
            st = checkpoints.read_state(checkpoints.step_dir(self.root, latest))
            if st.get("base_model") != self.model.base_model:
                raise UserError(f"{self.root}: checkpoints were trained on {st.get('base_model')!r}, not {self.model.base_model!r}; use another --name or the same base model")
        return latest


def write_model_card(model_dir: Path, model: TrainableModel) -> None:
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "model.json").write_text(json.dumps(model.model_dump(mode="json"), indent=2))
