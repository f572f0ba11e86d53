"""`mcprl replay CASSETTE`: a recorded server served again as an MCP server (the SDK's low-level
server), so any client (another framework, a user's agent tests, CI) can use it without the
server installed. The tool list is the recorded one; calls are matched as `--replay` matches them
(mcprl.tools.cassette.Player: reads by their arguments, writes in order per client session); a
call the cassette lacks is answered with an error result naming it (`--on-miss nearest`: a
read-only tool's nearest recorded call)."""

from __future__ import annotations

import inspect
import weakref
from pathlib import Path
from typing import Any

import anyio
import typer
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

from mcprl.errors import UserError
from mcprl.tools.cassette import Cassette, Lease, Player, canonical

HTTP_PATH = "/mcp"


def build_server(cassette: Cassette, *, nearest: bool = False) -> Any:
    """An MCP server (mcp 2.x low-level `Server`) that answers from `cassette`."""
    if "on_call_tool" not in inspect.signature(Server.__init__).parameters:
        raise UserError("mcprl replay serves with the MCP SDK 2.x low-level server; pip install 'mcp>=2'")
    player = Player(cassette)
    tools = [Tool.model_validate(t) for t in cassette.header.tools]
    leases: weakref.WeakKeyDictionary[Any, Lease] = weakref.WeakKeyDictionary()  # per client session

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        arguments = dict(params.arguments or {})
        # mcp 2.x makes a ServerSession per request; the connection under it is the client's session
        lease = leases.setdefault(getattr(ctx.session, "_connection", ctx.session), Lease())
        found = player.answer(lease, params.name, arguments)
        if found is None and nearest:
            found = player.nearest(lease, params.name, arguments)
        if found is None:
            text = f"replay miss: {params.name} {canonical(arguments)} is not in the cassette {cassette.path.name}"
            return CallToolResult(content=[TextContent(type="text", text=text)], isError=True)
        if found.result is None:
            return CallToolResult(content=[TextContent(type="text", text=found.error or "Error")], isError=True)
        return CallToolResult.model_validate(found.result.wire())

    info = cassette.header.server_info
    return Server(
        info.get("name") or "replay",
        version=info.get("version") or "",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(server: Any) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def replay(
    cassette: Path = typer.Argument(..., help="a cassette recorded with --record"),
    transport: str = typer.Option("stdio", "--transport", help="stdio, or http (streamable HTTP at /mcp)"),
    host: str = typer.Option("127.0.0.1", "--host", help="http: the address to listen on"),
    port: int = typer.Option(8000, "--port", help="http: the port to listen on"),
    on_miss: str = typer.Option(
        "error",
        "--on-miss",
        help="a call the cassette lacks: error (an error result), or "
        "nearest (a read-only tool's nearest recorded call)",
    ),
) -> None:
    """Serve a recorded cassette as an MCP server: its tools, its recorded answers."""
    if transport not in ("stdio", "http"):
        raise UserError(f"--transport {transport!r}: choose stdio or http")
    if on_miss not in ("error", "nearest"):
        raise UserError(f"--on-miss {on_miss!r}: choose error or nearest (a served cassette has no live server)")
    server = build_server(Cassette.load(cassette), nearest=on_miss == "nearest")
    if transport == "stdio":
        anyio.run(serve_stdio, server)
        return
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning")
