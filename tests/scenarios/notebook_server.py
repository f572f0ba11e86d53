"""An MCP server of a notebook, over stdio, whose tools answer only in order: every other tool's error says to open
the notebook first ("No notebook is open. Call open_notebook first."), and a note is read by a title that only a
search of the notes gives ("*" lists them all).

    python tests/scenarios/notebook_server.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

if __name__ == "__main__":
    hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)


from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402

mcp = MCPServer("notebook")
NOTES = {
    "Example budget": "Rent 900, food 300, the rest saved.",
    "Oboe lessons": "Tuesdays at five, with Ines.",
    "Kiln repair": "The element arrives on the 12th.",
}
opened: list[str] = []


def closed() -> str | None:
    return None if opened else "No notebook is open. Call open_notebook first."


@mcp.tool()
def open_notebook(name: str) -> str:
    """Open a notebook by its name: the other tools work on the notebook open."""
    opened.append(name)
    return f"Notebook {name} opened."


@mcp.tool()
def find_notes(query: str) -> str:
    """The titles of the notes whose title holds the query ("*" for all)."""
    if error := closed():
        raise ToolError(error)
    found = [title for title in NOTES if query in ("*", ".") or query.lower() in title.lower()]
    return "\n".join(found) if found else "No matches found"


@mcp.tool()
def read_note(title: str) -> str:
    """A note's text, by its title."""
    if error := closed():
        raise ToolError(error)
    if title not in NOTES:
        raise ToolError(f"No note titled {title}.")
    return NOTES[title]


if __name__ == "__main__":
    mcp.run()
