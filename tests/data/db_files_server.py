"""SQLite files in the folder it runs in, as sqlite-mcp-server (PyPI) serves them: every tool but the listing of
database files takes the path of one (`db_path`), which no command line names: the listing gives it, by its name in
that folder. Its search answers a message that says back what it was sent where it finds nothing; its writes make
a database file, and add a record to a table of one (making the table, or the file, where there is none); its
query tool is not said to only read.

    env -C FOLDER python tests/data/db_files_server.py
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

SUFFIXES = {".db", ".sqlite", ".sqlite3"}


def _connect(db_path: str, read_only: bool = True) -> sqlite3.Connection:
    if not os.path.exists(db_path) and read_only:
        raise ValueError(f"Database file not found at {db_path}")
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro" if read_only else db_path, uri=read_only)
        db.execute("SELECT name FROM sqlite_master").fetchall()
    except sqlite3.Error as e:
        raise ValueError(f"Could not connect to database at {db_path}: {e}") from None
    return db


def _columns(db: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    return [(row[1], row[2]) for row in db.execute(f'PRAGMA table_info("{table}")')]


def _tables(db: sqlite3.Connection) -> list[str]:
    return [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]


def list_databases(path: str = ".") -> list[str]:
    """List all SQLite database files (.db, .sqlite, .sqlite3) in the specified directory."""
    if not os.path.isdir(path):
        raise ValueError(f"Path {path} does not exist.")
    return sorted(p.name for p in Path(path).iterdir() if p.suffix.lower() in SUFFIXES)


def list_tables(db_path: str) -> list[str]:
    """List all tables in the specified SQLite database."""
    with _connect(db_path) as db:
        return _tables(db)


def describe_table(db_path: str, table_name: str) -> dict:
    """Get the columns of a table of the specified SQLite database."""
    with _connect(db_path) as db:
        if table_name not in _tables(db):
            raise ValueError(f"no such table: {table_name}")
        return {"table": table_name, "columns": [{"name": n, "type": t} for n, t in _columns(db, table_name)]}


def get_schema_summary(db_path: str) -> dict:
    """Get a summary of the whole database schema: its tables and their columns."""
    with _connect(db_path) as db:
        tables = _tables(db)
        schema = {t: [f"{n} ({kind})" for n, kind in _columns(db, t)] for t in tables}
        return {"database": os.path.basename(db_path), "tables_count": len(tables), "schema": schema}


def search_databases(path: str, query: str) -> dict:
    """Search for a keyword in the table and column names of all SQLite databases in a directory."""
    found = []
    for name in list_databases(path):
        with _connect(os.path.join(path, name)) as db:
            for table in _tables(db):
                if query.lower() in table.lower():
                    found.append({"database": name, "table": table, "match_type": "table_name"})
                found += [
                    {"database": name, "table": table, "column": column, "match_type": "column_name"}
                    for column, _ in _columns(db, table)
                    if query.lower() in column.lower()
                ]
    return {"matches": found} if found else {"message": f"No matches found for '{query}' in {path}"}


def execute_query(db_path: str, query: str) -> list[dict]:
    """Execute a SELECT query on the specified SQLite database. Only SELECT statements are allowed."""
    if not query.strip().upper().startswith("SELECT"):
        raise ValueError("Security violation: Only SELECT queries are allowed.")
    with _connect(db_path) as db:
        try:
            cursor = db.execute(query)
        except sqlite3.Error as e:
            raise ValueError(f"Error executing query: {e}") from None
        columns = [d[0] for d in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def create_database(db_path: str) -> str:
    """Create a new empty SQLite database file at the specified path."""
    if os.path.exists(db_path):
        raise ValueError(f"Database file already exists at {db_path}")
    sqlite3.connect(db_path).close()
    return f"Successfully created a new SQLite database at {db_path}"


def add_record(db_path: str, table_name: str, title: str, content: str) -> str:
    """Add a record (a title and its content) to a table of the database, made where there is none."""
    with _connect(db_path, read_only=False) as db:
        db.execute(f'CREATE TABLE IF NOT EXISTS "{table_name}" (id INTEGER PRIMARY KEY, title TEXT, content TEXT)')
        try:
            cursor = db.execute(f'INSERT INTO "{table_name}" (title, content) VALUES (?, ?)', (title, content))
        except sqlite3.Error as e:
            raise ValueError(f"Error saving record to {table_name}: {e}") from None
        return f"Record saved to {table_name} with id {cursor.lastrowid}."


def build(seed: int = 0):
    server = serve.new_server("db-files", "SQLite database files.")
    tools = [
        list_databases,
        list_tables,
        describe_table,
        get_schema_summary,
        search_databases,
        execute_query,
        create_database,
        add_record,
    ]
    # (its query tool not said to only read, as a name of "execute" may write)
    serve.add_tools(server, tools, writes=["execute_query", "create_database", "add_record"])
    return server


if __name__ == "__main__":
    serve.main(build, "SQLite database files.")
