"""A small library database behind one SQL tool, as third-party database servers offer: `query(sql)` runs any
read-only statement on an in-memory SQLite database (made anew in each process) and prints the rows as Python's
repr of tuples, the columns unnamed; a bad statement is an error. `--loose-schema`: `sql` is not required by the
tool's schema, and a call sent none is refused.

    python tests/scenarios/sql_server.py [--loose-schema]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import sqlite3  # noqa: E402

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

BOOKS = [
    (1, "Dune", "Frank Herbert", 1965, 412),
    (2, "Emma", "Jane Austen", 1815, 474),
    (3, "Ulysses", "James Joyce", 1922, 730),
    (4, "Beloved", "Toni Morrison", 1987, 324),
]
LOANS = [(1, 1, "Ada", 14), (2, 3, "Grace", 21), (3, 1, "Linus", 7)]

db = sqlite3.connect(":memory:", check_same_thread=False)
db.execute("CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT, author TEXT, year INTEGER, pages INTEGER)")
db.execute("CREATE TABLE loans (id INTEGER PRIMARY KEY, book_id INTEGER, member TEXT, days INTEGER)")
db.executemany("INSERT INTO books VALUES (?, ?, ?, ?, ?)", BOOKS)
db.executemany("INSERT INTO loans VALUES (?, ?, ?, ?)", LOANS)
db.commit()

server = Server("library-sql")


def run(sql: str | None) -> str:
    """Run a read-only SQL query on the library database and return the rows."""
    if sql is None:
        raise ToolError("Client was passed a null or undefined query")
    if not sql.lstrip().lower().startswith(("select", "with", "pragma")):
        raise ToolError("only read-only queries are allowed")
    try:
        return str(db.execute(sql).fetchall())
    except sqlite3.Error as e:
        raise ToolError(f"Database error: {e}") from e


if "--loose-schema" in sys.argv[1:]:  # a schema that requires nothing, as @modelcontextprotocol/server-postgres's

    @server.tool()
    def query(sql: str | None = None) -> str:
        """Run a read-only SQL query on the library database and return the rows."""
        return run(sql)

else:

    @server.tool()
    def query(sql: str) -> str:
        """Run a read-only SQL query on the library database and return the rows."""
        return run(sql)


if __name__ == "__main__":
    server.run("stdio")
