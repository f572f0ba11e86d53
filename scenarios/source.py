"""Where a run's scenarios come from (`[scenarios]` in a run file) and its train/val sets.

In order: a JSONL file (its tasks with answers and no reference given one found on the server, where
one is given: mcprl.scenarios.answers); a registered task set's generator of verifiable tasks (`tasks`);
else, by `source`, tasks grounded in the live server's own answers (`grounded`, the default: the server
is explored and every task's answer is checked by value, mcprl.scenarios.grounded; too few are topped up
with synthesized tasks whose reference call ran, mcprl.scenarios.fallback), or tasks synthesized by
the generator model from the tool schemas (`synthesized`, judged by RULER). The sets are written to the run's
`scenarios/{train,val}.jsonl`,
and a resumed run reads them back, so it trains on exactly the scenarios it began with.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcprl.errors import UserError, clip
from mcprl.llm import LLMError, complete, extract_json, is_local
from mcprl.scenarios.answers import find_references, known_answer
from mcprl.scenarios.config import ExploreConfig, ScenarioConfig
from mcprl.scenarios.explore import explore as explore_server
from mcprl.scenarios.explored import Exploration
from mcprl.scenarios.fallback import referenced_synthesized
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.results import found_nothing
from mcprl.scenarios.split import split_for_run
from mcprl.scenarios.synthesize import synthesize
from mcprl.tools.copies import worked_on
from mcprl.types import Scenario, dump_jsonl, load_jsonl

if TYPE_CHECKING:
    from mcprl.tools import ToolPool


GENERATED = (
    8  # exploration calls whose arguments the generator writes, by default (the offline local one: LOCAL_GENERATED)
)
LOCAL_GENERATED = 4
MIN_GROUNDED = 8  # fewer grounded tasks are topped up with synthesized ones (ScenarioConfig.min_grounded)
EMPTY_COPY = 0.9  # the share of reads on copies of the user's files that found nothing: theirs are not seen there
# what a run that grounded too few tasks can do instead, in `mcprl train`'s flags (`grounded(fixes=...)`: another
# command's)
TRAIN_FIXES = (
    "pass --scenarios FILE with your own tasks, --demonstration-file FILE with a solved call, or --scenario-source "
    "synthesized with a stronger --judge-model"
)
PROPOSE_PROMPT = (
    "Write the arguments of one call of this tool as JSON: realistic values a user would ask it about, "
    "taken from the values seen when one fits. Calls that failed are shown with what the server said: do "
    "what it asks for instead."
)


@dataclass
class SourceRequest:
    """What a scenario source is given: the run's settings and what it may use (see `run_scenarios`)."""

    cfg: ScenarioConfig
    out_dir: Path
    seed: int
    pool: ToolPool | None
    generate: Callable[..., list[Scenario]] | None
    model: str
    api_base: str | None
    explore: ExploreConfig | None
    secrets: list[str] | None
    max_calls: int | None
    say: Callable[[str], None]

    def server(self) -> ToolPool:
        if self.pool is None:
            raise UserError(
                "no scenarios: pass --scenarios FILE, --tasks NAME, or --server to ground or synthesize them from"
            )
        return self.pool


# A source writes a run's scenarios: the scenarios, and what to call them in the run's line.
Source = Callable[[SourceRequest], Awaitable[tuple[list[Scenario], str]]]
SOURCES: dict[str, Source] = {}


def register_source(name: str) -> Callable[[Source], Source]:
    """Register a scenario source under `name` (`source_name` picks one for a run)."""

    def add(source: Source) -> Source:
        SOURCES[name] = source
        return source

    return add


def source_name(cfg: ScenarioConfig, generate: Callable[..., list[Scenario]] | None) -> str:
    """The source a run's settings name: a file, a task set, else `cfg.source`."""
    return "file" if cfg.file else "tasks" if generate is not None else cfg.source


@register_source("file")
async def _from_file(r: SourceRequest) -> tuple[list[Scenario], str]:
    """The user's JSONL; with a server, its tasks with answers and no reference are given one found on it."""
    assert r.cfg.file is not None
    scenarios = load_jsonl(Path(r.cfg.file), Scenario)
    if r.pool is not None and r.cfg.find_references is not False:
        scenarios = await referenced(
            r.pool,
            scenarios,
            r.explore,
            r.out_dir / "exploration.jsonl",
            seed=r.seed,
            secrets=r.secrets,
            model=r.model,
            api_base=r.api_base,
            say=r.say,
        )
    return scenarios, r.cfg.file


@register_source("tasks")
async def _from_task_set(r: SourceRequest) -> tuple[list[Scenario], str]:
    assert r.generate is not None
    return r.generate(r.cfg.n, seed=r.seed, difficulties=r.cfg.difficulties), f"{r.cfg.tasks} task set"


