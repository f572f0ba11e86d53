"""A server whose reads work on a workspace one opens first, as a code server reads a project one registers: one
process keeps the workspaces it opened (a fresh process has none). `open_workspace` answers with the new
workspace's id; `workspace_files` and `workspace_size` refuse any id it did not give. Four reads that need nothing
fill a session's first calls, as a server's listings do.

    python tests/data/workspace_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.servers import serve  # noqa: E402

FILES = {"plan.md": 120, "notes.txt": 48, "budget.csv": 310}
OPEN: dict[str, str] = {}  # workspace id -> its title


def open_workspace(title: str) -> dict:
    """Open a new workspace with a title; its id is what the other tools take."""
    workspace = f"ws-{len(OPEN) + 101}"
    OPEN[workspace] = title
    return {"workspace_id": workspace, "title": title}


def opened(workspace_id: str) -> str:
    if workspace_id not in OPEN:
        raise ValueError(f"no workspace {workspace_id!r} is open: open one first")
    return workspace_id


def workspace_files(workspace_id: str) -> list[str]:
    """List the files of an open workspace."""
    opened(workspace_id)
    return sorted(FILES)


def workspace_size(workspace_id: str) -> int:
    """The bytes the files of an open workspace take."""
    opened(workspace_id)
    return sum(FILES.values())


def server_version() -> str:
    """The server's version."""
    return "2.4.1"


def supported_formats() -> list[str]:
    """The file formats the server reads."""
    return ["md", "txt", "csv"]


def workspace_limit() -> int:
    """How many workspaces may be open at once."""
    return 8


def uptime_note() -> str:
    """Whether the server is up."""
    return "up"


def build(seed: int = 0):
    server = serve.new_server("workspaces", "Workspaces of files.")
    serve.add_tools(
        server,
        [
            open_workspace,
            workspace_files,
            workspace_size,
            server_version,
            supported_formats,
            workspace_limit,
            uptime_note,
        ],
        writes=["open_workspace"],
    )
    return server


if __name__ == "__main__":
    serve.main(build, "Workspaces of files.")
