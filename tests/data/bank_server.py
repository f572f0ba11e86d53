"""A bank of notes made wherever it is told, as memory-bank-mcp makes its `memory-bank/` folder: `initialize_bank`
makes `<path>/bank/` (a path relative to the folder the server runs in, or absolute: anywhere on the machine) and
says where; the other tools work on the bank made last and say to make one first where there is none.

    python tests/data/bank_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import json  # noqa: E402
from typing import Annotated  # noqa: E402

from pydantic import Field  # noqa: E402

from mcprl.servers import serve  # noqa: E402

bank: Path | None = None


def _bank() -> Path:
    if bank is None:
        raise ValueError("Bank not found. Use initialize_bank to create one.")
    return bank


def initialize_bank(path: Annotated[str, Field(description="the folder to make the bank in")]) -> str:
    """Make a bank of notes in a folder, with a first note."""
    global bank
    bank = (Path(path) / "bank").absolute()
    bank.mkdir(parents=True, exist_ok=True)
    (bank / "welcome.md").write_text("Notes go here.")
    return f"Bank initialized at {bank}"


def write_bank_file(filename: str, content: str) -> str:
    """Write a note into the bank."""
    (_bank() / filename).write_text(content)
    return f"File {filename} written to the bank"


def read_bank_file(filename: str) -> str:
    """Read a note of the bank."""
    note = _bank() / filename
    if not note.is_file():
        raise ValueError(f"File {filename} not found in the bank")
    return note.read_text()


def bank_status() -> str:
    """Where the bank is and the notes it holds."""
    return json.dumps({"path": str(_bank()), "files": sorted(p.name for p in _bank().iterdir())})


def build(seed: int = 0):
    server = serve.new_server("bank", "A bank of notes.")
    serve.add_tools(
        server,
        [initialize_bank, write_bank_file, read_bank_file, bank_status],
        writes=["initialize_bank", "write_bank_file"],
    )
    return server


if __name__ == "__main__":
    serve.main(build, "A bank of notes made wherever it is told.")
