"""A third-party-style MCP server with one tool, over stdio, written the way the MCP SDK's
README shows (MCPServer, FastMCP before mcp 2): what `mcprl scenarios` / `mcprl train` meet on
a user's machine.

    mcprl scenarios --server "python /abs/path/tests/one_tool_server.py" -n 8 -o weather.jsonl
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcp.server.mcpserver import MCPServer  # noqa: E402

mcp = MCPServer("weather")

FORECASTS = {"paris": "light rain, 14 C", "oslo": "snow, -3 C", "cairo": "sunny, 31 C", "lima": "overcast, 19 C"}


@mcp.tool()
def get_forecast(city: str) -> str:
    """Tomorrow's weather forecast for a city."""
    return FORECASTS.get(city.strip().lower(), f"no forecast for {city}")


if __name__ == "__main__":
    mcp.run()
