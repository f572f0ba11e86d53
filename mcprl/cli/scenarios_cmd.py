"""`mcprl scenarios`: write scenarios for an MCP server as JSONL: grounded in the live server's own
answers (mcprl.scenarios.grounded), or synthesized from its tool schemas."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import typer
from rich.console import Console

from mcprl.cli.flags import EXPLORE_FLAGS, SERVER_FLAGS, overrides, with_flags
from mcprl.cli.tools_cmd import server_settings
from mcprl.errors import UserError
from mcprl.run.config import load_config
from mcprl.scenarios.split import check_val_fraction, split_train_val
from mcprl.types import ToolSchema, dump_jsonl


async def write_scenarios(
    tools: Sequence[ToolSchema],
    n: int,
    output: Path,
    *,
    resources: Sequence[Any] = (),
    prompts: Sequence[Any] = (),
    val_fraction: float = 0.2,
    seed: int = 0,
    **synthesis: Any,
) -> str:
    """Synthesize, split and write; returns the report to print. `synthesis` goes to `synthesize`."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.scenarios.synthesize import synthesize

    if not tools:
        raise UserError("the server offers no tools, so there is nothing to write tasks for; check --server")
    if n < 1:
        raise UserError(f"-n must be at least 1, got {n}")
    check_val_fraction(val_fraction)
    result = await synthesize(tools, n, resources=resources, prompts=prompts, seed=seed, **synthesis)
    report = result.report
    if not result.scenarios:
        raise UserError(report.failure(synthesis.get("model", "local"), "--model"))
    scenarios = split_train_val(result.scenarios, val_fraction, seed)
    dump_jsonl(scenarios, output)
    splits = Counter(s.split for s in scenarios)
    written = f"wrote {len(scenarios)} scenarios ({splits['train']} train, {splits['val']} val) to {output}"
    if report.gave_up:  # what was made is kept; the error says how to get the rest
        raise UserError(f"{written}, then stopped: {report.failure(synthesis.get('model', 'local'), '--model')}")
    return f"{report.summary()}\n{written}"


def scenarios(
    n: int = typer.Option(..., "-n", help="how many scenarios to synthesize"),
    output: Path = typer.Option(..., "-o", "--output", help="JSONL file to write"),
    model: str = typer.Option(
        "local", "--model", help="generator: any litellm model string, or 'local' (our base policy model)"
    ),
    api_base: str | None = typer.Option(None, "--api-base", help="OpenAI-compatible base URL for --model (vLLM, ...)"),
    api_key: str | None = typer.Option(None, "--api-key", envvar="MCPRL_GENERATOR_API_KEY", help="key for --api-base"),
    task_hint: str | None = typer.Option(None, "--task-hint", help="what kind of tasks to write, in a sentence"),
    seed: int = typer.Option(0, "--seed", help="seeds generation and the train/val split"),
    val_fraction: float = typer.Option(0.2, "--val-fraction", help="share of scenarios held out for validation"),
    batch_size: int | None = typer.Option(
        None, "--batch-size", help="tasks asked for per generator call \\[1 for local, else 5]"
    ),
    source: str = typer.Option(
        "grounded",
        "--source",
        help="grounded: explore the server and write tasks its answers "
        "ground, checked by value; synthesized: the generator writes task inputs from the schemas",
    ),
    **given: Any,
) -> None:
    """Write scenarios for a server: grounded in its own answers (default), or synthesized from its tools."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.tools import discover

    console = Console(stderr=True)
    spec = server_settings(given).spec()
    explore = load_config(None, overrides(given, EXPLORE_FLAGS)).explore
    if source not in ("grounded", "synthesized"):
        raise UserError(f"--source {source!r}: choose grounded or synthesized")

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    async def write_grounded() -> str:
        # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
        from mcprl.scenarios.source import grounded
        from mcprl.tools import ToolPool

        async with ToolPool(spec) as pool:
            found = await grounded(
                pool,
                n,
                explore,
                output.with_suffix(".exploration.jsonl"),
                output.with_suffix(".grounding.json"),
                seed=seed,
                model=model,
                api_base=api_base,
                say=say,
                fixes="write tasks of your own for mcprl train --scenarios FILE, or pass --source synthesized "
                "with a stronger --model",
            )
        dump_jsonl(split_train_val(found, val_fraction, seed), output)
        synthesized = sum(s.metadata.get("source") == "synthesized" for s in found)
        # what grounding found unsafe, for the run that trains on these: the same tools hidden, the same homes
        flags = [f"--deny {n}" for n in pool.spec.deny if n not in spec.deny]
        flags += ["--private-home"] if pool.spec.private_home and not spec.private_home else []
        then = f"; train on them with {' '.join(flags)}, as they were grounded" if flags else ""
        return (
            f"wrote {len(found) - synthesized} grounded and {synthesized} synthesized scenarios to {output} "
            f"(the exploration beside it){then}"
            if synthesized
            else f"wrote {len(found)} grounded scenarios to {output} (the exploration beside it){then}"
        )

    async def run() -> str:
        if source == "grounded":
            return await write_grounded()
        toolset = await discover(spec)
        return await write_scenarios(
            toolset.tools,
            n,
            output,
            resources=toolset.resources,
            prompts=toolset.prompts,
            val_fraction=val_fraction,
            seed=seed,
            model=model,
            api_base=api_base,
            api_key=api_key,
            task_hint=task_hint,
            batch_size=batch_size,
            say=say,
        )

    print(anyio.run(run))


with_flags(scenarios, {**SERVER_FLAGS, **EXPLORE_FLAGS})
