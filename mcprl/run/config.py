"""The settings of a training run: one model, nested by stage, each section the model that
stage itself takes, so a setting has one name and one default wherever it is used:

    [server]     mcprl.tools.config.ServerConfig         what to train against (discovery, mcprl.tools)
    [scenarios]  mcprl.scenarios.config.ScenarioConfig   where the tasks come from, the train/val split
    [explore]    mcprl.scenarios.config.ExploreConfig    how far the server is explored to ground tasks in it
    [rollout]    mcprl.rollout.config.RolloutConfig      how the agent is prompted and sampled
    [judge]      mcprl.judges.JudgeConfig                how rollouts are scored (and who writes scenarios)
    [train]      mcprl.train.config.TrainConfig          the GRPO step
    [cluster]    mcprl.cluster.ClusterConfig             where rollouts run: this process, or Ray workers
    [lora]       mcprl.train.config.LoraSettings         the adapter it trains (rank, alpha, dropout, modules)
    [runtime]    mcprl.backends.config.RuntimeConfig     where it trains and serves (device, dtype, CPU threads, GPUs)

The rest is the run's own: what it trains and where it writes (model, name, project, seed,
wandb), and the loop no stage owns (steps, time budget, groups, dynamic sampling,
warm-up, evaluation cadence, concurrency), which mcprl.run.runner reads. Where the demonstration
comes from is the run's too (`demonstration_file`, `demonstration_per_tool`): the run settles it
(mcprl.run.demonstration) and records it in `rollout.demonstrations`, with where it came from in
`demonstration_source`.

A run file (`--config run.toml`, or a run's own config.json) holds these keys, sections as
tables (`[rollout]` then `max_turns = 2`); every setting is also a flag of `mcprl train`
(`--max-turns 2`, mcprl.cli.flags), and flags win over the file. An unknown key is an
error.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcprl.backends.config import RuntimeConfig
from mcprl.cluster import ClusterConfig
from mcprl.errors import UserError, first_problem
from mcprl.judges import JudgeConfig
from mcprl.paths import DirName
from mcprl.rollout.config import RolloutConfig
from mcprl.scenarios.config import ExploreConfig, ScenarioConfig
from mcprl.tools.config import ServerConfig
from mcprl.tools.redact import MASK, redact
from mcprl.train.config import LoraSettings, TrainConfig

WRITTEN_BY_THE_RUN = {"cli": False}  # a field the run fills in: in config.json, not a flag


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(default="smollm2-135m", description="base model: alias, local dir or HF id")
    name: DirName = Field(default="agent", description="model name")
    project: DirName = Field(default="default", description="project")
    seed: int = Field(default=0, description="seeds the scenarios, the split and each step's batch")
    steps: int = Field(default=10, ge=0, description="training steps")
    time_budget_minutes: float | None = Field(
        default=None, gt=0, description="minutes of training after which to stop and evaluate"
    )
    group_size: int = Field(default=4, ge=2, description="rollouts per scenario")
    groups_per_step: int = Field(default=4, ge=1, description="scenarios per step")
    # Dynamic sampling: a group whose rewards are all equal teaches GRPO nothing.
    max_extra_groups: int | None = Field(
        default=None,
        ge=0,
        description="extra scenarios a step may draw when groups have no reward variance (default: groups per step; 0: "
        "off)",
    )
    # A cold start: a small policy's own rollouts solve almost none of a new server's tasks, so GRPO's
    # first steps have nothing to learn from but the written references `unsolved` adds, one a group.
    # Reference steps come first and roll nothing out: each trains on the reference chains of
    # groups_per_step x group_size grounded tasks (mcprl.run.references.written_chain, after the prompt
    # the policy's rollouts get) with the warm-up loss, supervised. Off by default: on mcp-server-git they
    # taught the calls but not the answers, and held-out success did not move (docs/benchmarks.md, "Reference steps").
    reference_epochs: float = Field(
        default=0.0,
        ge=0,
        description="passes over the grounded tasks' reference chains, trained on before any rollout (steps of "
        "groups_per_step x group_size chains, counted in --steps)",
    )
    sft_warmup_steps: int = Field(
        default=0, ge=0, description="first steps (after any reference steps) reinforce only successful rollouts"
    )
    warmup_loss: str = Field(
        default="rft", description="the loss of the warm-up steps (a train.loss name or module:function)"
    )
    demonstration_per_tool: bool = Field(
        default=False,
        description="a zero-data run's demonstration: one grounded reference call per tool, each task shown one of "
        "them (else one for every task)",
    )
    # A group in which no rollout solved its (grounded) task teaches GRPO nothing; what to do with one:
    # a strategy of mcprl.run.unsolved.UNSOLVED by name, or module:attribute, resolved when the run starts.
    # The default is the one that learned most (docs/benchmarks.md, "Unsolved groups").
    unsolved: str = Field(
        default="reference",
        description="a grounded task no rollout solved: skip it (skip); roll it out again with its first reference "
        "call shown, trained on when that solves it (guided-retry); add its reference chain, written as the policy "
        "should have written it, to the group as its one success (reference); or module:attribute, your Strategy",
    )
    eval_every: int = Field(default=5, ge=0, description="evaluate every E steps (0: only first and last)")
    eval_samples: int = Field(default=1, ge=1, description="rollouts per held-out scenario")
    max_concurrency: int = Field(default=16, ge=1, description="rollouts at once")
    wandb: bool = Field(default=False, description="log to Weights & Biases when installed")
    demonstration_file: str | None = Field(
        default=None,
        description="a JSON list of chat messages shown before each task as its demonstration (else built from a "
        "scenario)",
    )
    demonstration_source: str | None = Field(
        default=None,
        description="where rollout.demonstrations came from (mcprl.run.demonstration)",
        json_schema_extra=WRITTEN_BY_THE_RUN,
    )

    server: ServerConfig = Field(default_factory=ServerConfig)
    scenarios: ScenarioConfig = Field(default_factory=ScenarioConfig)
    explore: ExploreConfig = Field(default_factory=ExploreConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    lora: LoraSettings = Field(default_factory=LoraSettings)
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)

    @property
    def extra_groups(self) -> int:
        return self.groups_per_step if self.max_extra_groups is None else self.max_extra_groups

    def redacted(self, secrets: list[str]) -> dict[str, Any]:
        """What config.json holds: every header value and every secret masked."""
        data = self.model_dump(mode="json")
        data["server"]["headers"] = dict.fromkeys(data["server"]["headers"], MASK)
        return redact(data, secrets)


SECTIONS: dict[str, type[BaseModel]] = {
    name: f.annotation
    for name, f in RunConfig.model_fields.items()
    if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)
}


def check_keys(data: Mapping[str, Any], where: str) -> None:
    """An unknown key (or a section that is not a table) is a one-line error naming the known ones."""
    known = [k for k in RunConfig.model_fields if k not in SECTIONS]
    if unknown := [k for k in data if k not in RunConfig.model_fields]:
        raise UserError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(known)}; "
            f"sections: {' '.join(f'[{s}]' for s in SECTIONS)}"
        )
    for section in SECTIONS:
        if section not in data:
            continue
        if not isinstance(data[section], dict):
            raise UserError(f"{where}: {section} must be a table ([{section}] with its keys below it)")
        fields = SECTIONS[section].model_fields
        if unknown := [k for k in data[section] if k not in fields]:
            raise UserError(
                f"{where}: unknown key(s) {', '.join(f'{section}.{k}' for k in unknown)}; "
                f"known keys in [{section}]: {', '.join(fields)}"
            )


def read_run_file(path: Path) -> dict[str, Any]:
    """A run file's settings (TOML, or JSON such as a run's config.json), unknown keys refused."""
    if not path.exists():
        raise UserError(f"{path}: no such config file")
    try:
        data = json.loads(path.read_text()) if path.suffix == ".json" else tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'} ({e})") from None
    check_keys(data, str(path))
    return data


def load_config(path: Path | None, overrides: Mapping[str, Any]) -> RunConfig:
    """The run file's settings (a run's own config.json is one too), then the
    overrides (flags) the user gave: `{"rollout.max_turns": 2}`; None, [] and {} mean not given,
    and a table given (headers, env) adds to the file's."""
    data = {} if path is None else read_run_file(path)
    for place, value in overrides.items():
        if value is None or value == [] or value == {}:
            continue
        section, _, leaf = place.rpartition(".")
        target = data.setdefault(section, {}) if section else data
        if isinstance(target.get(leaf), dict) and section:  # a table's entries ('Name: value' lines) add to the file's
            value = {**target[leaf], **getattr(SECTIONS[section].model_validate({leaf: value}), leaf)}
        target[leaf] = value
    check_keys(data, "settings")
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as e:
        raise UserError(f"bad setting {first_problem(e)}") from None
    if path is not None:
        check_secrets_given(cfg, path)
    return cfg


def check_secrets_given(cfg: RunConfig, config: Path) -> None:
    """A run's config.json masks its secrets (header values, secret-looking env values); connecting
    with the mask in their place would fail obscurely, so each must be given again as a flag."""
    server = cfg.server
    for flag, table, sep in (("--header", server.headers, ": "), ("--env", server.env, "=")):
        if masked := [k for k, v in table.items() if MASK in v]:
            raise UserError(
                f"{config} does not hold the value of {', '.join(masked)} (secrets are masked); "
                f"give it again: {flag} '{masked[0]}{sep}...'"
            )
    if server.target is not None and MASK in server.target:
        raise UserError(
            f"{config} does not hold the server's full address (a secret in it is masked); give it again: --server ..."
        )


def load_saved(path: Path) -> RunConfig:
    """A run's own config.json as settings."""
    try:
        return RunConfig.model_validate(json.loads(path.read_text()))
    except ValidationError as e:
        raise UserError(f"{path}: cannot read this run's settings ({first_problem(e)})") from None
