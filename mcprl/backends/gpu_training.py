"""Training on a GPU with Unsloth: `FastLanguageModel` loads the base model (4-bit optional) and
wraps it with LoRA; our GRPOTrainer does the rest (exact-token sequences, chunked logprobs,
micro-batches) and saves the adapter in PEFT format, which vLLM loads as is.
unsloth is imported only inside `load_trainer`: it needs a GPU even to import."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import torch
from peft import LoraConfig
from pydantic import BaseModel, ConfigDict, Field

from mcprl.errors import UserError
from mcprl.train.config import LoraSettings, TrainConfig
from mcprl.train.grpo import GRPOTrainer
from mcprl.train.packing import PrefixBranches
from mcprl.types import TrajectoryGroup


class UnslothSettings(BaseModel):
    """How Unsloth loads the model the trainer updates."""

    model_config = ConfigDict(extra="forbid")

    # QLoRA: the trained base is 4-bit while vLLM samples from the 16-bit base, so the
    # sampling and training policies differ a little more than rounding (the GRPO ratio sees it).
    load_in_4bit: bool = False
    max_seq_length: int = Field(default=4096, ge=64)
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    # "unsloth" offloads checkpointed activations to CPU memory (Unsloth's default).
    gradient_checkpointing: bool | Literal["unsloth"] = "unsloth"
    random_state: int = 0


class UnslothGRPOTrainer(GRPOTrainer):
    """GRPOTrainer on a model Unsloth prepared: already PEFT-wrapped, on `device`, and with
    Unsloth's own gradient checkpointing, which HF's gradient_checkpointing_enable (what
    `TrainConfig.gradient_checkpointing` turns on) would replace, so that switch is ignored.
    Unsloth's fused attention takes padding masks only, so a group's prompt is not shared."""

    share_prefix = False
    mixed_precision = False  # Unsloth's kernels handle the LoRA dtypes themselves
    # A GPU micro-batch costs kernel launches more than memory bandwidth, so fewer, larger ones are
    # faster: 32768 tokens hold a whole step of 64 short agent sequences at once. Activation memory,
    # not speed, bounds it (the measurements: docs/benchmarks.md, "GPU: GRPO step vs TRL").
    default_micro_batch_tokens = 32768

    def __init__(self, model, tokenizer, lora: LoraSettings, device: torch.device):
        super().__init__(model, tokenizer, lora)
        self.device = device

    def step(
        self,
        groups: list[TrajectoryGroup],
        config: TrainConfig,
        rescore_constrained: bool = False,
        loss: str | None = None,
    ) -> dict[str, float]:
        """GRPOTrainer's step, plus `peak_gpu_memory_gb`: what torch reserved on the trainer's GPU during it."""
        gpu = self.device.type == "cuda"
        if gpu:
            torch.cuda.reset_peak_memory_stats(self.device)
        no_checkpointing = config.model_copy(update={"gradient_checkpointing": False})
        metrics = super().step(groups, no_checkpointing, rescore_constrained, loss)
        if gpu:
            metrics["peak_gpu_memory_gb"] = torch.cuda.max_memory_reserved(self.device) / 2**30
            torch.cuda.empty_cache()  # hand the activations' memory back before vLLM wakes up
        return metrics

    def _collate(
        self, mb: list[PrefixBranches], total_tokens: int, n_trajectories: int, config: TrainConfig
    ) -> dict[str, torch.Tensor]:
        return {
            k: v.to(self.device, non_blocking=True)
            for k, v in super()._collate(mb, total_tokens, n_trajectories, config).items()
        }


def lora_arguments(lora: LoraSettings, adapter_dir: Path | None) -> dict[str, Any]:
    """`get_peft_model` arguments: the checkpoint's own adapter config when resuming, else `lora`."""
    if adapter_dir is None:
        return {
            "r": lora.rank,
            "lora_alpha": lora.alpha,
            "lora_dropout": lora.dropout,
            "target_modules": lora.target_modules,
        }
    cfg = LoraConfig.from_pretrained(str(adapter_dir))
    targets = cfg.target_modules if isinstance(cfg.target_modules, str) else sorted(cfg.target_modules)
    return {"r": cfg.r, "lora_alpha": cfg.lora_alpha, "lora_dropout": cfg.lora_dropout, "target_modules": targets}


def load_trainer(
    model_path: str, lora: LoraSettings, adapter_dir: Path | None, settings: UnslothSettings, gpu: int
) -> UnslothGRPOTrainer:
    """Load `model_path` with Unsloth on cuda:`gpu`, add LoRA (the weights of `adapter_dir` when resuming)."""
    # Lazy: Unsloth needs a GPU even to import; the peft functions it patches are bound after it
    from unsloth import FastLanguageModel  # noqa: I001  (first: it patches transformers and peft on import)

    from peft import set_peft_model_state_dict
    from peft.utils import load_peft_weights

    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=model_path,
        max_seq_length=settings.max_seq_length,
        dtype=None if settings.dtype == "auto" else getattr(torch, settings.dtype),
        load_in_4bit=settings.load_in_4bit,
        load_in_16bit=not settings.load_in_4bit,
        device_map={"": gpu},
        use_exact_model_name=True,  # train exactly the base vLLM serves, never a hub remap
        fix_tokenizer=False,  # it may add tokens, and new tokens would train the embeddings
    )
    model = FastLanguageModel.get_peft_model(
        model,
        **lora_arguments(lora, adapter_dir),
        use_gradient_checkpointing=settings.gradient_checkpointing,
        random_state=settings.random_state,
    )
    if adapter_dir is not None:
        loaded = set_peft_model_state_dict(model, load_peft_weights(str(adapter_dir), device=f"cuda:{gpu}"))
        if loaded.unexpected_keys:
            raise UserError(
                f"{adapter_dir}: adapter weights do not fit the model ({loaded.unexpected_keys[0]} ...); was it "
                "trained on another base?"
            )
    return UnslothGRPOTrainer(model, tokenizer, lora, torch.device("cuda", gpu))
