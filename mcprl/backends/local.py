"""`LocalBackend`: trains and serves on this machine, CPU or GPU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import torch

from mcprl.backends.base import Placement, Runtime, write_model_card
from mcprl.backends.config import CPU_ONLY, GPU_ONLY, RuntimeConfig
from mcprl.backends.cpu import CpuRuntime
from mcprl.backends.gpu import GpuRuntime
from mcprl.errors import UserError

if TYPE_CHECKING:
    from mcprl.model.trainable import TrainableModel


def cuda_available() -> bool:
    return torch.cuda.is_available()


def resolve_device(device: str) -> Literal["cpu", "cuda"]:
    """The runtime `device` (auto, cpu, cuda) names on this machine: auto is cuda when CUDA is available."""
    if device not in ("auto", "cpu", "cuda"):
        raise UserError(f"device must be auto, cpu or cuda, not {device!r}")
    return "cuda" if device == "cuda" or (device == "auto" and cuda_available()) else "cpu"


def gpu_dtype_settings(settings: dict[str, Any], dtype: str) -> dict[str, Any]:
    """The GPU runtime's settings with `dtype` applied to both Unsloth and vLLM."""
    if dtype == "auto":
        return settings
    out = dict(settings)
    for part in ("unsloth", "vllm"):
        given = dict(out.get(part) or {})
        if given.get("dtype", "auto") not in ("auto", dtype):
            raise UserError(f"dtype={dtype!r} but {part}.dtype={given['dtype']!r}; give one of them")
        out[part] = {**given, "dtype": dtype}
    return out


class LocalBackend:
    """`device="auto"` picks the GPU runtime when CUDA is available, the CPU runtime otherwise.

    `dtype` (auto, float32, bfloat16; float16 on a GPU) is the base weights' dtype: on CPU the engine's and
    trainer's, on a GPU Unsloth's and vLLM's (`unsloth.dtype`, `vllm.dtype`), so both sample and train
    the same weights. `where` says where the endpoint and the trainer run (a `Placement`: by default
    both in this machine's runtime). Extra keyword settings go to the runtime (CPU: port,
    max_batch_rows, threads; GPU: see `GpuSettings`, whose `placement` shares or splits the GPUs)."""

    def __init__(
        self,
        device: Literal["auto", "cpu", "cuda"] = "auto",
        dtype: str = "auto",
        *,
        where: Placement | None = None,
        **settings: Any,
    ):
        self.device = resolve_device(device)
        self.where = where or Placement()
        if self.where.host is not None:
            settings = {**settings, "host": self.where.host}
        self.settings = gpu_dtype_settings(settings, dtype) if self.device == "cuda" else {**settings, "dtype": dtype}
        self.runtimes: dict[str, Runtime] = {}

    @classmethod
    def from_config(cls, config: RuntimeConfig, where: Placement | None = None) -> LocalBackend:
        """The backend a run's `[runtime]` settings describe, its parts where `where` puts them; a
        setting only the other runtime reads is an error."""
        device = resolve_device(config.device)
        defaults = RuntimeConfig()
        if given := [
            k for k in (GPU_ONLY if device == "cpu" else CPU_ONLY) if getattr(config, k) != getattr(defaults, k)
        ]:
            other = "GPU" if device == "cpu" else "CPU"
            raise UserError(
                f"runtime.{given[0]} is a setting of the {other} runtime, but this run uses the {device.upper()} one "
                f"(runtime.device={config.device}); drop it, or set --device"
            )
        if device == "cpu":
            return cls("cpu", config.dtype, where=where, threads=config.threads)
        vllm = {"gpu_memory_utilization": config.gpu_memory_utilization} if config.gpu_memory_utilization else {}
        return cls(
            "cuda",
            config.dtype,
            where=where,
            placement=config.placement,
            train_gpu=config.train_gpu,
            serve_gpus=config.serve_gpus,
            vllm=vllm,
            unsloth={"load_in_4bit": config.load_in_4bit},
        )

    def _runtime(self, model: TrainableModel) -> Runtime:
        where = self.where
        if where.load_trainer is not None:  # both parts elsewhere (Ray actors): no device here
            return Runtime(model, where.load_trainer, where.start_endpoint)
        if self.device == "cuda":
            if where.start_endpoint is not None:
                raise UserError(
                    "with cluster.policy_replicas on a GPU machine, take the steps in a Ray actor too "
                    "(cluster.trainer_actor = true, trainer_gpus = 1): the GPU runtime's trainer shares its GPU with "
                    "its own vLLM"
                )
            return GpuRuntime(model, **self.settings)
        return CpuRuntime(model, start_endpoint=where.start_endpoint, **self.settings)

    async def register(self, model: TrainableModel) -> Runtime:
        key = f"{model.project}/{model.name}"
        if key not in self.runtimes:
            write_model_card(model.dir, model)
            rt = self._runtime(model)
            await rt.start()
            self.runtimes[key] = rt
        return self.runtimes[key]

    async def close(self) -> None:
        for rt in self.runtimes.values():
            await rt.close()
        self.runtimes.clear()

    async def __aenter__(self) -> LocalBackend:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
