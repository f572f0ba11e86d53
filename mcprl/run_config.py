"""The settings of a training run: the same keys in a TOML file (`--config run.toml`) and as
flags; flags override the file; an unknown key is an error."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcprl.errors import UserError, first_problem


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # what to train against
    server: str | None = Field(default=None, description="MCP server: a URL or a stdio command")
    transport: Literal["auto", "stdio", "http", "sse"] = "auto"
    headers: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    # what to train
    model: str = "smollm2-135m"
    name: str = "agent"
    project: str = "default"
    # where tasks come from: a JSONL file, a shipped server's generator (`tasks = "calculator"`),
    # or synthesis from the tool schemas (`n` of them)
    scenarios: str | None = None
    tasks: str | None = None
    difficulties: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5])
    n: int = Field(default=48, ge=2)
    val_fraction: float = Field(default=0.25, gt=0, lt=1)
    val_size: int | None = Field(default=None, ge=1, description="cap on validation scenarios")
    task_hint: str | None = None
    # judging
    judge: Literal["ruler", "verify", "both"] = "verify"
    judge_model: str = "local"
    judge_api_base: str | None = None
    rubric: str | None = None
    # training
    steps: int = Field(default=10, ge=0)
    time_budget_minutes: float | None = Field(default=None, gt=0, description="stop training (then evaluate) once this much time went into steps")
    group_size: int = Field(default=4, ge=2)
    groups_per_step: int = Field(default=4, ge=1)
    learning_rate: float = Field(default=5e-5, gt=0)
    beta: float = Field(default=0.0, ge=0)
    scale_rewards: bool = True
    max_turns: int = Field(default=4, ge=1)
    max_tokens: int = Field(default=128, ge=1, description="per assistant turn")
    temperature: float = Field(default=1.0, ge=0)
    system_prompt: str | None = None
    demonstration: bool = True
    example: str | None = Field(default=None, description="JSON file: a list of chat messages shown before each task")
    # Hand-written help of a shipped task generator (`tasks`): its solved example and its checker's
    # partial credit. False measures a server as if it were a user's: the demonstration is built
    # from a scenario, and every check is all-or-nothing (success 1, anything else 0).
    task_help: bool = True
    # Tool-use shaping (judges.shaping): a failed task earns up to `shaping` for well-formed tool
    # calls, never reaching a solved task's reward. 0 turns it off. Default: docs/benchmarks.md.
    shaping: float = Field(default=0.1, ge=0, lt=1)
    # Dynamic sampling: extra scenarios a step may roll out when its groups have no reward variance.
    # None: as many as groups_per_step (at most 2x the step's rollouts); 0: off.
    max_extra_groups: int | None = Field(default=None, ge=0)
    # Written by the run (config.json), so that `mcprl eval` prompts the model as it was trained:
    # the example exchange used and where it came from (mcprl.demonstration).
    example_messages: list[dict[str, Any]] | None = None
    example_source: str | None = None
    eval_every: int = Field(default=5, ge=0, description="0: only before and after")
    eval_samples: int = Field(default=1, ge=1, description="rollouts per validation scenario")
    max_concurrency: int = Field(default=16, ge=1)
    seed: int = 0
    sft_warmup_steps: int = Field(default=0, ge=0, description="supervised steps on successful base-model rollouts before GRPO")
    wandb: bool = False
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto", description="base weights on CPU; auto: bfloat16 where the CPU computes it natively")

    @property
    def extra_groups(self) -> int:
        return self.groups_per_step if self.max_extra_groups is None else self.max_extra_groups

    def rollout_config(self):
        """How this run's agent is prompted and sampled: the same for training and evaluation."""
        from mcprl.rollout import DEFAULT_SYSTEM_PROMPT, RolloutConfig

        example = self.example_messages
        if example is None and self.tasks and self.task_help:
            from servers import registry

            example = registry.get(self.tasks).example
        return RolloutConfig(max_turns=self.max_turns, max_tokens=self.max_tokens, temperature=self.temperature,
                             system_prompt=self.system_prompt or DEFAULT_SYSTEM_PROMPT, demonstration=self.demonstration,
                             example=example)


def load_config(path: Path | None, overrides: dict[str, Any]) -> RunConfig:
    """File values, then flags (only those the user gave, i.e. not None)."""
    data: dict[str, Any] = {}
    if path is not None:
        if not path.exists():
            raise UserError(f"{path}: no such config file")
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as e:
            raise UserError(f"{path}: not valid TOML ({e})") from None
        unknown = sorted(set(data) - set(RunConfig.model_fields))
        if unknown:
            raise UserError(f"{path}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(RunConfig.model_fields)}")
    data.update({k: v for k, v in overrides.items() if v is not None and v != [] and v != {}})
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        raise UserError(f"bad setting {first_problem(e)}") from None
