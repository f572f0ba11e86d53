"""Notes kept in a file that the environment names (NOTES_FILE), not the command line, or else under the
home folder (`~/.local/share/notes/notes.json`, as a todo app keeps its list): state that outlives the
server's process, as a knowledge-graph server's default file does. Its first read (`server_info`) never
changes, `settings` gives what the home holds whatever was written; `list_notes` shows what `add_note`
wrote, in any later process (unless asked for notes holding a text the write did not: a filter).

    [NOTES_FILE=F] python tests/data/notes_file_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import json  # noqa: E402
import os  # noqa: E402
from typing import Annotated  # noqa: E402

from pydantic import Field  # noqa: E402

from mcprl.servers import serve  # noqa: E402

FILE = Path(os.environ.get("NOTES_FILE") or Path.home() / ".local" / "share" / "notes" / "notes.json")


def _notes() -> list[str]:
    return json.loads(FILE.read_text()) if FILE.exists() else []


def server_info() -> str:
    """The server's name and version."""
    return "notes server 1.0"


def settings() -> str:
    """The settings in force: the user's (`~/.config/notes/settings`), else the defaults."""
    mine = Path.home() / ".config" / "notes" / "settings"
    return mine.read_text() if mine.exists() else "sort: newest first"


def list_notes(containing: Annotated[str | None, Field(description="only notes holding this text")] = None) -> str:
    """List the notes, one per line: every one, or those holding a text."""
    notes = [(i, text) for i, text in enumerate(_notes(), 1) if containing is None or containing in text]
    return "\n".join(f"note {i}: {text}" for i, text in notes) or "no notes"


def add_note(text: Annotated[str, Field(description="the note, e.g. buy milk")]) -> str:
    """Add a note."""
    FILE.parent.mkdir(parents=True, exist_ok=True)
    FILE.write_text(json.dumps([*_notes(), text]))
    return f"added note {len(_notes())}"


def build(seed: int = 0):
    server = serve.new_server("notes", "Notes in a file.")
    serve.add_tools(server, [server_info, settings, list_notes, add_note], writes=["add_note"])
    return server


if __name__ == "__main__":
    serve.main(build, "Notes kept in a file.")
