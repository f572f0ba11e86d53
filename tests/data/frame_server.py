"""A table loaded from the CSV file its command line names, asked about by column, as data-frame servers
(mcp-pandas) are: no tool lists the columns, and an unknown one is refused without saying which there are
("Column 'x' not found in DataFrame").

    python tests/data/frame_server.py FILE.csv
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import csv  # noqa: E402

from mcprl.servers import serve  # noqa: E402

ROWS = list(csv.DictReader(open(sys.argv[1], encoding="utf-8"))) if len(sys.argv) > 1 else []


def average(column: str) -> str:
    """Calculate the average of a column.

    Args:
        column: Column name to calculate the average for
    """
    if not ROWS or column not in ROWS[0]:
        raise ValueError(f"Column '{column}' not found in DataFrame")
    try:
        values = [float(row[column]) for row in ROWS]
    except ValueError:
        raise ValueError(f"Cannot perform reduction 'mean' with string dtype of column '{column}'") from None
    return f"{sum(values) / len(values):g}"


def build(seed: int = 0):
    server = serve.new_server("frame", "A table loaded from a CSV file.")
    serve.add_tools(server, [average])
    return server


if __name__ == "__main__":
    serve.main(build, "A table loaded from a CSV file.", argv=sys.argv[2:])
