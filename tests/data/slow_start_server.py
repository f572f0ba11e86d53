"""An MCP server that takes a second to start (as one importing a large library does) and says
how many servers were starting at the same moment: `<pid>.concurrent` in $MARK_DIR."""

import os
import time
from pathlib import Path

marks = Path(os.environ["MARK_DIR"])
(marks / f"{os.getpid()}.start").touch()
time.sleep(1.0)
starting = len(list(marks.glob("*.start"))) - len(list(marks.glob("*.ready")))
(marks / f"{os.getpid()}.concurrent").write_text(str(starting))
(marks / f"{os.getpid()}.ready").touch()

from mcp.server.mcpserver import MCPServer  # noqa: E402

mcp = MCPServer("slow")


@mcp.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    mcp.run()
