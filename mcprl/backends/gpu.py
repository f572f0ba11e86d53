"""The GPU runtime: vLLM serves the base model and the LoRA steps (`NAME@STEP`, swapped in after
each step without restarting it), Unsloth + our GRPOTrainer train the adapter. On one GPU they
take turns ("shared": vLLM sleeps while the trainer steps); with more, each gets its own ("split").
Checkpoints use the CPU runtime's layout and PEFT format. vllm and unsloth are imported only
inside this runtime's methods (vLLM only in its subprocess), never on the CPU path."""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio
import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from transformers import AutoTokenizer

from mcprl.backends.base import Runtime
from mcprl.backends.gpu_serving import VllmEndpoint, VllmLaunch, VllmProcess, VllmSettings, free_port
from mcprl.backends.gpu_training import UnslothSettings, load_trainer
from mcprl.errors import UserError, first_problem
from mcprl.model import weights
from mcprl.model.chat_format import template_supports_tools, tool_template
from mcprl.serving.local import check_port_free

GPU_PACKAGES = ("vllm", "unsloth")


class GpuSettings(BaseModel):
    """`LocalBackend(device="cuda", **settings)`."""

    model_config = ConfigDict(extra="forbid")

    # None: "split" when more than one GPU is visible, else "shared".
    placement: Literal["shared", "split"] | None = None
    train_gpu: int = Field(default=0, ge=0)  # torch index of the trainer's GPU
    # split only: the GPUs vLLM gets (tensor parallel over them); default: the first one that is not train_gpu.
    serve_gpus: list[int] | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)  # 0: a free port
    vllm: VllmSettings = Field(default_factory=VllmSettings)
    unsloth: UnslothSettings = Field(default_factory=UnslothSettings)


@dataclass(frozen=True)
class GpuLayout:
    """Which GPUs the trainer and vLLM use, and whether they share one (`GpuSettings.placement`)."""

    shared: bool
    train_gpu: int
    serve_gpus: list[int]


def resolve_placement(settings: GpuSettings, device_count: int) -> GpuLayout:
    """Which GPUs the trainer and vLLM use, given `device_count` visible GPUs."""
    if settings.train_gpu >= device_count:
        raise UserError(f"train_gpu={settings.train_gpu} but only {device_count} GPU(s) are visible")
    placement = settings.placement or ("split" if device_count > 1 else "shared")
    if placement == "shared":
        if settings.serve_gpus not in (None, [settings.train_gpu]):
            raise UserError(
                f"placement='shared' serves on train_gpu={settings.train_gpu}; drop serve_gpus or use placement='split'"
            )
        return GpuLayout(True, settings.train_gpu, [settings.train_gpu])
    others = [i for i in range(device_count) if i != settings.train_gpu]
    serve = settings.serve_gpus if settings.serve_gpus is not None else others[:1]
    if not serve:
        raise UserError(
            f"placement='split' needs a second GPU for vLLM, but {device_count} is visible; use placement='shared'"
        )
    if settings.train_gpu in serve or any(i >= device_count or i < 0 for i in serve):
        raise UserError(
            f"serve_gpus={serve} must be visible GPUs other than train_gpu={settings.train_gpu} (visible: "
            f"0..{device_count - 1})"
        )
    return GpuLayout(False, settings.train_gpu, list(serve))


def visible_devices(indices: list[int], parent: str | None) -> list[str]:
    """CUDA_VISIBLE_DEVICES entries for a child that should see our torch devices `indices`
    (which are positions in our own CUDA_VISIBLE_DEVICES when that is set)."""
    if not parent:
        return [str(i) for i in indices]
    ours = [d.strip() for d in parent.split(",") if d.strip()]
    return [ours[i] for i in indices]


def shared_memory_utilization(free: int, total: int) -> float:
    """vLLM's share of a GPU it shares with the trainer: 90% of what the loaded trainer left free."""
    share = int(90 * free / total) / 100
    if share < 0.05:
        raise UserError(
            f"only {free / 2**30:.1f} GiB of {total / 2**30:.1f} GiB GPU memory is free after loading the trainer; "
            "use a smaller model, unsloth.load_in_4bit, or placement='split'"
        )
    return share


