"""`mcprl tools` (what a server offers the model) and `mcprl validate` (is it fit for a model).
Both take the server's flags of every command (mcprl.cli.flags.SERVER_FLAGS)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mcprl.cli.flags import SERVER_FLAGS, overrides, with_flags
from mcprl.run.config import load_config

if TYPE_CHECKING:
    from mcprl.tools import ToolSet


def server_settings(given: dict[str, Any]):
    """The `[server]` settings the server flags in `given` name (a bad one is a one-line error)."""
    return load_config(None, overrides(given, SERVER_FLAGS)).server


def _discover(given: dict[str, Any]) -> ToolSet:
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.tools import ToolPool, discover

    spec = server_settings(given).spec()
    if not spec.cassette.replay:
        return anyio.run(discover, spec)

    async def replayed() -> ToolSet:  # the tools a cassette serves (--replay FILE)
        async with ToolPool(spec) as pool:
            return pool.toolset

    return anyio.run(replayed)


def tools(
    as_json: Annotated[bool, typer.Option("--json", help="print the OpenAI function schemas as JSON")] = False,
    **given: Any,
) -> None:
    """List the tools an MCP server offers, as the model will see them."""
    toolset = _discover(given)
    if as_json:
        print(json.dumps(toolset.tools, indent=2))
        return
    table = Table("name", "description", "required arguments", title=f"{len(toolset.tools)} tools ({toolset.hash})")
    for tool in toolset.tools:
        fn = tool["function"]
        description = fn["description"].splitlines()[0] if fn["description"] else ""
        table.add_row(fn["name"], description, ", ".join(fn["parameters"].get("required") or []))
    Console().print(table)


def validate(**given: Any) -> None:
    """Check a server's tools for what breaks or confuses a model; exits 1 when there are errors."""
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    from mcprl.tools.validate import check_tools

    toolset = _discover(given)
    findings = check_tools(toolset.mcp_tools)
    console = Console(highlight=False, soft_wrap=True)
    for f in findings:
        console.print(Text.assemble((f.level, "red" if f.level == "error" else "yellow"), f" {f.tool}: {f.message}"))
    errors = sum(f.level == "error" for f in findings)
    console.print(f"{len(toolset.mcp_tools)} tools checked: {errors} errors, {len(findings) - errors} warnings")
    if errors:
        raise typer.Exit(1)


with_flags(tools, SERVER_FLAGS)
with_flags(validate, SERVER_FLAGS)
