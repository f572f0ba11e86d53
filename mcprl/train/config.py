"""Settings for a GRPO step and for the LoRA adapter being trained."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcprl.types import SUCCESS_THRESHOLD


class TrainConfig(BaseModel):
    """One training step's settings (may change between steps)."""

    model_config = ConfigDict(extra="forbid")

    learning_rate: float = Field(default=1e-3, gt=0, description="AdamW learning rate of the LoRA weights")
    # Advantage = reward - group mean, divided by the group std unless scale_rewards is False.
    scale_rewards: bool = Field(default=True, description="divide advantages by the group's reward std")
    # What a step optimises (mcprl.train.loss.LOSSES): "grpo", GRPO's group-relative advantages and the
    # PPO-clipped token loss; "rft", only the successes (reward at least `success_threshold`) at
    # advantage 1, a supervised warm-up on them (rejection-sampling fine-tuning) for when GRPO's
    # groups are still all failures; or module:function, a user's Loss with GRPO's advantages.
    loss: str = Field(
        default="grpo",
        description="grpo (group-relative advantages, PPO-clipped token loss), rft (successes only, at advantage 1), "
        "or module:function, your loss over the step's tensors",
    )
    # A success: full marks from a verifier; with RULER, an attempt the judge scored (near) perfect, never
    # merely the best of a poor group. The run's one definition of success: besides the warm-up's filter it
    # governs the success_rate metric, which groups count as solved (`unsolved`), the judges' all-or-nothing
    # and the usage report's outcome (mcprl.types.SUCCESS_THRESHOLD is only its default).
    success_threshold: float = Field(
        default=SUCCESS_THRESHOLD,
        gt=0,
        description="the score that counts as a success (success rate, solved tasks, warm-up, all-or-nothing)",
    )
    # PPO-style clipping of the ratio new/sampling policy (DAPO's asymmetric clip when high > low).
    epsilon: float = Field(default=0.2, ge=0, description="PPO clip range of the policy ratio")
    epsilon_high: float | None = Field(default=None, ge=0, description="upper clip range (DAPO); default: epsilon")
    # KL to the base model (the adapter disabled), k3 estimator; 0 skips the reference pass.
    beta: float = Field(
        default=0.0, ge=0, description="weight of the KL penalty to the base model (0: no reference pass)"
    )
    # "token": every loss token of the step weighs the same; "sequence": every sampled sequence (a
    # trajectory, its tokens averaged) does, however many training sequences it was split into.
    loss_normalization: Literal["token", "sequence"] = Field(
        default="token", description="weigh every loss token alike, or every trajectory"
    )
    max_grad_norm: float | None = Field(default=1.0, gt=0, description="gradient clipping norm")
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW weight decay")
    # Memory bounds: padded tokens per micro-batch, and positions per logprob chunk. Fewer, larger
    # micro-batches are faster (on CPU each one carries a fixed overhead: a forward and backward
    # through every layer and LoRA module); with gradient checkpointing its activations take about
    # 0.1 MB a token (SmolLM2-135M).
    # None: the trainer's own default (`GRPOTrainer.default_micro_batch_tokens`: 2048 on CPU,
    # larger on a GPU, where a micro-batch costs launches rather than memory bandwidth).
    micro_batch_tokens: int | None = Field(
        default=None, ge=64, description="padded tokens per micro-batch; default: the trainer's own"
    )
    logprob_chunk: int = Field(default=64, ge=16, description="positions per logprob chunk")
    # Off, a micro-batch keeps every layer's activations for the backward pass: about 0.8 MB a token on
    # SmolLM2-135M, a fifth faster a step (docs/benchmarks.md); auto keeps them where they fit with room to spare.
    gradient_checkpointing: bool | Literal["auto"] = Field(
        default="auto",
        description="recompute activations in the backward pass to save memory; auto: where a micro-batch's "
        "would take more than a quarter of the free memory",
    )
    # The asynchronous pipeline (mcprl.run.pipeline.Pipeline): rollouts for the next K steps run while a
    # step trains, and the server keeps the adapters of the last K+1 steps for them. A group sampled
    # by the adapter of step v is trained at step s only if s - v <= K, else dropped and counted.
    max_off_policy_steps: int = Field(
        default=0,
        ge=0,
        description="steps rollouts may run ahead of training, each group trained "
        "at most this many steps after the policy that sampled it (0: synchronous)",
    )


class LoraSettings(BaseModel):
    """The LoRA adapter a run trains (`[lora]`); a resumed run keeps its checkpoint's."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(default=8, ge=1, description="LoRA rank r of the adapter's matrices")
    alpha: int = Field(default=16, ge=1, description="LoRA alpha: the update is scaled by alpha / rank")
    dropout: float = Field(default=0.0, ge=0, lt=1, description="dropout on the adapter's input while training")
    target_modules: list[str] | Literal["all-linear"] = Field(
        default="all-linear", description="the modules that get an adapter: names (q_proj, v_proj, ...) or all-linear"
    )

    @field_validator("target_modules", mode="before")
    @classmethod
    def _all_linear(cls, value: Any) -> Any:
        """`--lora-target-modules all-linear` (a list of that one word) is all-linear."""
        return "all-linear" if value == ["all-linear"] else value
