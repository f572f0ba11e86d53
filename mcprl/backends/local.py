"""`LocalBackend`: trains and serves on this machine, CPU or GPU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from mcprl.backends.base import Runtime, write_model_card
from mcprl.errors import UserError

if TYPE_CHECKING:
    from mcprl.model import TrainableModel
    from mcprl.train.config import TrainConfig
    from mcprl.types import TrajectoryGroup


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


class LocalBackend:
    """`device="auto"` picks the GPU runtime when CUDA is available, the CPU runtime otherwise.

    `dtype` (auto, float32, bfloat16) is the CPU runtime's base-weight dtype. Extra keyword settings go
    to the runtime (CPU: host, port, max_batch_rows, threads)."""

    def __init__(self, device: Literal["auto", "cpu", "cuda"] = "auto", dtype: str = "auto", **settings: Any):
        if device not in ("auto", "cpu", "cuda"):
            raise UserError(f"device must be auto, cpu or cuda, not {device!r}")
        self.device = "cuda" if device == "cuda" or (device == "auto" and cuda_available()) else "cpu"
        if self.device == "cuda" and dtype != "auto":
            raise UserError(f"dtype {dtype!r} applies to the CPU runtime; on a GPU set unsloth={{'dtype': ...}}")
        self.settings = settings if self.device == "cuda" else {**settings, "dtype": dtype}
        self.runtimes: dict[str, Runtime] = {}

    def _runtime(self, model: TrainableModel) -> Runtime:
        if self.device == "cuda":
            from mcprl.backends.gpu import GpuRuntime

            return GpuRuntime(model, **self.settings)
        from mcprl.backends.cpu import CpuRuntime

        return CpuRuntime(model, **self.settings)

    async def register(self, model: TrainableModel) -> Runtime:
        key = f"{model.project}/{model.name}"
        if key not in self.runtimes:
            write_model_card(model.dir, model)
            rt = self._runtime(model)
            await rt.start()
            self.runtimes[key] = rt
        return self.runtimes[key]

    async def train(self, model: TrainableModel, groups: list[TrajectoryGroup], config: TrainConfig) -> dict[str, float]:
        return await self.runtimes[f"{model.project}/{model.name}"].train(groups, config)

    async def close(self) -> None:
        for rt in self.runtimes.values():
            await rt.close()
        self.runtimes.clear()

    async def __aenter__(self) -> LocalBackend:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
