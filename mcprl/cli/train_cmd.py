"""`mcprl train`: the product's main job. Its flags are made from the run's settings, one per
setting (mcprl.cli.flags)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from mcprl.cli.flags import FLAGS, overrides, with_flags
from mcprl.run.config import load_config


def train(
    config: Path = typer.Option(
        None, "--config", help="run file (TOML, or a run's config.json) with these settings; flags win"
    ),
    resume: bool = typer.Option(False, "--resume", help="continue from the last checkpoint"),
    **given: Any,
) -> None:
    """Train a model to use an MCP server's tools: roll out, judge, GRPO, repeat."""
    cfg = load_config(config, overrides(given))
    console = Console(stderr=True)
    summary = anyio.run(lambda: run_with_progress(cfg, resume, console))
    print_summary(summary, console)
    if summary["interrupted"]:
        console.print(f"stopped at step {summary['step']}; continue with: mcprl train ... --name {cfg.name} --resume")
        raise typer.Exit(130)


with_flags(train, FLAGS)


async def run_with_progress(cfg, resume, console):
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.run.report import write_report
    from mcprl.run.runner import TrainingRun

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        run = TrainingRun(cfg, resume=resume, say=progress.console.print, progress=progress)
        try:
            summary = await run.run()
        except KeyboardInterrupt:
            summary = run.summary(interrupted=True)
            progress.console.print(
                f"interrupted; the last completed step is saved. Continue with --resume --name {cfg.name}"
            )
    summary["report"] = str(write_report(run.dir))
    return summary


def print_summary(summary: dict, console) -> None:
    first, last = summary["first_eval"], summary["last_eval"]
    table = Table(title=f"mcprl train: {summary['dir']}")
    table.add_column("")
    table.add_column(f"step {first['step']}" if first else "before")
    table.add_column(f"step {last['step']}" if last else "after")
    for key, label, fmt in [
        ("success_rate", "held-out success", "{:.0%}"),
        ("reward_mean", "held-out mean reward", "{:.3f}"),
        ("tool_call_rate", "episodes with a tool call", "{:.0%}"),
        ("invalid_tool_call_rate", "episodes with an unparseable call", "{:.0%}"),
        ("tool_error_rate", "tool error rate", "{:.0%}"),
        ("turns_mean", "turns per episode", "{:.2f}"),
    ]:
        if first and key in first:
            table.add_row(label, fmt.format(first[key]), fmt.format(last[key]) if last and key in last else "")
    console.print(table)
    if first and last and "success_rate" in first and last is not first:
        delta = (last["success_rate"] - first["success_rate"]) * 100
        verdict = "improved" if delta > 0 else "did NOT improve" if delta == 0 else "got WORSE"
        console.print(
            f"held-out success {verdict}: {first['success_rate']:.0%} -> {last['success_rate']:.0%} ({delta:+.0f} "
            "points)"
        )
    console.print(f"report: {summary['report']}")
