"""Build and run a shipped MCP server on whichever SDK generation is installed.

mcp 2.x calls the high-level server `mcp.server.mcpserver.MCPServer`; mcp 1.x calls it
`mcp.server.fastmcp.FastMCP` and takes host/port as settings instead of `run()` arguments.
Everything else the shipped servers use (`.tool()`/`.add_tool()`, `Annotated[..., Field(description=...)]`
parameters, docstrings as descriptions, `ToolError` messages as `isError` results) is the same in both.
"""

from __future__ import annotations

import argparse
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

try:
    from mcp.server.mcpserver import Image
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
    from mcp.server.fastmcp import Image
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

from mcp.types import ToolAnnotations

__all__ = ["Image", "add_tools", "main", "new_server", "run"]

TRANSPORTS = {"stdio": "stdio", "http": "streamable-http", "sse": "sse"}


def new_server(name: str, instructions: str) -> Any:
    return Server(name, instructions=instructions, log_level="WARNING")


def add_tools(
    server: Any, tools: Sequence[Callable[..., Any]], writes: Sequence[str] = (), adds: Sequence[str] = ()
) -> None:
    """Register functions (or bound methods) as tools; the docstring is the description. Every tool
    not named in `writes` is annotated read-only (MCP's `readOnlyHint`), so clients such as
    mcprl's explorer know what they may call on a shared server; a write is destructive (`destructiveHint`) unless
    `adds` names it (it only adds, as creating a record does)."""
    for fn in tools:
        write = fn.__name__ in writes
        hints = ToolAnnotations(readOnlyHint=not write, destructiveHint=write and fn.__name__ not in adds)
        server.add_tool(
            _reporting(fn), name=fn.__name__, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints
        )


def _reporting(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with its ValueErrors raised as ToolError: mcp 2.x shows the model only ToolError
    messages ("no item with SKU ..."), hiding other exceptions as crashes."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except ValueError as e:
                raise ToolError(str(e)) from e

        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            raise ToolError(str(e)) from e

    return run


def run(server: Any, transport: str, host: str, port: int) -> None:
    sdk_transport = TRANSPORTS[transport]
    if sdk_transport == "stdio":
        server.run("stdio")
    elif hasattr(server, "settings") and hasattr(server.settings, "port"):  # mcp 1.x FastMCP
        server.settings.host, server.settings.port = host, port
        server.run(sdk_transport)
    else:
        server.run(sdk_transport, host=host, port=port)


def main(build: Callable[[int], Any], description: str, argv: Sequence[str] | None = None) -> None:
    """The command line every shipped server shares: `--transport stdio|http|sse --port P --seed S`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--transport", choices=sorted(TRANSPORTS), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated world (tasks must use the same)")
    args = parser.parse_args(argv)
    run(build(args.seed), args.transport, args.host, args.port)
