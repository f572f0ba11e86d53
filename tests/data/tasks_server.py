"""A to-do store that starts empty in each process, as a todo app on a fresh machine does: `add_task` takes a
name, a description and tags as a person writes them, answers with a stock reply ("Task created successfully with
ID: 1"); the server sets each task's status ("open") and a priority, which `get_task` and `list_tasks` show.

    python tests/data/tasks_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import json  # noqa: E402

from mcprl.servers import serve  # noqa: E402

TASKS: list[dict] = []


def add_task(name: str, desc: str | None = None, tags: list[str] | None = None) -> str:
    """Create a new task."""
    TASKS.append(
        {"id": len(TASKS) + 1, "name": name, "desc": desc, "tags": tags, "status": "open", "priority": "normal"}
    )
    return f"Task created successfully with ID: {len(TASKS)}"


def get_task(id: int) -> str:
    """Get a task by ID."""
    return json.dumps(TASKS[id - 1], indent=2) if 0 < id <= len(TASKS) else "Task not found"


def list_tasks() -> str:
    """List the tasks."""
    return json.dumps(TASKS, indent=2)


def build(seed: int = 0):
    server = serve.new_server("tasks", "A to-do list.")
    serve.add_tools(server, [add_task, get_task, list_tasks], writes=["add_task"])
    return server


if __name__ == "__main__":
    serve.main(build, "A to-do list.")
