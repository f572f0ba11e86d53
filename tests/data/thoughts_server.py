"""A scratchpad a session's calls add to (as @modelcontextprotocol/server-sequential-thinking keeps its thoughts):
`think` says how many thoughts the process holds so far, a count of the calls before it, not anew each time.

    python tests/data/thoughts_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from typing import Annotated  # noqa: E402

from pydantic import Field  # noqa: E402

from mcprl.servers import serve  # noqa: E402

THOUGHTS: list[str] = []


def think(
    thought: Annotated[str, Field(description="a step of your thinking")],
    thought_number: Annotated[int, Field(description="which step it is", ge=1)],
) -> dict:
    """Think a step: the thought is kept, and said back with how many are kept so far."""
    THOUGHTS.append(thought)
    return {"thought_number": thought_number, "history_length": len(THOUGHTS), "words": len(thought.split())}


def build(seed: int = 0):
    server = serve.new_server("thoughts", "A scratchpad.")
    serve.add_tools(server, [think])
    return server


if __name__ == "__main__":
    serve.main(build, "A scratchpad.")