def missing_gpu_packages() -> list[str]:
    return [p for p in GPU_PACKAGES if importlib.util.find_spec(p) is None]


def gpu_unavailable_reason(cuda_available: bool, missing: list[str]) -> str | None:
    """Why the GPU runtime cannot run here (one line), or None."""
    if not cuda_available:
        return "device='cuda' but CUDA is not available on this machine; use device='cpu'"
    if missing:
        return f"the GPU backend needs vllm and unsloth (missing: {', '.join(missing)}): pip install 'mcprl[gpu]'"
    return None


def tool_chat_template(model_path: str, out_dir: Path) -> Path | None:
    """The chat template file vLLM should use: None when the model's own template renders tools,
    else ours (`mcprl.model.chat_format.tool_template()`) written into `out_dir`."""
    if template_supports_tools(AutoTokenizer.from_pretrained(model_path).chat_template):
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "chat_template.jinja"
    path.write_text(tool_template())
    return path


def say(line: str) -> None:
    """Progress of slow GPU work (vLLM's start), on stderr: `mcprl train` shows it above its progress bar."""
    print(f"[gpu] {line}", file=sys.stderr, flush=True)


class GpuRuntime(Runtime):
    """`Runtime` with Unsloth + GRPOTrainer training in this process and vLLM (a subprocess,
    `VllmEndpoint`) serving; see the module doc."""

    def __init__(self, model, **settings):
        super().__init__(model, self._load_trainer, self._start_endpoint)
        try:
            self.settings = GpuSettings.model_validate(settings)
        except ValidationError as e:
            raise UserError(f"GPU backend setting {first_problem(e)}") from None
        self._api_key = secrets.token_urlsafe(24)
        # vLLM's environment: ours before load_trainer imports Unsloth, which changes it (see VllmLaunch.env).
        self.launch_env = dict(os.environ)
        self.placement: GpuLayout | None = None

    async def start(self) -> None:
        if reason := gpu_unavailable_reason(torch.cuda.is_available(), missing_gpu_packages()):
            raise UserError(reason)
        self.placement = resolve_placement(self.settings, torch.cuda.device_count())
        await super().start()

    def _load_trainer(self, checkpoint: Path | None):
        return load_trainer(
            weights.resolve(self.model.base_model),
            self.model.lora,
            checkpoint,
            self.settings.unsloth,
            self.placement.train_gpu,
        )

    async def _start_endpoint(self, trainer) -> VllmEndpoint:
        """vLLM on the placement's GPUs, sized to what the loaded trainer left where it shares the trainer's GPU."""
        s, p = self.settings, self.placement
        util = s.vllm.gpu_memory_utilization
        if util is None and p.shared:
            torch.cuda.empty_cache()  # what loading left in torch's cache is free for vLLM
            util = shared_memory_utilization(*torch.cuda.mem_get_info(p.train_gpu))
        elif util is None:
            util = 0.9
        if s.port:
            check_port_free(s.host, s.port)
        model_path = weights.resolve(self.model.base_model)
        launch = VllmLaunch(
            settings=s.vllm,
            model_path=model_path,
            served_name=self.model.base_model,
            host=s.host,
            port=s.port or free_port(s.host),
            lora_rank=next(iter(trainer.model.peft_config.values())).r,
            gpus=visible_devices(p.serve_gpus, os.environ.get("CUDA_VISIBLE_DEVICES")),
            gpu_memory_utilization=util,
            sleep_mode=p.shared,
            chat_template=tool_chat_template(model_path, self.model.dir),
            api_key=self._api_key,
        )
        log = self.model.dir / "vllm.log"
        say(f"starting vLLM (log: {log}; a first start compiles for minutes, later ones reuse its caches)")
        vllm = VllmProcess.start(launch.command(), launch.env(self.launch_env), log, launch.base_url, self._api_key)
        try:
            t = time.monotonic()
            await vllm.wait_ready(s.vllm.startup_timeout_s, report=say)
            say(f"vLLM ready after {time.monotonic() - t:.0f}s")
        except BaseException:
            await anyio.to_thread.run_sync(vllm.close)
            raise
        return VllmEndpoint(vllm, shares_gpu=p.shared)
