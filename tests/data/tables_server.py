"""A server of data files loaded into sessions, as a CSV editor's: `load_table` reads a CSV file of the folder it runs
in into a new session, whose id (random, another in every process) every other table tool requires, and
keeps a record of it under a hidden folder of its own there (`.table_history/`); `drop_rows` changes the file itself.
A made-up session id gets "Invalid session". Three reads that need nothing fill a session's first calls.

    env -C /srv/data python tests/data/tables_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import csv  # noqa: E402
import json  # noqa: E402
import uuid  # noqa: E402

from mcprl.servers import serve  # noqa: E402

SESSIONS: dict[str, Path] = {}  # session id -> the file it loaded


def _rows(session_id: str) -> list[dict[str, str]]:
    if session_id not in SESSIONS:
        raise ValueError("Invalid session or no data loaded")
    with SESSIONS[session_id].open() as f:
        return list(csv.DictReader(f))


def load_table(file_path: str) -> dict:
    """Load a CSV file into a new session; its session id is what the other table tools take."""
    path = Path(file_path)
    if not path.is_file() or path.suffix != ".csv":
        raise ValueError(f"Invalid file path: not a CSV file: {file_path}")
    session_id = str(uuid.uuid4())
    SESSIONS[session_id] = path
    history = path.parent / ".table_history"
    history.mkdir(exist_ok=True)
    (history / f"{session_id}.json").write_text(json.dumps({"file": path.name}))
    return {"success": True, "session_id": session_id, "rows": len(_rows(session_id))}


def table_columns(session_id: str) -> dict:
    """The columns of a loaded table."""
    return {"columns": list(_rows(session_id)[0])}


def column_total(session_id: str, column: str) -> dict:
    """The sum of a numeric column of a loaded table."""
    rows = _rows(session_id)
    if not rows or column not in rows[0]:
        raise ValueError(f"Column {column!r} not found")
    return {"column": column, "total": sum(float(r[column]) for r in rows)}


def table_rows(session_id: str) -> list[dict[str, str]]:
    """The rows of a loaded table."""
    return _rows(session_id)


def drop_rows(session_id: str, count: int) -> dict:
    """Remove the first rows of a loaded table's file."""
    rows = _rows(session_id)[count:]
    with SESSIONS[session_id].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    return {"success": True, "rows": len(rows)}


def server_version() -> str:
    """The server's version."""
    return "1.3.0"


def max_sessions() -> int:
    """How many sessions may be open at once."""
    return 100


def health() -> dict:
    """Whether the server is up, and how many sessions are open."""
    return {"status": "healthy", "active_sessions": len(SESSIONS)}


def build(seed: int = 0):
    server = serve.new_server("tables", "CSV tables loaded into sessions.")
    serve.add_tools(
        server,
        [load_table, table_columns, column_total, table_rows, drop_rows, server_version, max_sessions, health],
        writes=["load_table", "drop_rows"],
    )
    return server


if __name__ == "__main__":
    serve.main(build, "CSV tables loaded into sessions.")
