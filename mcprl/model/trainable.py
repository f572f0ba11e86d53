"""`Model` (something to sample from) and `TrainableModel` (base model + LoRA we train), in ART's
vocabulary: `await model.register(backend)`, `model.openai_client()`, `await model.train(groups)`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openai import AsyncOpenAI
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from mcprl import paths
from mcprl.errors import UserError
from mcprl.train import checkpoints
from mcprl.train.config import LoraSettings, TrainConfig

if TYPE_CHECKING:
    from mcprl.backends.base import Runtime
    from mcprl.backends.local import LocalBackend
    from mcprl.types import TrajectoryGroup


class Model(BaseModel):
    """A model reachable over an OpenAI-compatible API (a provider, or an endpoint of ours)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    project: str = "default"
    inference_base_url: str | None = None
    inference_api_key: str | None = None
    inference_model_name: str | None = None

    def openai_client(self) -> AsyncOpenAI:
        if not self.inference_base_url:
            raise UserError(f"model {self.name!r} has no endpoint; register it with a backend first")
        return AsyncOpenAI(
            base_url=self.inference_base_url, api_key=self.inference_api_key or "mcprl", max_retries=0, timeout=600
        )

    def get_inference_name(self) -> str:
        return self.inference_model_name or self.name


class TrainableModel(Model):
    """A base model plus a LoRA adapter trained with GRPO; checkpoints under `<MCPRL_HOME>/<project>/<name>/`."""

    # name and project become directory names
    name: paths.DirName
    project: paths.DirName = "default"
    base_model: str = "smollm2-135m"
    lora: LoraSettings = Field(default_factory=LoraSettings)
    _runtime: Runtime | None = PrivateAttr(default=None)

    @property
    def dir(self) -> Path:
        return paths.model_dir(self.project, self.name)

    @property
    def checkpoints_dir(self) -> Path:
        return paths.checkpoints_dir(self.project, self.name)

    async def register(self, backend: LocalBackend) -> None:
        """Load (resuming from the latest checkpoint) and start serving `NAME@STEP`."""
        self._runtime = await backend.register(self)
        self._sync()

    def _sync(self) -> None:
        rt = self._require()
        self.inference_base_url = rt.base_url
        self.inference_api_key = rt.api_key
        self.inference_model_name = rt.served_name

    def _require(self) -> Runtime:
        if self._runtime is None:
            raise UserError(f"model {self.name!r} is not registered; call `await model.register(LocalBackend())` first")
        return self._runtime

    def pinned(self) -> Model:
        """The policy as it is served now, pinned: a Model naming this step's adapter (`NAME@STEP`),
        so a rollout given it samples this step throughout, whatever later steps serve."""
        return Model.model_validate(self.model_dump(include=set(Model.model_fields)))

    def get_step(self) -> int:
        """Training steps taken (the step being served)."""
        if self._runtime is not None:
            return self._runtime.step
        return checkpoints.latest_step(self.checkpoints_dir) or 0

    async def train(
        self, groups: list[TrajectoryGroup], config: TrainConfig | None = None, loss: str | None = None
    ) -> dict[str, float]:
        """One GRPO step on `groups` (optimising `loss`, default `config.loss`: mcprl.train.loss.objective);
        afterwards the endpoint serves the new step."""
        metrics = await self._require().train(groups, config or TrainConfig(), loss)
        self._sync()
        return metrics

    def delete_checkpoints(self, keep: int = 1, keep_steps: set[int] = frozenset()) -> list[int]:
        """Delete old checkpoints, keeping the `keep` newest and any in `keep_steps` (never the served one)."""
        return checkpoints.delete_checkpoints(
            self.checkpoints_dir, keep=max(keep, 1), keep_steps={*keep_steps, self.get_step()}
        )

    def fork(self, name: str, *, step: int | None = None, project: str | None = None) -> TrainableModel:
        """A new model starting from this one's checkpoint `step` (default: latest)."""
        step = self.get_step() if step is None else step
        src = checkpoints.step_dir(self.checkpoints_dir, step)
        if not src.exists():
            raise UserError(
                f"{self.name} has no checkpoint {step}; available: {checkpoints.list_steps(self.checkpoints_dir)}"
            )
        child = TrainableModel(name=name, project=project or self.project, base_model=self.base_model, lora=self.lora)
        if child.checkpoints_dir.exists() and checkpoints.list_steps(child.checkpoints_dir):
            raise UserError(f"{child.checkpoints_dir} already has checkpoints; fork into a new name")

        def copy(tmp: Path) -> None:
            shutil.copytree(src, tmp, dirs_exist_ok=True)

        state: dict[str, Any] = {
            **checkpoints.read_state(src),
            "name": name,
            "project": child.project,
            "forked_from": f"{self.project}/{self.name}@{step}",
        }
        checkpoints.write_checkpoint(child.checkpoints_dir, step, copy, state)
        return child
