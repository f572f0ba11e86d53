"""Where a run trains and serves: the `[runtime]` section of its settings, which `LocalBackend`
(mcprl.backends.local) takes. Plain settings only, so reading a run's settings loads no runtime."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# The settings only one runtime reads (the rest, device and dtype, both do).
CPU_ONLY = ("threads",)
GPU_ONLY = ("placement", "train_gpu", "serve_gpus", "gpu_memory_utilization", "load_in_4bit")


class RuntimeConfig(BaseModel):
    """The runtime's settings: the device, the base weights' dtype, and what the CPU runtime
    (`threads`) or the GPU runtime (vLLM + Unsloth: the rest) takes. A setting of the runtime a
    run does not use is an error, never ignored."""

    model_config = ConfigDict(extra="forbid")

    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto",
        description="cuda: vLLM + Unsloth on GPUs, cpu: our engine and trainer (auto: cuda when available)",
    )
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="base weights, CPU or GPU (auto: bfloat16 on CPUs that compute it natively; the model's on a GPU)",
    )
    threads: int | None = Field(
        default=None, ge=1, description="CPU: torch threads for sampling and training (default: torch's own)"
    )
    placement: Literal["shared", "split"] | None = Field(
        default=None,
        description="GPU: the trainer and vLLM take turns on one GPU, or each gets its own (default: split when 2+ "
        "GPUs are visible)",
    )
    train_gpu: int = Field(default=0, ge=0, description="GPU: the trainer's GPU (torch index)")
    serve_gpus: list[int] | None = Field(
        default=None,
        description="GPU, split: vLLM's GPUs, tensor parallel (default: the first one that is not train_gpu)",
    )
    gpu_memory_utilization: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="GPU: vLLM's share of its GPU's memory (default: 0.9; shared: 90% of what the trainer left)",
    )
    load_in_4bit: bool = Field(
        default=False, description="GPU: Unsloth trains on a 4-bit base (QLoRA); vLLM samples the 16-bit one"
    )
