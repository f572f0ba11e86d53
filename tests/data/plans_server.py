"""A planner that keeps requests and their tasks in a JSON file the command line names (`PLANS_FILE`), as a task
manager agents drive does: `plan_request` answers with the request's id beside a Markdown table of its tasks, each
with an id of its own (`{"requestId": "req-1", "message": "Progress Status:\n| Task ID | ... |\n| task-1 | ..."}`),
`add_tasks` with the request's id it was sent beside the table; three tools take a task's id, and an error is an
object that says what went wrong (`{"status": "error", "message": "Task not found"}`).

    PLANS_FILE=plans.json python tests/data/plans_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import json  # noqa: E402
import os  # noqa: E402

from pydantic import BaseModel  # noqa: E402

from mcprl.servers import serve  # noqa: E402


class Task(BaseModel):
    title: str
    description: str


def load() -> dict:
    path = Path(os.environ["PLANS_FILE"])
    return json.loads(path.read_text()) if path.exists() else {"requests": {}, "tasks": 0}


def save(state: dict) -> None:
    Path(os.environ["PLANS_FILE"]).write_text(json.dumps(state))


def failed(message: str) -> ValueError:
    return ValueError(json.dumps({"status": "error", "message": message}))


def found(state: dict, request_id: str) -> dict:
    request = state["requests"].get(request_id)
    if request is None:
        raise failed("Request not found")
    return request


def task_in(state: dict, request_id: str, task_id: str) -> dict:
    task = next((t for t in found(state, request_id)["tasks"] if t["id"] == task_id), None)
    if task is None:
        raise failed("Task not found")
    return task


def added(state: dict, request: dict, tasks: list[Task]) -> list[dict]:
    made = []
    for t in tasks:
        state["tasks"] += 1
        made.append({"id": f"task-{state['tasks']}", "title": t.title, "description": t.description})
    request["tasks"] += [{**t, "done": False} for t in made]
    return made


def progress(request: dict) -> str:
    """A request's tasks as a Markdown table, as mcp-taskmanager reports them after each change."""
    rows = [f"| {t['id']} | {t['title']} | {'done' if t['done'] else 'open'} |" for t in request["tasks"]]
    return "\n".join(["Progress Status:", "| Task ID | Title | Status |", "|---|---|---|", *rows])


def plan_request(original_request: str, tasks: list[Task]) -> dict:
    """Register a request and plan its tasks."""
    state = load()
    request_id = f"req-{len(state['requests']) + 1}"
    request = state["requests"][request_id] = {"original": original_request, "tasks": []}
    made = added(state, request, tasks)
    save(state)
    return {"status": "planned", "requestId": request_id, "totalTasks": len(made), "message": progress(request)}


def add_tasks(requestId: str, tasks: list[Task]) -> dict:
    """Add tasks to a request."""
    state = load()
    request = found(state, requestId)
    made = added(state, request, tasks)
    save(state)
    return {"status": "tasks_added", "requestId": requestId, "added": len(made), "message": progress(request)}


def mark_task_done(requestId: str, taskId: str) -> dict:
    """Mark a task of a request done."""
    state = load()
    task_in(state, requestId, taskId)["done"] = True
    save(state)
    return {"status": "task_marked_done", "taskId": taskId}


def approve_task(requestId: str, taskId: str) -> dict:
    """Approve a task that is done."""
    if not task_in(load(), requestId, taskId)["done"]:
        raise failed("Task not done yet.")
    return {"status": "task_approved", "taskId": taskId}


def task_details(taskId: str) -> dict:
    """The details of a task."""
    for request_id, request in load()["requests"].items():
        for t in request["tasks"]:
            if t["id"] == taskId:
                return {
                    "requestId": request_id,
                    "title": t["title"],
                    "description": t["description"],
                    "done": t["done"],
                }
    raise failed("Task not found")


def list_requests() -> dict:
    """The requests, each with its number of tasks."""
    requests = load()["requests"]
    return {
        "requests": [{"requestId": k, "original": r["original"], "tasks": len(r["tasks"])} for k, r in requests.items()]
    }


def build(seed: int = 0):
    server = serve.new_server("plans", "Requests and their tasks.")
    serve.add_tools(
        server,
        [plan_request, add_tasks, mark_task_done, approve_task, task_details, list_requests],
        writes=["plan_request", "add_tasks", "mark_task_done", "approve_task"],
    )
    return server


if __name__ == "__main__":
    serve.main(build, "Requests and their tasks.")
