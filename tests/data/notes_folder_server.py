"""Notes kept as text files in a folder the server is told of in its environment (`NOTES_DIR`, as servers take a
base directory): every tool takes an optional `path`, refused until it is given, whose errors name the parameter and
a tool to call first, never the folder.

    env NOTES_DIR=/srv/notes python tests/data/notes_folder_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import os  # noqa: E402
from typing import Annotated  # noqa: E402

from pydantic import Field  # noqa: E402

from mcprl.servers import serve  # noqa: E402

PATH = Annotated[str, Field(description="the notes folder")]


def _folder(path: str) -> Path:
    if path == ".":
        raise ValueError("No notes folder set. Please specify a 'path' or use 'set_notes_folder' first.")
    base = Path(os.environ["NOTES_DIR"]).resolve()
    folder = (base / path).resolve()
    if not folder.is_dir():
        raise ValueError(f"Folder does not exist: {folder}")
    if folder != base and base not in folder.parents:
        raise ValueError("The folder is outside the allowed one")
    return folder


def list_notes(path: PATH = ".") -> str:
    """List the notes."""
    return "\n".join(sorted(p.stem for p in _folder(path).glob("*.txt")))


def read_note(name: Annotated[str, Field(description="the note's name")], path: PATH = ".") -> str:
    """Read a note."""
    note = _folder(path) / f"{name}.txt"
    if "/" in name or not note.is_file():
        raise ValueError(f"No note {name!r}")
    return note.read_text()


def set_notes_folder(path: PATH) -> str:
    """Set the notes folder for later calls."""
    return f"notes folder set to {_folder(path)}"


def build(seed: int = 0):
    server = serve.new_server("notes", "Notes in a folder.")
    serve.add_tools(server, [list_notes, read_note, set_notes_folder], writes=["set_notes_folder"])
    return server


if __name__ == "__main__":
    serve.main(build, "Notes kept as text files in the folder NOTES_DIR names.")