async def _grounded_source(r: SourceRequest, min_grounded: int) -> tuple[list[Scenario], str]:
    scenarios = await grounded(
        r.server(),
        r.cfg.n,
        r.explore,
        r.out_dir / "exploration.jsonl",
        r.out_dir / "grounding.json",
        seed=r.seed,
        secrets=r.secrets,
        model=r.model,
        api_base=r.api_base,
        max_calls=r.max_calls,
        fallback=r.cfg.fallback,
        min_grounded=min_grounded,
        say=r.say,
    )
    synthesized = sum(s.metadata.get("source") == "synthesized" for s in scenarios)
    if not synthesized:
        return scenarios, "grounded"
    return scenarios, f"{len(scenarios) - synthesized} grounded, {synthesized} synthesized"


@register_source("grounded")
async def _from_grounding(r: SourceRequest) -> tuple[list[Scenario], str]:
    """Grounded tasks, topped up with synthesized ones where fewer than `min_grounded`."""
    return await _grounded_source(r, r.cfg.min_grounded)


@register_source("mixed")
async def _mixed(r: SourceRequest) -> tuple[list[Scenario], str]:
    """Grounded tasks, topped up to `n` with synthesized ones however many were grounded."""
    if not r.cfg.fallback:
        raise UserError(
            "--scenario-source mixed tops grounded tasks up with synthesized ones; drop --no-synthesized-fallback"
        )
    return await _grounded_source(r, r.cfg.n + 1)


@register_source("synthesized")
async def _from_synthesis(r: SourceRequest) -> tuple[list[Scenario], str]:
    scenarios = await _synthesized(r.cfg, r.server(), seed=r.seed, model=r.model, api_base=r.api_base, say=r.say)
    return scenarios, "synthesized"


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
    """The run's (train, val), written to `out_dir` (read back from it when resuming), from the source
    its settings name (`source_name`, `SOURCES`). `generate`: the task set `cfg.tasks` names; `pool`:
    the server to ground tasks in or synthesize them for (`explore` bounds grounding; its record goes to
    `out_dir/exploration.jsonl`, secrets masked); `model`, `api_base`: synthesis; `max_calls`: the calls
    an episode has room for (grounded tasks that need more are not kept)."""
    train_file, val_file = out_dir / "train.jsonl", out_dir / "val.jsonl"
    if resume and train_file.exists() and val_file.exists():
        train, val = load_jsonl(train_file, Scenario), load_jsonl(val_file, Scenario)
    else:
        request = SourceRequest(cfg, out_dir, seed, pool, generate, model, api_base, explore, secrets, max_calls, say)
        scenarios, source = await SOURCES[source_name(cfg, generate)](request)
        if len(scenarios) < 2:
            raise UserError(f"need at least 2 scenarios, got {len(scenarios)} from {source}")
        train, val = split_for_run(scenarios, cfg.val_fraction, cfg.val_size, seed)
        dump_jsonl(train, train_file)
        dump_jsonl(val, val_file)
        say(f"{len(train)} train / {len(val)} val scenarios ({source})")
    return train, val


