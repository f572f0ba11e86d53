"""AutoRL: from a task description to a trained model.

`plan` generates (or reuses) what a run needs and saves it next to the run, in
`<MCPRL_HOME>/<project>/<name>/autorl/`:

    task.txt           the description it was made from
    system_prompt.txt  the policy's system prompt
    inputs.jsonl       the task inputs (Scenario lines; `{"task": "..."}` is enough): with a server,
                       tasks grounded in its own answers (mcprl.scenarios.grounded), checked by value and
                       ranked by RULER; without one, written by the generator and judged by RULER
    rubric.md          the RULER rubric

A file that already exists is used as it is, so a user can edit any of them (or delete one to
have it generated again) and rerun; `reuse=False` (`--regenerate`) makes all of them anew.
`autorl` then trains on them: the usual `TrainingRun`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcprl.autorl.generate import generate_inputs, generate_rubric, generate_system_prompt
from mcprl.errors import UserError, first_problem
from mcprl.llm import LOCAL_MODEL
from mcprl.paths import model_dir
from mcprl.run.config import RunConfig
from mcprl.run.runner import TrainingRun
from mcprl.scenarios.source import grounded
from mcprl.tools import ToolPool
from mcprl.types import Scenario, ToolSchema, load_jsonl

TASK, SYSTEM_PROMPT, INPUTS, RUBRIC = "task.txt", "system_prompt.txt", "inputs.jsonl", "rubric.md"


def autorl_dir(project: str, name: str) -> Path:
    return model_dir(project, name) / "autorl"


async def inputs_jsonl(making: Awaitable[list[Scenario]]) -> str:
    """One input per line, without the fields left at their defaults (easier to edit)."""
    return "".join(s.model_dump_json(exclude_defaults=True) + "\n" for s in await making)


async def server_tools(cfg: RunConfig) -> list[ToolSchema]:
    async with ToolPool(cfg.server.spec()) as pool:  # a cassette's tools with --replay
        return pool.toolset.tools


def inputs_needed(cfg: RunConfig) -> int:
    """Inputs enough for the run's steps (each takes `groups_per_step`) plus its validation share,
    at least 8 and at most `scenarios.n`: a 1-step trial run does not wait for 48 generator calls."""
    return min(cfg.scenarios.n, max(8, math.ceil(cfg.steps * cfg.groups_per_step / (1 - cfg.scenarios.val_fraction))))


async def plan(
    task: str, cfg: RunConfig, *, gen_model: str = LOCAL_MODEL, reuse: bool = True, say: Callable[[str], None] = print
) -> RunConfig:
    """`cfg` set up to train on the saved (or newly generated) system prompt, inputs and rubric,
    judged by RULER. Generation uses `gen_model` at `cfg.judge.api_base` and `cfg.seed`; it writes
    `cfg.scenarios.n` inputs when that was set, else `inputs_needed(cfg)`."""
    task = task.strip()
    if not task:
        raise UserError("the task description is empty; say in a sentence what the model should do")
    d = autorl_dir(cfg.project, cfg.name)
    d.mkdir(parents=True, exist_ok=True)
    saved_task = (d / TASK).read_text().strip() if (d / TASK).exists() else None
    if reuse and saved_task is not None and saved_task != task:
        raise UserError(
            f"{d / TASK} holds another task ({saved_task[:60]!r}); pass --regenerate to replace what was "
            "generated for it, or --name NEW for a separate run"
        )
    (d / TASK).write_text(task + "\n")

    def saved(filename: str) -> str | None:
        """The text of a file to reuse, or None when it is to be generated."""
        path = d / filename
        if not reuse or not path.exists():
            return None
        text = path.read_text().strip()
        if not text:
            raise UserError(f"{path} is empty; write it, or delete it to have it generated again")
        say(f"using the saved {path} (edit it, or delete it or pass --regenerate to generate it again)")
        return text

    async def generate(filename: str, making: Awaitable[str], by: str = gen_model) -> str:
        path = d / filename
        say(f"generating {path.name} with {by} ...")
        try:
            text = await making
        except UserError as e:
            raise UserError(f"{e}, or write {path} yourself and rerun") from None
        path.write_text(text.rstrip("\n") + "\n")
        return text

    system_prompt, inputs, rubric = saved(SYSTEM_PROMPT), saved(INPUTS), saved(RUBRIC)
    tools = await server_tools(cfg) if cfg.server.connects and (system_prompt is None or inputs is None) else None
    api_base, seed = cfg.judge.api_base, cfg.seed
    if system_prompt is None:
        system_prompt = await generate(
            SYSTEM_PROMPT, generate_system_prompt(task, gen_model, api_base=api_base, tools=tools, seed=seed, say=say)
        )
    if inputs is None:
        n = cfg.scenarios.n if "n" in cfg.scenarios.model_fields_set else inputs_needed(cfg)
        if cfg.server.connects:  # tasks grounded in the server's own answers, each with its check
            made = await generate(INPUTS, inputs_jsonl(grounded_inputs(cfg, n, d, say)), by="the server's own answers")
        else:
            made = await generate(
                INPUTS,
                inputs_jsonl(generate_inputs(task, n, gen_model, api_base=api_base, tools=tools, seed=seed, say=say)),
            )
        say(f"{len(made.splitlines())} of {n} inputs written (-n sets how many)")
    if rubric is None:
        await generate(RUBRIC, generate_rubric(task, gen_model, api_base=api_base, seed=seed, say=say))
    # inputs that all carry checks are judged by them, RULER ranking the ones that pass; others by RULER
    checked = all(s.check is not None for s in load_jsonl(d / INPUTS, Scenario))
    return cfg.model_copy(
        update={
            "scenarios": cfg.scenarios.model_copy(update={"file": str(d / INPUTS)}),
            "rollout": cfg.rollout.model_copy(update={"system_prompt": system_prompt}),
            "judge": cfg.judge.model_copy(update={"mode": "both" if checked else "ruler", "rubric": str(d / RUBRIC)}),
        }
    )


async def grounded_inputs(cfg: RunConfig, n: int, d: Path, say: Callable[[str], None]) -> list[Scenario]:
    """`n` tasks grounded in the run's server (mcprl.scenarios.grounded); the exploration is saved beside them."""
    async with ToolPool(cfg.server.spec()) as pool:
        return await grounded(
            pool,
            n,
            cfg.explore,
            d / "exploration.jsonl",
            d / "grounding.json",
            seed=cfg.seed,
            max_calls=cfg.rollout.calls_per_episode,
            say=say,
        )


async def autorl(
    task: str,
    *,
    gen_model: str = LOCAL_MODEL,
    api_base: str | None = None,
    reuse: bool = True,
    resume: bool = False,
    say: Callable[[str], None] = print,
    **settings: Any,
) -> dict[str, Any]:
    """Generate (or reuse) a system prompt, inputs and a rubric for `task`, then train on them.

    `settings` are RunConfig fields, sections as dicts (`steps=3, scenarios={"n": 8},
    rollout={"max_turns": 2}`); `api_base` serves both `gen_model` and the judge. Returns
    TrainingRun's summary."""
    judge = {**settings.pop("judge", {}), **({"api_base": api_base} if api_base else {})}
    try:
        cfg = RunConfig.model_validate({**settings, "judge": judge})
    except ValidationError as e:
        raise UserError(f"bad setting {first_problem(e)}") from None
    cfg = await plan(task, cfg, gen_model=gen_model, reuse=reuse, say=say)
    return await TrainingRun(cfg, resume=resume, say=say).run()
