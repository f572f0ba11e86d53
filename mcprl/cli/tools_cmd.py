"""`mcprl tools` (what a server offers the model) and `mcprl validate` (is it fit for a model)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from mcprl.tools import ToolSet

Server = Annotated[str, typer.Option("--server", "-s", help="MCP server: a URL (http/sse) or a command line (stdio)")]
Transport = Annotated[str, typer.Option("--transport", help="auto, stdio, http or sse")]
Header = Annotated[
    list[str] | None, typer.Option("--header", "-H", help="'Name: value' sent to an HTTP/SSE server; repeatable")
]
Env = Annotated[list[str] | None, typer.Option("--env", "-e", help="KEY=value for a stdio server; repeatable")]
Cwd = Annotated[str | None, typer.Option("--cwd", help="working directory of a stdio server (default: a temp dir)")]
Allow = Annotated[list[str] | None, typer.Option("--allow", help="only tools matching this name or glob; repeatable")]
Deny = Annotated[
    list[str] | None,
    typer.Option("--deny", help="hide tools matching this name or glob; repeatable; wins over --allow"),
]
ConnectTimeout = Annotated[float, typer.Option("--connect-timeout", help="seconds to wait for the MCP handshake")]


def _discover(
    server: str,
    transport: str,
    header: list[str] | None,
    env: list[str] | None,
    cwd: str | None,
    allow: list[str] | None,
    deny: list[str] | None,
    connect_timeout: float,
) -> ToolSet:
    import anyio

    from mcprl.tools import ServerSpec, discover

    spec = ServerSpec.parse(
        server,
        transport=transport,
        headers=header,
        env=env,
        cwd=cwd,
        allow=allow or [],
        deny=deny or [],
        connect_timeout=connect_timeout,
    )
    return anyio.run(discover, spec)


def tools(
    server: Server,
    transport: Transport = "auto",
    header: Header = None,
    env: Env = None,
    cwd: Cwd = None,
    allow: Allow = None,
    deny: Deny = None,
    connect_timeout: ConnectTimeout = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="print the OpenAI function schemas as JSON")] = False,
) -> None:
    """List the tools an MCP server offers, as the model will see them."""
    import json

    from rich.console import Console
    from rich.table import Table

    toolset = _discover(server, transport, header, env, cwd, allow, deny, connect_timeout)
    if as_json:
        print(json.dumps(toolset.tools, indent=2))
        return
    table = Table("name", "description", "required arguments", title=f"{len(toolset.tools)} tools ({toolset.hash})")
    for tool in toolset.tools:
        fn = tool["function"]
        description = fn["description"].splitlines()[0] if fn["description"] else ""
        table.add_row(fn["name"], description, ", ".join(fn["parameters"].get("required") or []))
    Console().print(table)


def validate(
    server: Server,
    transport: Transport = "auto",
    header: Header = None,
    env: Env = None,
    cwd: Cwd = None,
    allow: Allow = None,
    deny: Deny = None,
    connect_timeout: ConnectTimeout = 30.0,
) -> None:
    """Check a server's tools for what breaks or confuses a model; exits 1 when there are errors."""
    from rich.console import Console
    from rich.text import Text

    from mcprl.tools.validate import check_tools

    toolset = _discover(server, transport, header, env, cwd, allow, deny, connect_timeout)
    findings = check_tools(toolset.mcp_tools)
    console = Console(highlight=False, soft_wrap=True)
    for f in findings:
        console.print(Text.assemble((f.level, "red" if f.level == "error" else "yellow"), f" {f.tool}: {f.message}"))
    errors = sum(f.level == "error" for f in findings)
    console.print(f"{len(toolset.mcp_tools)} tools checked: {errors} errors, {len(findings) - errors} warnings")
    if errors:
        raise typer.Exit(1)
