"""Where a run's scenarios come from (`[scenarios]` in a run file) and its train/val sets.

In order: a JSONL file; a registered task set's generator of verifiable tasks (`tasks`); synthesis
from the server's tool schemas. The sets are written to the run's `scenarios/{train,val}.jsonl`,
and a resumed run reads them back, so it trains on exactly the scenarios it began with.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from mcprl.errors import UserError
from mcprl.types import Scenario, dump_jsonl, load_jsonl

if TYPE_CHECKING:
    from mcprl.tools import ToolSet


class ScenarioConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(default=None, description="scenarios JSONL (else --tasks or synthesis)")
    tasks: str | None = Field(default=None, description="a task set's generator: calculator, inventory, email, or one a package registers (mcprl.tasks entry points)")
    difficulties: list[int] = Field(default_factory=lambda: [1, 2, 3, 4, 5],
                                    description="with --tasks: only these difficulties (1-5)")
    n: int = Field(default=48, ge=2, description="scenarios to generate or synthesize")
    val_fraction: float = Field(default=0.25, gt=0, lt=1, description="share of the scenarios held out for evaluation")
    val_size: int | None = Field(default=None, ge=1, description="cap on held-out scenarios")
    task_hint: str | None = Field(default=None, description="synthesis: what the tasks should be about")
    # False measures a server as if it were a user's: the demonstration is built from a scenario,
    # and every check is all-or-nothing (success 1, anything else 0).
    task_help: bool = Field(default=True, description="--tasks: use its hand-written example and partial credit")


async def run_scenarios(cfg: ScenarioConfig, out_dir: Path, *, seed: int, resume: bool, toolset: ToolSet | None,
                        generate: Callable[..., list[Scenario]] | None, model: str, api_base: str | None,
                        say: Callable[[str], None] = print) -> tuple[list[Scenario], list[Scenario]]:
    """The run's (train, val), written to `out_dir` (read back from it when resuming). `generate`:
    the task set `cfg.tasks` names; `toolset`, `model` and `api_base`: synthesis."""
    from judges.verify import build_checks
    from scenarios.split import split_for_run

    train_file, val_file = out_dir / "train.jsonl", out_dir / "val.jsonl"
    if resume and train_file.exists() and val_file.exists():
        train, val = load_jsonl(train_file, Scenario), load_jsonl(val_file, Scenario)
    else:
        if cfg.file:
            scenarios, source = load_jsonl(Path(cfg.file), Scenario), cfg.file
        elif generate is not None:
            scenarios, source = generate(cfg.n, seed=seed, difficulties=cfg.difficulties), f"{cfg.tasks} task set"
        else:
            scenarios = await _synthesized(cfg, toolset, seed=seed, model=model, api_base=api_base, say=say)
            source = "synthesized"
        if len(scenarios) < 2:
            raise UserError(f"need at least 2 scenarios, got {len(scenarios)} from {source}")
        train, val = split_for_run(scenarios, cfg.val_fraction, cfg.val_size, seed)
        dump_jsonl(train, train_file)
        dump_jsonl(val, val_file)
        say(f"{len(train)} train / {len(val)} val scenarios ({source})")
    build_checks(train + val, cfg.file or "the scenarios")
    return train, val


async def _synthesized(cfg: ScenarioConfig, toolset: ToolSet | None, *, seed: int, model: str, api_base: str | None,
                       say: Callable[[str], None]) -> list[Scenario]:
    from scenarios.synthesize import synthesize

    if toolset is None:
        raise UserError("no scenarios: pass --scenarios FILE, --tasks NAME, or --server to synthesize from")
    say(f"synthesizing {cfg.n} scenarios with {model} (one line per generator call) ...")
    result = await synthesize(toolset.tools, cfg.n, model, api_base=api_base, task_hint=cfg.task_hint, seed=seed,
                              say=say, resources=toolset.resources, prompts=toolset.prompts)
    if len(result.scenarios) < 2:
        raise UserError(f"{result.report.failure(model, '--judge-model')}, or pass --scenarios FILE")
    if result.report.shortfall:
        say(f"warning: {result.report.failure(model, '--judge-model')}; training on those")
    return result.scenarios
