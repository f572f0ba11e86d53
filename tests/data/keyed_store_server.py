"""Notes kept in a JSON store, each project's under an id its folder's path gives (`key`), as kanban-mcp keeps its
boards: run on copies of the store and the folder, the folder's path is another, and its notes are not found. A
store may hold the folder's path beside its notes, as kanban-mcp's does.

    python tests/data/keyed_store_server.py STORE.json PROJECT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

from mcprl.servers import serve  # noqa: E402

STORE, PROJECT = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("", "")


def key(folder: str) -> str:
    """The id of the project of `folder`."""
    return hashlib.sha256(os.path.realpath(folder).encode()).hexdigest()[:16]


def _notes() -> list[dict]:
    return json.loads(Path(STORE).read_text()).get(key(PROJECT), {}).get("notes", []) if STORE else []


def list_notes() -> str:
    """List the notes of the current project."""
    return json.dumps({"notes": _notes(), "count": len(_notes())})


def find_note(title: str) -> str:
    """Find a note of the current project by its title."""
    found = [n for n in _notes() if n["title"] == title]
    return json.dumps({"notes": found, "count": len(found)})


def build(seed: int = 0):
    server = serve.new_server("keyed-store", "Notes kept per project folder.")
    serve.add_tools(server, [list_notes, find_note])
    return server


if __name__ == "__main__":
    serve.main(build, "Notes kept per project folder.", argv=sys.argv[3:])
