"""`mcprl replay CASSETTE`: a recorded server served again as an MCP server
(mcprl.tools.replay_server), so any client (another framework, a user's agent tests, CI) can use
it without the server installed."""

from __future__ import annotations

from pathlib import Path

import anyio
import typer

from mcprl.errors import UserError
from mcprl.tools.cassette import Cassette


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
    # Lazy: loaded when the command runs, so that `mcprl --help` stays fast
    import uvicorn

    from mcprl.tools.replay_server import HTTP_PATH, build_server, serve_stdio

    server = build_server(Cassette.load(cassette), nearest=on_miss == "nearest")
    if transport == "stdio":
        anyio.run(serve_stdio, server)
        return
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning")
