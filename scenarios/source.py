"""Where a run's scenarios come from (`[scenarios]` in a run file) and its train/val sets.

In order: a JSONL file; a registered task set's generator of verifiable tasks (`tasks`); else, by
`source`, tasks grounded in the live server's own answers (`grounded`, the default: the server is
explored and every task's answer is checked by value, mcprl.scenarios.grounded), or tasks synthesized by
the generator model from the tool schemas (`synthesized`, judged by RULER). The sets are written to the run's
`scenarios/{train,val}.jsonl`,
and a resumed run reads them back, so it trains on exactly the scenarios it began with.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcprl.errors import UserError, clip
from mcprl.llm import LLMError, complete, extract_json, is_local
from mcprl.scenarios.config import ExploreConfig, ScenarioConfig
from mcprl.scenarios.explore import explore as explore_server
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.split import split_for_run
from mcprl.scenarios.synthesize import synthesize
from mcprl.types import Scenario, dump_jsonl, load_jsonl

if TYPE_CHECKING:
    from mcprl.tools import ToolPool


GENERATED = (
    8  # exploration calls whose arguments the generator writes, by default (the offline local one: LOCAL_GENERATED)
)
LOCAL_GENERATED = 4
# what a run that grounded too few tasks can do instead, in `mcprl train`'s flags (`grounded(fixes=...)`: another
# command's)
TRAIN_FIXES = (
    "pass --scenarios FILE with your own tasks, --example FILE with a solved call, or --scenario-source "
    "synthesized with a stronger --judge-model"
)
PROPOSE_PROMPT = (
    "Write the arguments of one call of this tool as JSON: realistic values a user would ask it about, "
    "taken from the values seen when one fits."
)


async def run_scenarios(
    cfg: ScenarioConfig,
    out_dir: Path,
    *,
    seed: int,
    resume: bool,
    pool: ToolPool | None,
    generate: Callable[..., list[Scenario]] | None,
    model: str,
    api_base: str | None,
    explore: ExploreConfig | None = None,
    secrets: list[str] | None = None,
    max_calls: int | None = None,
    say: Callable[[str], None] = print,
) -> tuple[list[Scenario], list[Scenario]]:
    """The run's (train, val), written to `out_dir` (read back from it when resuming). `generate`:
    the task set `cfg.tasks` names; `pool`: the server to ground tasks in or synthesize them for
    (`explore` bounds grounding; its record goes to `out_dir/exploration.jsonl`, secrets masked);
    `model`, `api_base`: synthesis; `max_calls`: the calls an episode has room for (grounded tasks that need more are
    not kept)."""
    train_file, val_file = out_dir / "train.jsonl", out_dir / "val.jsonl"
    if resume and train_file.exists() and val_file.exists():
        train, val = load_jsonl(train_file, Scenario), load_jsonl(val_file, Scenario)
    else:
        if cfg.file:
            scenarios, source = load_jsonl(Path(cfg.file), Scenario), cfg.file
        elif generate is not None:
            scenarios, source = generate(cfg.n, seed=seed, difficulties=cfg.difficulties), f"{cfg.tasks} task set"
        elif pool is None:
            raise UserError(
                "no scenarios: pass --scenarios FILE, --tasks NAME, or --server to ground or synthesize them from"
            )
        elif cfg.source == "grounded":
            scenarios = await grounded(
                pool,
                cfg.n,
                explore,
                out_dir / "exploration.jsonl",
                out_dir / "grounding.json",
                seed=seed,
                secrets=secrets,
                model=model,
                api_base=api_base,
                max_calls=max_calls,
                say=say,
            )
            source = "grounded"
        else:
            scenarios = await _synthesized(cfg, pool, seed=seed, model=model, api_base=api_base, say=say)
            source = "synthesized"
        if len(scenarios) < 2:
            raise UserError(f"need at least 2 scenarios, got {len(scenarios)} from {source}")
        train, val = split_for_run(scenarios, cfg.val_fraction, cfg.val_size, seed)
        dump_jsonl(train, train_file)
        dump_jsonl(val, val_file)
        say(f"{len(train)} train / {len(val)} val scenarios ({source})")
    return train, val


async def grounded(
    pool: ToolPool,
    n: int,
    explore: ExploreConfig | None,
    record: Path,
    report_file: Path,
    *,
    seed: int,
    secrets: list[str] | None = None,
    model: str = "local",
    api_base: str | None = None,
    max_calls: int | None = None,
    fixes: str = TRAIN_FIXES,
    say: Callable[[str], None] = print,
) -> list[Scenario]:
    """`n` tasks grounded in `pool`'s server (mcprl.scenarios.grounded), with the exploration's record
    (JSONL, secrets masked) and the grounding report (JSON) written; a server that grounds fewer
    than 2 says, a line per tool, what each that never answered gave and what was tried, then is a
    UserError naming `fixes` (in the flags of the command that runs it). `model` (the generator)
    writes arguments for tools that do not answer, and rephrases the tasks when `explore.phrase` says so."""
    cfg = explore or ExploreConfig()
    phrase = cfg.phrase if cfg.phrase is not None else not is_local(model)
    record.parent.mkdir(parents=True, exist_ok=True)
    say(f"exploring {pool.spec.target} (at most {cfg.calls} calls, {cfg.minutes:g} min) ...")

    async def propose(tool: dict[str, Any], seen: list[Any]) -> dict[str, Any] | None:
        """Arguments for one call of `tool`, by the generator; None when its call fails (exploring goes on)."""
        shown = json.dumps(seen[:12], default=str)[:600]
        messages = [
            {"role": "system", "content": PROPOSE_PROMPT},
            {"role": "user", "content": f"Tool: {tool['name']}\n{tool.get('description') or ''}\nValues seen: {shown}"},
        ]
        try:
            reply = await complete(
                model,
                messages,
                api_base=api_base,
                json_schema=tool.get("inputSchema") or {"type": "object"},
                temperature=0.7,
                max_tokens=160,
                seed=seed,
                num_retries=0,
            )
            return extract_json(reply.text)
        except (LLMError, UserError, ValueError) as e:
            say(f"warning: the generator wrote no arguments for {tool['name']} ({clip(str(e), 160)}); sampling them")
            return None

    if cfg.generated is None:  # the offline 135M rarely writes arguments a server takes: a few tries, late
        cfg = cfg.model_copy(update={"generated": LOCAL_GENERATED if is_local(model) else GENERATED})
    exploration = await explore_server(
        pool, cfg, seed=seed, say=say, record=record, secrets=secrets, propose=propose, propose_late=is_local(model)
    )
    say(exploration.summary())
    scenarios, report = await ground(
        pool,
        n,
        exploration,
        seed=seed,
        phrase_with=model if phrase else None,
        api_base=api_base,
        max_calls=max_calls,
        say=say,
    )
    report_file.write_text(
        json.dumps(
            {"exploration": exploration.summary(), **report.model_dump(), "uncovered": report.uncovered}, indent=2
        )
    )
    say(report.summary())
    if len(scenarios) < 2:
        for line in exploration.silent():
            say(f"  {line}")
        why = (
            "every call it answered was an error"
            if exploration.calls and not exploration.answered()
            else "nothing it answered could be grounded in a task"
            if exploration.calls
            else "no tool could be called safely"
        )
        raise UserError(f"{pool.spec.target}: {why} ({report.kept} grounded tasks); {fixes}")
    return scenarios


async def _synthesized(
    cfg: ScenarioConfig, pool: ToolPool, *, seed: int, model: str, api_base: str | None, say: Callable[[str], None]
) -> list[Scenario]:
    toolset = pool.toolset
    assert toolset is not None
    say(f"synthesizing {cfg.n} scenarios with {model} (one line per generator call) ...")
    result = await synthesize(
        toolset.tools,
        cfg.n,
        model,
        api_base=api_base,
        task_hint=cfg.task_hint,
        seed=seed,
        say=say,
        resources=toolset.resources,
        prompts=toolset.prompts,
    )
    if len(result.scenarios) < 2:
        raise UserError(f"{result.report.failure(model, '--judge-model')}, or pass --scenarios FILE")
    if result.report.shortfall:
        say(f"warning: {result.report.failure(model, '--judge-model')}; training on those")
    return result.scenarios
