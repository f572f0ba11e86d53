"""Tables kept as CSV files in the folder the server runs in (a user's folder of spreadsheets, given as
`--cwd`): no file is named on its command line or in its descriptions, so exploring finds them only by
looking in the folder. `save_table` writes one there.

    python tests/data/folder_server.py   (in the folder of files)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import csv  # noqa: E402
from typing import Annotated  # noqa: E402

from pydantic import Field  # noqa: E402

from mcprl.servers import serve  # noqa: E402

FILE = Annotated[str, Field(description="the file")]


def _rows(file: str) -> list[dict[str, str]]:
    path = Path(file)
    if not path.is_file():
        raise ValueError(f"cannot open {file}")
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def read_table(file: FILE) -> str:
    """Read a table: its rows, one per line."""
    return "\n".join(", ".join(f"{k}: {v}" for k, v in row.items()) for row in _rows(file))


def column_total(file: FILE, column: Annotated[str, Field(description="a column")]) -> str:
    """Add up a column of a table."""
    rows = _rows(file)
    if not rows or column not in rows[0]:
        raise ValueError(f"no column {column!r}; the columns: {', '.join(rows[0]) if rows else 'none'}")
    return f"{column} total: {sum(float(row[column]) for row in rows):g}"


def save_table(file: FILE, text: Annotated[str, Field(description="the rows, as CSV")]) -> str:
    """Save a table."""
    Path(file).write_text(text)
    return f"saved {file}"


def build(seed: int = 0):
    server = serve.new_server("tables", "Tables in a folder.")
    serve.add_tools(server, [read_table, column_total, save_table], writes=["save_table"])
    return server


if __name__ == "__main__":
    serve.main(build, "Tables kept as CSV files in the folder it runs in.")