async def explore_for(
    pool: ToolPool,
    cfg: ExploreConfig,
    record: Path,
    *,
    seed: int,
    secrets: list[str] | None = None,
    model: str = "local",
    api_base: str | None = None,
    say: Callable[[str], None] = print,
) -> Exploration:
    """`pool`'s server explored within `cfg`'s bounds (mcprl.scenarios.explore), its record written to
    `record` (JSONL, secrets masked); `model` (the generator) writes arguments for tools that do not answer."""
    record.parent.mkdir(parents=True, exist_ok=True)
    assert pool.toolset is not None
    calls = cfg.budget(len(pool.toolset.mcp_tools))
    say(f"exploring {pool.spec.target} (at most {calls} calls, {cfg.minutes:g} min) ...")

    async def propose(
        tool: dict[str, Any], seen: list[Any], failed: list[tuple[dict[str, Any], str]]
    ) -> dict[str, Any] | None:
        """Arguments for one call of `tool`, by the generator, shown the values seen and the calls of it that
        failed with what the server said; None when the generator's call fails (exploring goes on)."""
        shown = json.dumps(seen[:12], default=str)[:600]
        errors = "".join(f"\nFailed: {clip(json.dumps(a, default=str), 200)} -> {clip(e, 200)}" for a, e in failed)
        messages = [
            {"role": "system", "content": PROPOSE_PROMPT},
            {
                "role": "user",
                "content": f"Tool: {tool['name']}\n{tool.get('description') or ''}\nValues seen: {shown}{errors}",
            },
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
    return exploration


async def referenced(
    pool: ToolPool,
    scenarios: list[Scenario],
    explore: ExploreConfig | None,
    record: Path,
    *,
    seed: int,
    secrets: list[str] | None = None,
    model: str = "local",
    api_base: str | None = None,
    say: Callable[[str], None] = print,
) -> list[Scenario]:
    """`scenarios` (a user's file), each whose answer is known but no reference given with one found in
    the server's exploration (mcprl.scenarios.answers: a call chain whose replayed result holds the
    answer); says for how many, and writes which beside `record` (references.json). No exploration where
    no task needs one."""
    if not any(not s.reference and s.read_back is None and known_answer(s) is not None for s in scenarios):
        return scenarios
    say("finding reference calls for the tasks with answers and no reference ...")
    exploration = await explore_for(
        pool, explore or ExploreConfig(), record, seed=seed, secrets=secrets, model=model, api_base=api_base, say=say
    )
    scenarios, report = await find_references(pool, scenarios, exploration, say=say)
    say(report.summary())
    found = {s.id: [c.tool for c in s.reference] for s in scenarios if s.metadata.get("reference_from")}
    (record.parent / "references.json").write_text(json.dumps({**report.model_dump(), "references": found}, indent=2))
    return scenarios


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
    fallback: bool = True,
    min_grounded: int = MIN_GROUNDED,
    say: Callable[[str], None] = print,
) -> list[Scenario]:
    """`n` tasks grounded in `pool`'s server (mcprl.scenarios.grounded), with the exploration's record
    (JSONL, secrets masked) and the grounding report (JSON) written. Where fewer than `min_grounded` (or
    `n`) are grounded, the run says, a line per tool, what each that never answered gave and what was
    tried; then, where some tool answered and `fallback` is on, tops the set up to `n` with synthesized
    tasks whose reference call ran on the server (mcprl.scenarios.fallback, judged by RULER) and says how
    many of each. Fewer than 2 in all is a UserError naming `fixes` (in the flags of the command that runs
    it). `model` (the generator) writes arguments for tools that do not answer, the fallback's tasks, and
    rephrases the tasks when `explore.phrase` says so."""
    cfg = explore or ExploreConfig()
    phrase = cfg.phrase if cfg.phrase is not None else not is_local(model)
    exploration = await explore_for(
        pool, cfg, record, seed=seed, secrets=secrets, model=model, api_base=api_base, say=say
    )
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
    say(report.summary())
    written: dict[str, Any] = {
        "exploration": exploration.summary(),
        **report.model_dump(),
        "uncovered": report.uncovered,
    }
    topped: list[Scenario] = []
    if len(scenarios) < min(n, min_grounded):
        for line in exploration.silent():
            say(f"  {line}")
        # (on copies of the user's files, where nearly every read found nothing: a server that keys what it holds by
        # where its files are, a project by its folder's path, finds none of theirs there)
        reads = [c for c in exploration.calls if not c.writes and not c.is_error]
        if (
            pool.spec.private_copy
            and reads
            and sum(found_nothing(c.text, c.arguments) for c in reads) >= EMPTY_COPY * len(reads)
        ):
            say(
                f"note: it ran on copies of {', '.join(map(str, worked_on(pool.spec)))}, and its reads found nothing "
                "there: a server that keys what it holds by where its files are (a project by its folder's path) "
                "finds none of yours on a copy; --no-private-copy explores your own, with reads only"
            )
        names = set(pool.toolset.names())
        offered = [t for t in exploration.answered() if t in names]  # not one hidden above
        if fallback and offered:
            say(
                f"grounding kept {len(scenarios)} of the {n} tasks asked for; topping the set up with tasks "
                f"{model} synthesizes for the tools that answered ({', '.join(offered)}), each "
                "kept where its reference call runs on the server"
            )
            topped, extra = await referenced_synthesized(
                pool, n - len(scenarios), exploration, model=model, api_base=api_base, seed=seed, say=say
            )
            say(extra.summary())
            written["fallback"] = extra.model_dump()
            if topped:
                say(
                    f"scenarios: {len(scenarios)} grounded (checked by value), {len(topped)} synthesized "
                    "(judged by RULER: their answers are not known)"
                )
    report_file.write_text(json.dumps(written, indent=2))
    if len(scenarios) + len(topped) < 2:
        why = (
            "every call it answered was an error"
            if exploration.calls and not exploration.answered()
            else "nothing it answered could be grounded in a task"
            + (", nor did synthesized tasks' calls run" if fallback else "")
            if exploration.calls
            else "no tool could be called safely: each may write, or acts outside the server (--explore-writes "
            "calls them)"
        )
        # (tools held back as they may write: the reads may all need what one of them makes, a matrix made by name)
        held = sorted(exploration.skipped_tools) if exploration.calls else []
        calls_them = (
            f"; {', '.join(held)} were not called, as they may write or act outside the server: --explore-writes calls "
            "them, where that is safe (a server of your own, for testing)"
            if held
            else ""
        )
        raise UserError(f"{pool.spec.target}: {why} ({report.kept} grounded tasks){calls_them}; {fixes}")
    return scenarios + topped


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
