"""`mcprl train`: the product's main job.

Its flags are made from the run's settings (mcprl.run_config.RunConfig): one per setting, named
after the field (`rollout.max_turns` is `--max-turns`), with the field's description as its help,
the model's default in brackets and a help panel per section; booleans are `--x/--no-x`, lists
repeat the flag, and `headers`/`env` take `Name: value` / `K=V` strings. A new setting gets its
flag by being added to its section. The flags of earlier versions keep their names (`FLAG_NAMES`).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mcprl.run_config import RunConfig, load_config

# Flags whose names predate the sections (the field's own name would be another, or taken).
FLAG_NAMES = {
    "server.target": "--server",
    "server.headers": "--header",
    "scenarios.file": "--scenarios",
    "scenarios.difficulties": "--difficulty",
    "judge.mode": "--judge",
    "judge.model": "--judge-model",
    "time_budget_minutes": "--time-budget",
    "scenarios.source": "--scenario-source",
    "explore.calls": "--explore-calls",
    "explore.minutes": "--explore-minutes",
    "explore.call_timeout": "--explore-call-timeout",
    "explore.writes": "--explore-writes",
    "cluster.engine": "--cluster",
    "cluster.address": "--ray-address",
}
SCALARS = (str, int, float, bool)


def settings(model: type[BaseModel] = RunConfig, prefix: str = "") -> Iterator[tuple[str, FieldInfo]]:
    """(dotted place, field) of every setting, sections (fields that are models) walked into."""
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield from settings(field.annotation, f"{prefix}{name}.")
        else:
            yield prefix + name, field


def flag_type(annotation: Any) -> type | None:
    """The type a flag parses a setting's value as (a list type repeats the flag), or None where no
    flag can give one (e.g. a list of chat messages: a run file can)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if annotation in SCALARS:
        return annotation
    if origin is Literal and all(isinstance(a, str) for a in args):
        return str
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return flag_type(args[0])
    if origin is list and len(args) == 1 and args[0] in SCALARS:
        return list[args[0]]
    if origin is dict and args == [str, str]:
        return list[str]
    return None


def flag_name(place: str) -> str:
    leaf = place.rpartition(".")[2]
    return FLAG_NAMES.get(place) or (f"-{leaf}" if len(leaf) == 1 else "--" + leaf.replace("_", "-"))


def flag_help(field: FieldInfo, kind: type) -> str:
    """The field's description, its choices, 'repeatable' for a list, and its default in brackets."""
    text = field.description or ""
    if typing.get_origin(field.annotation) is Literal:
        text += f" ({'|'.join(typing.get_args(field.annotation))})"
    if typing.get_origin(kind) is list:
        text += "; repeatable"
    default = field.get_default(call_default_factory=True)
    if isinstance(default, bool):
        default = "on" if default else "off"
    elif isinstance(default, list):
        default = ", ".join(map(str, default))
    if default not in (None, "", {}) and len(str(default)) <= 40:
        text += f" \\[{default}]"  # a bracket rich would otherwise read as markup
    return text


def flags(model: type[BaseModel] = RunConfig) -> dict[str, tuple[str, type, FieldInfo]]:
    """Python parameter name -> (place, flag type, field), for every setting a flag can give."""
    out = {}
    for place, field in settings(model):
        kind = flag_type(field.annotation)
        if kind is None or (field.json_schema_extra or {}).get("cli") is False:
            continue
        out[place.replace(".", "__")] = (place, kind, field)
    return out


FLAGS = flags()


def train(config: Path | None = None, resume: bool = False, **given: Any) -> None:
    """Train a model to use an MCP server's tools: roll out, judge, GRPO, repeat."""
    import anyio
    from rich.console import Console

    cfg = load_config(config, {FLAGS[k][0]: v for k, v in given.items()})
    console = Console(stderr=True)
    summary = anyio.run(lambda: run_with_progress(cfg, resume, console))
    print_summary(summary, console)
    if summary["interrupted"]:
        console.print(f"stopped at step {summary['step']}; continue with: mcprl train ... --name {cfg.name} --resume")
        raise typer.Exit(130)


def signature(found: dict[str, tuple[str, type, FieldInfo]]) -> inspect.Signature:
    """`train`'s parameters as Typer reads them: --config, --resume, and a flag per setting."""
    params = [
        inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Path,
                          default=typer.Option(None, "--config", help="run file (TOML, or a run's config.json) with these settings; flags win")),
        inspect.Parameter("resume", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                          default=typer.Option(False, "--resume", help="continue from the last checkpoint")),
    ]
    names = ["--config", "--resume", *(flag_name(place) for place, _, _ in found.values())]
    if clash := {n for n in names if names.count(n) > 1}:
        raise RuntimeError(f"settings share the flag(s) {', '.join(sorted(clash))}; name one of each in FLAG_NAMES")
    for param, (place, kind, field) in found.items():
        section = place.partition(".")[0] if "." in place else None
        decl = flag_name(place)
        decls = [f"{decl}/--no-{decl[2:]}"] if kind is bool else [decl]
        option = typer.Option([] if typing.get_origin(kind) is list else None, *decls, help=flag_help(field, kind),
                              rich_help_panel=f"\\[{section}]" if section else None, show_default=False)
        params.append(inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=option))
    return inspect.Signature(params)


train.__signature__ = signature(FLAGS)
train.__annotations__ = {p.name: p.annotation for p in train.__signature__.parameters.values()}


async def run_with_progress(cfg, resume, console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mcprl.report import write_report
    from mcprl.runner import TrainingRun

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        run = TrainingRun(cfg, resume=resume, say=progress.console.print, progress=progress)
        try:
            summary = await run.run()
        except KeyboardInterrupt:
            summary = run.summary(interrupted=True)
            progress.console.print(f"interrupted; the last completed step is saved. Continue with --resume --name {cfg.name}")
    summary["report"] = str(write_report(run.dir))
    return summary


def print_summary(summary: dict, console) -> None:
    from rich.table import Table

    first, last = summary["first_eval"], summary["last_eval"]
    table = Table(title=f"mcprl train: {summary['dir']}")
    table.add_column("")
    table.add_column(f"step {first['step']}" if first else "before")
    table.add_column(f"step {last['step']}" if last else "after")
    for key, label, fmt in [("success_rate", "held-out success", "{:.0%}"), ("reward_mean", "held-out mean reward", "{:.3f}"),
                            ("tool_call_rate", "episodes with a tool call", "{:.0%}"), ("invalid_tool_call_rate", "episodes with an unparseable call", "{:.0%}"),
                            ("tool_error_rate", "tool error rate", "{:.0%}"), ("turns_mean", "turns per episode", "{:.2f}")]:
        if first and key in first:
            table.add_row(label, fmt.format(first[key]), fmt.format(last[key]) if last and key in last else "")
    console.print(table)
    if first and last and "success_rate" in first and last is not first:
        delta = (last["success_rate"] - first["success_rate"]) * 100
        verdict = "improved" if delta > 0 else "did NOT improve" if delta == 0 else "got WORSE"
        console.print(f"held-out success {verdict}: {first['success_rate']:.0%} -> {last['success_rate']:.0%} ({delta:+.0f} points)")
    console.print(f"report: {summary['report']}")
