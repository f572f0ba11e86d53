"""A database a URL names, as servers built on SQLAlchemy take one (`DB_URL=sqlite:////data/shop.db` in the
environment, or `--db-url=URL`): tools that do not say they only read (a query may write), rows as numbered
paragraphs with a count after them, a name filter that answers nothing when nothing matches, and a write.

    env DB_URL=sqlite:////path/to/shop.db python tests/data/sql_url_server.py
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.servers import serve  # noqa: E402

FLAG = [a for a in sys.argv if a.startswith("--db-url=")]
URL = FLAG[0].partition("=")[2] if FLAG else os.environ["DB_URL"]
sys.argv = [a for a in sys.argv if a not in FLAG]
PATH = URL.removeprefix("sqlite:///")  # (four slashes: an absolute path)


def _rows(sql: str) -> list[dict]:
    with sqlite3.connect(PATH) as db:
        try:
            cursor = db.execute(sql)
        except sqlite3.Error as e:
            raise ValueError(f"query failed: {e}") from e
        if cursor.description is None:
            return []
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def _names() -> list[str]:
    return [r["name"] for r in _rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def table_names() -> str:
    """All the tables of the database."""
    return ", ".join(_names())


def find_tables(q: str) -> str:
    """The tables whose names hold `q`."""
    return ", ".join(n for n in _names() if q in n)


def run_query(query: str) -> str:
    """Run an SQL query."""
    rows = _rows(query)
    shown = [f"{i}. row\n" + "\n".join(f"{k}: {v}" for k, v in row.items()) for i, row in enumerate(rows, 1)]
    return "\n\n".join([*shown, f"Result: {len(rows)} rows"])


def add_product(name: str, price: float) -> str:
    """Add a product to the catalogue."""
    with sqlite3.connect(PATH) as db:
        db.execute("INSERT INTO products (name, price, stock) VALUES (?, ?, 0)", (name, price))
    return f"added {name}"


def build(seed: int = 0):
    server = serve.new_server("sql-url", "A database a URL names.")
    tools = [table_names, find_tables, run_query, add_product]
    serve.add_tools(server, tools, writes=[t.__name__ for t in tools])
    return server


if __name__ == "__main__":
    serve.main(build, "A database a URL names.")
