"""`mcprl usage`: for server authors, what a model does with each of the server's tools. Tasks grounded in
the live server (as `mcprl train` grounds them by default) or given, rollouts of the model (and of a
baseline, and with `--tool-overrides` of each again with the overrides), then the per-tool report."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import typer
from rich.console import Console

from mcprl.cli.flags import flags, overrides, with_flags
from mcprl.errors import UserError
from mcprl.run.config import load_config
from mcprl.types import Scenario, dump_jsonl, load_jsonl

USAGE_FLAGS = flags(only=lambda place: place.startswith(("server.", "explore.", "rollout.")))


def usage(
    model: str = typer.Option(
        None, "--model", help="the model: a base model spec, or NAME@STEP of a trained one \\[smollm2-135m]"
    ),
    baseline: str = typer.Option(
        None, "--baseline", help="a second model, reported beside the first (a base model, NAME@STEP)"
    ),
    project: str = typer.Option("default", "--project", help="the project of NAME@STEP models"),
    scenarios: Path = typer.Option(None, "--scenarios", help="scenarios JSONL \\[grounded in the server's answers]"),
    n: int = typer.Option(16, "-n", help="grounded tasks to write (without --scenarios)"),
    samples: int = typer.Option(2, "--samples", help="rollouts per task and model"),
    seed: int = typer.Option(0, "--seed", help="seeds the exploration, the tasks and the sampling"),
    tool_overrides: Path = typer.Option(
        None,
        "--tool-overrides",
        help="JSON or TOML: descriptions, examples, hidden tools, "
        "as the model is to see them; each model is run with and without them",
    ),
    as_json: Path = typer.Option(None, "--json", help="also write the report as JSON to this file (for CI)"),
    out: Path = typer.Option(
        None, "--out", help="where the grounded tasks and the exploration go \\[a temporary directory]"
    ),
    **given: Any,
) -> None:
    """For server authors: what a model does with each tool (selection, arguments, results, outcome), from rollouts."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.run.evaluate import evaluate, resolve_checkpoint, run_settings
    from mcprl.scenarios.source import grounded, referenced
    from mcprl.tools import ToolPool
    from mcprl.usage import load_overrides
    from mcprl.usage.render import print_reports
    from mcprl.usage.report import UsageReport, UsageResult, UsageRun, changes

    settings = {**overrides(given, USAGE_FLAGS), "project": project, "eval_samples": samples, "seed": seed}
    # sampling seeded too: the runs of one report (a model with and without the overrides, a baseline) draw alike
    if settings.get("rollout.sampling_seed") is None:
        settings["rollout.sampling_seed"] = seed
    if not settings.get("server.target"):
        raise UserError("give --server SPEC: the MCP server whose tools to report on")
    if n < 2 or samples < 1:
        raise UserError("-n must be at least 2 and --samples at least 1")
    shown = load_overrides(tool_overrides) if tool_overrides is not None else None
    console = Console(stderr=True)

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    async def tasks(cfg) -> list[Scenario]:
        where = out or Path(tempfile.mkdtemp(prefix="mcprl-usage-"))
        where.mkdir(parents=True, exist_ok=True)
        async with ToolPool(cfg.server.spec()) as pool:
            found = await grounded(
                pool,
                n,
                cfg.explore,
                where / "exploration.jsonl",
                where / "grounding.json",
                seed=seed,
                model=cfg.judge.model,
                api_base=cfg.judge.api_base,
                max_calls=cfg.rollout.calls_per_episode,
                fallback=cfg.scenarios.fallback,
                min_grounded=cfg.scenarios.min_grounded,
                say=say,
            )
        dump_jsonl(found, where / "scenarios.jsonl")
        synthesized = sum(s.metadata.get("source") == "synthesized" for s in found)
        say(
            f"{len(found) - synthesized} grounded and {synthesized} synthesized tasks in {where / 'scenarios.jsonl'}"
            if synthesized
            else f"{len(found)} grounded tasks in {where / 'scenarios.jsonl'}"
        )
        return found

    async def run() -> UsageResult:
        base_cfg = load_config(None, settings)
        if shown is not None:  # a tool or parameter the server does not have stops here, before any rollout
            async with ToolPool(base_cfg.server.spec()) as pool:
                shown.apply(pool.toolset.tools)
        if scenarios is not None:  # a user's questions: those with answers get reference chains found on the server
            where = out or Path(tempfile.mkdtemp(prefix="mcprl-usage-"))
            where.mkdir(parents=True, exist_ok=True)
            async with ToolPool(base_cfg.server.spec()) as pool:
                scen = await referenced(
                    pool,
                    load_jsonl(scenarios, Scenario),
                    base_cfg.explore,
                    where / "exploration.jsonl",
                    seed=seed,
                    model=base_cfg.judge.model,
                    api_base=base_cfg.judge.api_base,
                    say=say,
                )
        else:
            scen = await tasks(base_cfg)
        # a trained model is rolled out as its run trained it (prompt, demonstration, sampling), and the
        # baseline beside it under the same settings, so the two differ in their weights alone
        adapter = resolve_checkpoint(model, project)[1] if model else None
        cfg = run_settings(adapter.parent.parent if adapter is not None else None, scen, settings)
        runs = []
        for m in [model or cfg.model, *([baseline] if baseline else [])]:
            for o in [None, shown] if shown is not None else [None]:
                say(f"rolling out {m}{' with the tool overrides' if o else ''} on {len(scen)} tasks x {samples} ...")
                r = await evaluate(cfg, model=m, scenarios=scen, tool_overrides=o)
                label = r["model"] + (" + overrides" if o else "")
                report = UsageReport.model_validate({**r["usage"], "label": label})
                runs.append(
                    UsageRun(
                        label=label,
                        model=r["model"],
                        overrides=str(tool_overrides) if o else None,
                        success_rate=r.get("success_rate"),
                        success_ci=r.get("success_ci"),
                        reward_mean=r["reward_mean"],
                        usage=report,
                    )
                )
        return UsageResult(server=cfg.server.target or "", scenarios=len(scen), samples=samples, runs=runs)

    result = anyio.run(run)
    for r in result.runs:
        ok = (
            f"success {r.success_rate:.0%} [{r.success_ci[0]:.0%}–{r.success_ci[1]:.0%}]"
            if r.success_ci and r.success_rate is not None
            else f"mean reward {r.reward_mean:.3f}"
        )
        say(f"{r.label}: {ok} on {result.scenarios} tasks x {result.samples}")
    print_reports([r.usage for r in result.runs])
    for line in changes(result):
        print(line)
    if as_json is not None:
        as_json.write_text(json.dumps(result.model_dump(mode="json"), indent=2))
        say(f"wrote {as_json}")


with_flags(usage, USAGE_FLAGS, show_defaults=False)
