"""A recorded server served again as an MCP server (the SDK's low-level server), for `mcprl replay`:
the tool list is the recorded one; calls are matched as `--replay` matches them
(mcprl.tools.cassette.Player: reads by their arguments, writes in order per client session); a
call the cassette lacks is answered with an error result naming it (`nearest`: a read-only tool's
nearest recorded call)."""

from __future__ import annotations

import inspect
import weakref
from typing import Any

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
