"""An MCP server of two listings, over stdio, for tests of counted listings: one that lists the same
twelve moves every time, one that lists one more event every time it is asked (a counter in the file
given as its argument; 10 events were seen before the first call).

    python tests/scenarios/listings_server.py /tmp/seen
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

if __name__ == "__main__":
    hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)


from mcp.server.mcpserver import MCPServer  # noqa: E402

mcp = MCPServer("listings")
MOVES = ["e2e4", "d2d4", "g1f3", "c2c4", "b1c3", "e2e3", "d2d3", "g2g3", "b2b3", "f2f4", "a2a3", "h2h3"]


@mcp.tool()
def get_valid_moves() -> str:
    """The legal moves."""
    return "\n".join(MOVES)


@mcp.tool()
def get_recent_events() -> str:
    """The events so far: one more every time it is asked."""
    counter = Path(sys.argv[1])
    seen = int(counter.read_text()) + 1 if counter.exists() else 11
    counter.write_text(str(seen))
    return "\n".join(f"event-{i}" for i in range(seen))


if __name__ == "__main__":
    mcp.run()
