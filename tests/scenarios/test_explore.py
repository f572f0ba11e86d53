"""Exploring real servers over real transports (mcprl.scenarios.explore, mcprl.scenarios.isolation): which tools may
write and where, state that outlives a session or lives under the home folder, bounds, errors reported in text counted
as errors, reads made again after writes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from mcprl.checks import holds_answer
from mcprl.errors import UserError
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import CORRECTIONS, QUIET_SERVER, QUIET_WRITES, READ_BACKS, explore
from mcprl.scenarios.explored import Exploration, ExploredCall
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.isolation import may_write
from mcprl.scenarios.replay import gives_answer
from mcprl.scenarios.source import grounded
from mcprl.scenarios.values import AWAITING, call_key
from mcprl.tools import ServerSpec, ToolPool
from mcprl.tools.copies import names_a_file
from mcprl.types import load_jsonl
from tests.conftest import _free_port, _wait_listening
from tests.scenarios.explored_servers import (
    BANK,
    CALC_SESSIONS,
    DB_FILES,
    DIGESTS,
    ENTRIES,
    FOLDER,
    FRAME,
    GEOMETRY,
    KEYED_STORE,
    MANY_TOOLS,
    MATRICES,
    NOTES,
    NOTES_FOLDER,
    ORDERS,
    PLANS,
    PROJECTS,
    SHOP,
    SQL_URL,
    SUMS,
    TABLES,
    TRACK_GAME,
    VAULT,
    WORKSPACES,
    come_back_fresh,
    explore_and_ground,
    explored_with_generator,
    grounded_and_replayed,
    shop,
)

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
TAGS_SERVER = ROOT / "tests" / "data" / "tags_file_server.py"


def test_which_tools_may_write():
    assert not may_write({"name": "delete_everything", "annotations": {"readOnlyHint": True}})
    assert may_write({"name": "get_item", "annotations": {"destructiveHint": True}})
    assert not may_write({"name": "searchEmails"}) and not may_write({"name": "list_units"})
    assert may_write({"name": "send_email"}) and may_write({"name": "createIssue"})
    # (a record's state moved along: kanban-mcp's `advance_status`, asked "Find the advance status for 2")
    assert may_write({"name": "advance_status"}) and may_write({"name": "revert_status"})
    assert may_write({"name": "frobnicate", "description": "Frobnicates."})  # says neither: assume it writes
    assert not may_write({"name": "frobnicate", "description": "Get the frobnication level."})
    # a description says what a tool does as a docstring does, in the third person (mcp-alchemy's
    # `schema_definitions`: "Returns schema and relation information ..."), but a name's "return" is a write's
    assert not may_write({"name": "schema_definitions", "description": "Returns schema information for tables."})
    assert not may_write({"name": "frobnicate", "description": "Lists the tables."})
    assert may_write({"name": "frobnicate", "description": "Deletes the tables."})
    assert may_write({"name": "return_book", "description": "Returns a book to the library."})
    assert names_a_file(["python", "server.py", "--db", "shop.db"]) == "shop.db"
    assert names_a_file(["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]) == "/tmp"
    assert (
        names_a_file(["python", "-m", "mcprl.servers.inventory"]) is None
        and names_a_file(["python", str(SHOP)]) is None
    )
    # a file an environment variable names is where state lives; the server's own program after `env` is not
    assert names_a_file(["env", "MEMORY_FILE_PATH=/tmp/graph.jsonl", sys.executable]) == "/tmp/graph.jsonl"
    assert names_a_file(["env", "LOG_LEVEL=debug", sys.executable, "-m", "some_server"]) is None


def test_which_result_texts_report_an_error():
    from mcprl.scenarios.results import failed_items
    from mcprl.tools.convert import reports_error

    # files read at once, each failing alone: those a part of the result says failed
    answered = "a.txt:\nhello\n---\nTue Dec 01 2026: Error - ENOENT: no such file or directory, open '/srv/x'"
    assert failed_items(answered, {"paths": ["a.txt", "Tue Dec 01 2026"]}) == {"Tue Dec 01 2026"}
    assert failed_items("Error: b.txt: Error - EISDIR\n---\na.txt:\nhello", {"paths": ["a.txt", "b.txt"]}) == {"b.txt"}
    assert not failed_items("a.txt:\nhello", {"paths": ["a.txt"]})

    for text in (
        "Error: Database error",
        "ValueError: boom",
        'Database error: near "2026": syntax error',
        "notes.txt: Error - ENOENT: no such file or directory",
        "/srv/a: Error - EISDIR: illegal operation",
        # (a file named as a date was sent: the name a result gives before its colon may hold spaces)
        "Sun Mar 10 2024 10:00:00 GMT+0000 (Coordinated Universal Time): Error - ENOENT: no such file",
        '{"error": "not found"}',
        # (mcp-geo's: a batch whose every record holds an error where its result would be, beside its counts)
        '{"total": 2, "results": [{"address": "Lisbon", "index": 0, "result": {"matches": {"error": "no network"}}},'
        ' {"address": "Porto", "index": 1, "result": {"matches": {"error": "no network", "hint": "retry"}}}]}',
        # (mcp-geo's: an error and a hint on what to fix, no data beside)
        '{"error": "Invalid GeoJSON: Expecting value: line 1 column 1", "hint": "Check your input parameters."}',
        '{"ok": false, "detail": "no such order"}',
        '{"status": false, "status_message": "file not found", "tool_result": {"error_code": "file_not_found"}}',
        '{"status": "error", "message": "Language \'x\' is not available"}',
        '{"status": "Failed", "error_message": "no such project"}',
        # (mcp-text-editor: a result per file edited)
        '{"/srv/notes.txt": {"result": "error", "reason": "Hash mismatch - file has been modified", "hash": "e45a"}}',
        # (refusals, mcp-simple-timeserver's: not what was asked, and what follows a label is a fallback)
        'Could not parse date "tuesday". Use ISO 8601 format (YYYY-MM-DD) or "now".',
        'Note: Could not resolve country "Tuesday". Try a city name.\n\nUTC Time: 2026-12-01 19:16:56',
        'Please provide either a country (e.g., "Poland", "PL") or a city (e.g., "Warsaw", "Berlin").',
        "Unknown calendar format: tuesday",
        "Cannot divide by zero",
        # (mcp-memory-keeper's: what failed, then why; what the call lacks)
        "Session merge failed: Source session not found",
        "Tool integration failed: no such table: tool_events",
        "Either keys array or keyPattern must be provided",
        # (office-word-mcp-server's: what the call lacks, said as an order)
        "Must provide either footnote_id or search_text",
        "You must specify a path",
        # (mcp-sqlalchemy's, desktop-commander's: what the value sent names is not there)
        "Column 'get_schema' not found in table orders. Available columns: id, customer_id, product, qty, price",
        "[NOT_FOUND] Chromium — path does not exist",
        'Table "Weekly report" does not exist',
        # (mcp-python-interpreter's: a refusal, and code that failed under a heading of its output, with a traceback)
        "Access denied: Can only read files in working directory: /srv/work",
        "Permission denied",
        "Forbidden: the key lacks the scope",
        "Execution in session 'default' (inline mode):\n\n--- Error ---\nTraceback (most recent call last):\n  File",
        "Execution in 'system' environment (subprocess mode):\n\n--- Error (status code: 1) ---\n  File \"t.py\"",
    ):
        assert reports_error(text), text
    for text in (
        "a.txt:\nhello\n---\nb.txt: Error - ENOENT",
        "status: error",
        "found: 0 errors",
        "price: 12",
        '{"status": true, "tool_result": {"sheets": 2}}',
        '{"status": "shipped", "ok": true}',
        '{"device": "lamp", "status": false}',  # a thing's state, not the call's
        '{"job": "build", "status": "failed"}',  # a job's state: nothing says the call failed
        '{"job": "build", "error": "timeout", "hint": "raise the limit"}',  # (a job's record: its error is data)
        # (... and a batch of which one record failed: the call answered for the others)
        '{"results": [{"address": "Lisbon", "matches": {"error": "none"}}, {"address": "Porto", "matches": [1]}]}',
        '{"status": "success", "message": "Language \'python\' is available"}',
        '{"/srv/notes.txt": {"result": "ok", "hash": "e45a"}, "/srv/b.txt": {"result": "error", "reason": "gone"}}',
        '{"result": "error"}',  # (a value, alone: what was computed)
        "Unknown",  # (a value, alone)
        "Status: unknown",
        "Note: 3 files changed",
        "Tests failed: 3\nTests passed: 12",
        "Sign-up: an email is required to join",  # (what a thing needs, under its label)
        "No notes found",  # (an absence, said of what was asked: no error, `found_nothing`)
        "Title: 'Lost' not found in the attic, a novel",  # (a record's field that says so, under its label)
        "Denied requests: 5",
        "Forbidden City, Beijing",
        "Must-see places: Lisbon, Porto",
        "Execution in session 'default' (inline mode):\n\n--- Output ---\n42",
        "Errors in the log:\n- disk full",
    ):
        assert not reports_error(text), text


async def test_a_result_that_reports_an_error_in_its_text_is_an_error():
    from mcprl.judges.shaping import call_stages

    async with ToolPool(shop()) as pool, pool.session() as session:
        outcome = await session.call("run_query", {"query": "2026-05"})
        fine = await session.call("list_products", {})
    assert outcome.is_error and outcome.text.startswith("Error: Database error") and not fine.is_error
    call = {"id": "c1", "function": {"name": "run_query", "arguments": '{"query": "2026-05"}'}}
    schemas = {"run_query": {"type": "object", "properties": {"query": {"type": "string"}}}}
    assert call_stages(call, schemas, {"c1": outcome.text}) == 3  # not "answered without error"


async def test_a_shared_server_is_never_sent_a_tool_that_may_write():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SHOP), "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(proc, port)
        spec = ServerSpec.parse(f"http://127.0.0.1:{port}/mcp")
        exploration, tasks, _ = await explore_and_ground(spec, calls=20)
        assert "add_to_cart" not in {c.tool for c in exploration.calls}
        assert "add_to_cart" in exploration.skipped_tools and tasks
        opted_in, _, _ = await explore_and_ground(spec, calls=20, writes=True)
        assert "add_to_cart" in {c.tool for c in opted_in.calls}
    finally:
        proc.kill()
        proc.wait(timeout=10)


MACHINE_TOOLS = '''
import os, sys
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

mcp = MCPServer("desk")
NOTES = []
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)


def acted(what: str) -> str:  # (what a tool acting on the machine would have done, in a log outside the session)
    with open(os.environ["ACTED_LOG"], "a") as log:
        log.write(what + "\\n")
    return "Done."


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_processes() -> str:
    """List running processes."""
    return "PID  COMMAND\\n4242 sleep 600\\n4243 python worker.py"


@mcp.tool(annotations=WRITES)
def kill_process(pid: int) -> str:
    """Terminate a running process by PID."""
    return acted(f"kill {{pid}}")


@mcp.tool()
def run_command(command: str) -> str:
    """Run a shell command and return what it printed."""
    return acted(f"run {{command}}")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, openWorldHint=True))
def send_feedback(text: str) -> str:
    """Send feedback to the developers."""
    return acted(f"feedback {{text}}")


@mcp.tool(annotations=WRITES)
def add_note(text: str) -> str:
    """Add a note."""
    NOTES.append(text)
    return f"Note {{len(NOTES)}} added."


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes() -> str:
    """List the notes."""
    return "\\n".join(NOTES) or "No notes."


if __name__ == "__main__":
    mcp.run()
'''


async def test_a_tool_acting_on_the_machine_is_never_called_nor_offered_though_each_session_is_fresh(tmp_path):
    """Seen on @wonderwhy-er/desktop-commander (npm): each stdio session a fresh server, its writes were explored, and
    `kill_process` was sent the PIDs `list_processes` listed ("Successfully terminated process 57"), `start_process`
    ran lines of that listing as commands, and feedback went out to the open world: a fresh server undoes none of
    it. A tool that acts on a process, a command or the open world (MCP's `openWorldHint`) is not called, is named
    with why, and is not offered to the policy; a write kept in the server's process (a note) is explored as before;
    `--explore-writes` allows them all."""
    from mcprl.scenarios.isolation import unsafe_writers

    server = tmp_path / "desk.py"
    server.write_text(MACHINE_TOOLS.format(root=str(Path(__file__).resolve().parents[2])))
    log = tmp_path / "acted.log"
    spec = ServerSpec.parse(f"{sys.executable} {server}", env=[f"ACTED_LOG={log}"])
    outside = {"kill_process", "run_command", "send_feedback"}
    exploration, _, _ = await explore_and_ground(spec, calls=40)
    assert not log.exists(), log.read_text()
    assert outside <= set(exploration.skipped_tools), exploration.skipped_tools
    assert "add_note" in {c.tool for c in exploration.calls if not c.is_error}
    async with ToolPool(spec) as pool:
        assert set(unsafe_writers(pool, ExploreConfig())) == outside  # (what a run denies the policy)
        assert unsafe_writers(pool, ExploreConfig(writes=True)) == {}


@pytest.mark.parametrize("seed", [0, 1])
async def test_a_server_whose_state_outlives_its_process_gets_one_write_and_names_it(tmp_path, seed):
    """State in a file nothing names as one (a path with no data file's suffix, not there yet): after the first write
    that answers, a fresh session's reads (the whole listing, not one under a filter the write missed; `server_info`
    never changes) show it outlived its process, so no tool that may write is called again, and the exploration says
    why and which writes landed.
    Grounding then replays no chain that writes, and the run's pool offers the policy no tool that may write."""
    notes = tmp_path / "notes"
    spec = ServerSpec.parse(f"{sys.executable} {NOTES}", env=[f"NOTES_FILE={notes}"])
    said: list[str] = []
    async with ToolPool(spec) as pool:
        with contextlib.suppress(UserError):  # too few tasks for a run is not what this checks
            await grounded(
                pool, 8, ExploreConfig(calls=60), tmp_path / "e.jsonl", tmp_path / "g.json", seed=seed,
                fallback=False, say=said.append,
            )  # fmt: skip
        exploration = Exploration.model_validate({"calls": load_jsonl(tmp_path / "e.jsonl", ExploredCall)})
        assert "add_note" not in pool.toolset.names()
        async with pool.session() as session:
            assert (await session.call("add_note", {"text": "x"})).is_error
    writes = [c for c in exploration.calls if c.tool == "add_note"]
    assert sum(not c.is_error for c in writes) == 1, exploration.summary()  # one landed before the check
    assert len(json.loads(notes.read_text())) == 1  # and no replay while grounding added another
    assert any("outside its process" in line for line in said)
    # every write that landed is named whole, so that a user whose state it was can undo it
    for c in writes:
        assert (f"  add_note {json.dumps(c.arguments)}" in said) is not c.is_error


@pytest.mark.parametrize("seed", [0, 1])
async def test_a_server_whose_first_write_changes_nothing_is_still_checked_before_writes_pile_up(tmp_path, seed):
    """State in a file beside the program, named nowhere, a user's tags in it; a write may change nothing (a tag
    added that was there). The check for state outliving the process waits for a write a read showed, one write a
    session until then: the user's file ends at most one tag from what it held, the exploration says why writes
    stopped, and names every write that landed. Seen on server-memory, whose deletes its annotations call
    destructive: exploring deleted the entities a user's graph held, one delete a session, before a write showed;
    no tool a server says destroys is called before the check, so no tag of the user's is removed."""
    shutil.copy(TAGS_SERVER, tmp_path)
    store = tmp_path / "tags.json"
    store.write_text(json.dumps(["groceries", "travel"]))
    spec = ServerSpec.parse(f"{sys.executable} {tmp_path / TAGS_SERVER.name}", env=[f"PYTHONPATH={ROOT}"])
    said: list[str] = []
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=seed, say=said.append)
    assert len(set(json.loads(store.read_text())) ^ {"groceries", "travel"}) <= 1, exploration.summary()
    assert {"groceries", "travel"} <= set(json.loads(store.read_text()))
    assert not any(c.tool == "remove_tag" for c in exploration.calls)
    assert any("outside its process" in line for line in said)
    for c in exploration.calls:
        if c.writes:
            assert (f"  {c.tool} {json.dumps(c.arguments)}" in said) is not c.is_error


@pytest.mark.parametrize("seed", [0, 1])
async def test_a_server_keeping_its_state_under_the_home_gets_a_home_of_its_own_and_the_users_is_never_written(
    tmp_path, monkeypatch, seed
):
    """State under the home folder (the notes server without NOTES_FILE: `~/.local/share/notes`), a user's note
    there: the first write is made in a session with a home of its own, where it lands; a fresh one starts empty,
    so every session from then on gets its own home, writes are explored there, and the pool's sessions (grounding's
    replays, rollouts) get one too. The user's file is never written. A store that starts empty is asked about what
    its session's writes left, the ones it needs the task's `prepare`: each such task's answer comes back in a fresh
    session once they are made, not without any one of them, and none states its answer."""
    home = tmp_path / "home"
    store = home / ".local" / "share" / "notes" / "notes.json"
    store.parent.mkdir(parents=True)
    store.write_text(json.dumps(["the user's own note"]))
    (home / ".config" / "notes").mkdir(parents=True)  # and settings of theirs, which no write changes
    (home / ".config" / "notes" / "settings").write_text("sort: oldest first")
    monkeypatch.setenv("HOME", str(home))
    said: list[str] = []
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {NOTES}")) as pool:
        tasks = await grounded(
            pool, 8, ExploreConfig(calls=40), tmp_path / "e.jsonl", tmp_path / "g.json", seed=seed,
            fallback=False, say=said.append,
        )  # fmt: skip
        assert pool.spec.private_home and "add_note" in pool.toolset.names()
        async with pool.session() as session:  # a rollout's write
            assert not (await session.call("add_note", {"text": "x"})).is_error
        # questions on what writes left (the notes listed), not tasks to make them
        asked = [t for t in tasks if t.prepare and t.read_back is None and not any(c.writes for c in t.reference)]
        assert asked
        for t in asked:
            assert all(c.writes for c in t.prepare) and not holds_answer(t.task, t.answer)
            # its answer comes back once its writes are made, and not without any one of them (the ones it needs)
            for prepare in [t.prepare, *(t.prepare[:i] + t.prepare[i + 1 :] for i in range(len(t.prepare)))]:
                async with pool.session() as session:
                    for c in [*prepare, *t.reference]:
                        outcome = await session.call(c.tool, c.arguments)
                assert gives_answer(t, outcome.data_text) is (prepare == t.prepare)
    calls = load_jsonl(tmp_path / "e.jsonl", ExploredCall)
    assert sum(c.tool == "add_note" and not c.is_error for c in calls) >= 3  # writes explored, not stopped at one
    assert json.loads(store.read_text()) == ["the user's own note"]
    assert any("home" in line and "--private-home" in line for line in said)


async def test_a_server_working_in_its_folder_is_asked_about_the_files_there_and_writes_only_copies_of_them(tmp_path):
    """A server started in a folder of tables (`--cwd`) that no command-line argument or description names: the
    files in its working directory are values in plain view, so exploring reads them. Every kept task's answer comes
    back on a fresh replay of its reference without stating it. The folder is the user's: each session runs on a copy
    of it of its own, so the tool that writes is explored there, every path the server is sent and answers with is
    the folder's own, and its files stay as they were."""
    folder = tmp_path / "tables"
    (folder / "2026").mkdir(parents=True)
    (folder / "orders.csv").write_text("customer,item,quantity\nAna Ruiz,desk lamp,2\nBen Okafor,chair,7\n")
    (folder / "2026" / "staff.csv").write_text("name,team,hours\nCarla Diaz,Sales,31\nDev Patel,Support,12\n")
    (folder / ".hidden.csv").write_text("secret,value\nkey,1\n")
    before = {p: p.is_file() and p.read_bytes() for p in folder.rglob("*")}
    spec = ServerSpec.parse(f"{sys.executable} {FOLDER}", cwd=str(folder))
    tasks, calls = await grounded_and_replayed(spec, tmp_path, calls=60)
    read = {str(c.arguments["file"]) for c in calls if not c.is_error}
    assert {str(folder / "orders.csv"), str(folder / "2026" / "staff.csv")} <= read, read
    assert not any(".hidden" in json.dumps(c.arguments) for c in calls)
    assert "read_table" in {t.reference[-1].tool for t in tasks}
    saved = [c for c in calls if c.tool == "save_table" and not c.is_error]
    assert saved and all(c.text == f"saved {c.arguments['file']}" for c in saved)  # the folder's path, not a copy's
    assert not any("mcprl-copy" in c.text + json.dumps(c.arguments) for c in calls)
    assert {p: p.is_file() and p.read_bytes() for p in folder.rglob("*")} == before


DOCUMENTS = '''
import csv, sys
from urllib.parse import unquote, urlparse
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()
from mcprl.servers import serve


def convert_to_markdown(uri: str) -> str:
    """Convert a resource described by a file: URI to markdown."""
    if urlparse(uri).scheme != "file":
        raise ValueError(f"Unsupported URI scheme: {{uri}}. Supported schemes are: file:")
    with open(unquote(urlparse(uri).path)) as f:
        head, *rows = csv.reader(f)
    lines = [head, ["---"] * len(head), *rows]
    return "\\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def build(seed: int = 0):
    server = serve.new_server("documents", "Documents.")
    serve.add_tools(server, [convert_to_markdown], writes=[])
    return server


if __name__ == "__main__":
    serve.main(build, "Documents.")
'''


async def test_a_converter_of_documents_is_sent_the_files_in_its_folder_as_uris_and_asked_of_their_tables(tmp_path):
    """A server that reads documents by URI alone (as markitdown-mcp: a path is "Unsupported URI scheme"), started in
    a folder of files no argument names: those files are sent as `file:` URIs, and the Markdown tables it answers with
    are asked about by their rows (not as "| Oslo" cells). Each kept task's answer comes back on replay, none stated."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "staff.csv").write_text("name,team,hours\nCarla Diaz,Sales,31\nDev Patel,Support,12\n")
    server = tmp_path / "documents.py"
    server.write_text(DOCUMENTS.format(root=str(Path(__file__).resolve().parents[2])))
    spec = ServerSpec.parse(f"{sys.executable} {server}", cwd=str(folder))
    tasks, calls = await grounded_and_replayed(spec, tmp_path, calls=20)
    assert any(c.arguments["uri"] == (folder / "staff.csv").as_uri() and not c.is_error for c in calls), calls
    assert {t.answer for t in tasks} & {"Carla Diaz", "Dev Patel", "Sales", "Support", 31, 12}, [t.task for t in tasks]
    assert not any("|" in str(t.answer) for t in tasks)


GAMES = '''
import sys, uuid
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()
from mcprl.servers import serve

GAMES = {{}}
PAGE = "<!DOCTYPE html>\\n<html><head><style>\\nbody {{\\n  height: 8px;\\n  border: 3px;\\n}}\\n</style></head></html>"


def create_game(color: str = "white") -> str:
    """Start a game of draughts; you play `color`."""
    game = uuid.uuid4().hex[:8]
    GAMES[game] = []
    return "\\n".join(
        [
            "Game created!",
            f"- Game ID: {{game}}",
            f"- You are: {{color}}",
            f"- Board: http://127.0.0.1:8080/game/{{game}}",
            "",
            "| Rank | a | b |",
            "|:---:|:---:|:---:|",
            "| **2** | x | o |",
            "| **1** | o | x |",
            "",
            "**Turn**: white to move",
            PAGE,
        ]
    )


def board(game_id: str) -> str:
    """The board of a game, and the moves played in it."""
    if game_id not in GAMES:
        raise ValueError(f"Game '{{game_id}}' not found. Check the game_id and retry.")
    return f"**Moves played**: {{len(GAMES[game_id])}}\\n**Turn**: {{'black' if len(GAMES[game_id]) % 2 else 'white'}}"


def build(seed: int = 0):
    server = serve.new_server("games", "Games.")
    serve.add_tools(server, [create_game, board], writes=["create_game"])
    return server


if __name__ == "__main__":
    serve.main(build, "Games.")
'''


async def test_a_game_is_read_by_the_id_its_making_said_in_markdown_beside_its_board_and_its_page(tmp_path):
    """chess-mcp-server answers `createGame` in Markdown: "- Game ID: b095ea75" in a list, the board as a table, then a
    web page. Exploring sent its other tools the board's cells ("r", "Q"), never the id, and tasks asked for the page's
    style ("What is the minimum height?" -> 100) and a link's port (8080). The labelled lines around a table are read
    too, in Markdown or not: the board is read by the game's id; no task asks of the page or a link's port; every kept
    task's answer comes back on replay."""
    server = tmp_path / "games.py"
    server.write_text(GAMES.format(root=str(Path(__file__).resolve().parents[2])))
    spec = ServerSpec.parse(f"{sys.executable} {server}")
    tasks, calls = await grounded_and_replayed(spec, tmp_path, calls=20)
    assert any(c.tool == "board" and not c.is_error for c in calls), [(c.tool, c.arguments, c.text[:60]) for c in calls]
    assert not [(t.task, t.answer) for t in tasks if t.answer in (8, 3, 8080) or "px" in str(t.answer)]


@pytest.mark.parametrize("seed", range(5))
async def test_a_value_an_error_named_that_fails_otherwise_is_followed_by_the_next_it_named(tmp_path, seed):
    """`column_total` of a table whose one numeric column is named last: a wrong column is refused with "the columns:
    name, team, hours", and the first named fails otherwise ("could not convert 'Carla Diaz'", blaming no parameter).
    A person goes on down the list at once; so does exploring, and the total is found in the calls right after the
    error, with the table the error was about. No failed call is made twice."""
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "staff.csv").write_text("name,team,hours\nCarla Diaz,Sales,31\nDev Patel,Support,12\n")
    spec = ServerSpec.parse(f"{sys.executable} {FOLDER}", cwd=str(folder), deny=["save_table"])
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=16), seed=seed, say=lambda _: None)
    calls = exploration.calls
    named = next(c for c in calls if "the columns: name, team, hours" in c.text)
    total = next(c for c in calls if c.tool == "column_total" and not c.is_error)
    assert total.arguments["column"] == "hours" and total.text == "hours total: 43"
    assert Path(folder, total.arguments["file"]) == folder / "staff.csv"  # (its path, or its path within the folder)
    assert total.session == named.session and total.index - named.index <= CORRECTIONS
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))


async def test_a_parameter_an_error_asks_for_is_given_a_value_in_plain_view_and_the_names_it_quotes_are_none(tmp_path):
    """Seen on @cyanheads/git-mcp-server (`env GIT_BASE_DIR=R git-mcp-server`): every tool's optional `path` was sent
    its default, refused with "Please specify a 'path' or use 'git_set_working_dir' first", and the quoted names were
    sent as values; 0 tasks. A parameter an error asks for is given from then on, from every source (the folder an
    `env VAR=value` on the command line names among them); no name of a tool or parameter an error quotes is sent as
    a value; no failed call is made twice; every kept task's answer comes back on replay without being stated."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "groceries.txt").write_text("shop: Corner Market\nitems: 6\n")
    (folder / "trip.txt").write_text("city: Porto\nseat: 22A\nflight: TP1345\n")
    spec = ServerSpec.parse(f"env NOTES_DIR={folder} {sys.executable} {NOTES_FOLDER}")
    tasks, calls = await grounded_and_replayed(spec, tmp_path)
    assert any(c.arguments.get("path") == str(folder) and not c.is_error for c in calls)
    sent = {json.dumps(v) for c in calls for v in c.arguments.values()}
    assert not {'"path"', '"set_notes_folder"', '"list_notes"', '"read_note"'} & sent, sent
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))
    assert "read_note" in {t.reference[-1].tool for t in tasks}, [t.task for t in tasks]


@pytest.mark.parametrize("seed", [0, 1])
async def test_a_shape_of_value_refused_twice_where_another_worked_is_sent_no_more(seed):
    """A listing of files by folder ("q1.csv: 120 bytes") offers its sizes to the folder parameter as much as the
    folders' names: once two sizes were refused ("no folder '340 bytes'") and a name worked, no size is sent as a
    folder again, whichever line gave it; no failed call is made twice."""
    from mcprl.scenarios.value_sources import shape_of

    async with ToolPool(ServerSpec.parse(f"{sys.executable} {ENTRIES}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=seed, say=lambda _: None)
    refused: Counter = Counter()
    worked: set[str] = set()
    for c in exploration.calls:
        if c.tool != "list_files":
            continue
        shape = shape_of(c.arguments["folder"])
        assert not (worked and shape not in worked and refused[shape] >= 2), (c.index, c.arguments)
        if c.is_error:
            refused[shape] += 1
        else:
            worked.add(shape)
    assert worked and refused, (worked, refused)
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in exploration.calls if c.is_error]
    assert len(failed) == len(set(failed))


async def test_exploration_stays_within_its_bounds_and_skips_a_tool_that_hangs():
    started = time.monotonic()
    exploration, tasks, _ = await explore_and_ground(shop("--hang"), calls=12, call_timeout=1.0)
    assert len(exploration.calls) <= 12 and exploration.hung_tools == ["wait_forever"]
    assert sum(c.tool == "wait_forever" for c in exploration.calls) <= 4  # once per concurrent session at most
    # (and its session ends there: a server still at a call it hung on serves no more of them)
    hung = {c.session: c.index for c in exploration.calls if c.error_kind == "timeout"}
    assert hung and not [c for c in exploration.calls if hung.get(c.session, c.index) < c.index], exploration.calls
    assert tasks and time.monotonic() - started < 60
    async with ToolPool(shop()) as pool:
        bounded = await explore(pool, ExploreConfig(calls=1000, minutes=0.05), seed=0, say=lambda _: None)
    assert bounded.seconds < 10 and len(bounded.calls) < 1000


async def test_a_search_with_optional_filters_is_explored_past_its_first_page():
    """The shipped mailbox's search has only optional parameters: exploring fills some with words
    and date windows from earlier results, so grounded tasks reach facts beyond the newest emails,
    stated in their bodies."""
    # one server for all 20 exploring sessions: the mailbox only reads, so a session's server is like a fresh one
    mailbox = ServerSpec.parse("python -m mcprl.servers.email", per_rollout=False)
    exploration, tasks, _ = await explore_and_ground(mailbox, calls=120, n=96)
    searches = [c for c in exploration.calls if c.tool == "search_emails"]
    assert len({repr(c.arguments) for c in searches}) > len(searches) / 2  # not the same listing again and again
    assert any(c.sources.get("query", "").startswith("result:") for c in searches)
    assert any(
        re.search(r"\b(confirmation code|amount due|reservation number|tracking number)\b", t.task) for t in tasks
    )
    assert not any("user@example.com" in str(c.arguments.get("query")) for c in searches)


async def test_the_generator_writes_arguments_where_only_the_schema_gave_values(tmp_path, monkeypatch):
    import json

    from mcprl.scenarios.source import grounded
    from tests.fake_llm import FakeLLM

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    weather = ServerSpec.parse(f"{sys.executable} {Path(__file__).resolve().parents[1] / 'one_tool_server.py'}")
    cities = iter(["Oslo", "Cairo", "Atlantis", "Lima"] * 4)

    def reply(body):
        assert body["response_format"]["json_schema"]["schema"]["properties"]["city"]["type"] == "string"
        return json.dumps({"city": next(cities)})

    files = tmp_path / "exploration.jsonl", tmp_path / "grounding.json"
    async with ToolPool(weather) as pool:
        # sampled from the schema, the city is a word of the description: no forecast, nothing to ground
        with pytest.raises(UserError, match="nothing it answered could be grounded"):
            await grounded(
                pool,
                4,
                ExploreConfig(calls=6, generated=0, phrase=False),
                *files,
                seed=0,
                model="openai/fake",
                fallback=False,
                say=lambda _: None,
            )
        with FakeLLM(handler=reply) as llm:
            tasks = await grounded(
                pool,
                4,
                ExploreConfig(calls=6, generated=4, phrase=False),
                *files,
                seed=0,
                model="openai/fake",
                api_base=llm.base_url,
                fallback=False,  # three tasks of the four asked for: no synthesized one to top them up
                say=lambda _: None,
            )
    assert len(llm.requests) == 4  # the bound: the two calls after it sampled
    answers = {t.reference[0].arguments["city"]: t.answer for t in tasks}
    assert answers == {"Oslo": -3, "Cairo": 31, "Lima": 19}  # "no forecast for Atlantis" grounds nothing


CODES = '''
import sys
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

mcp = MCPServer("parts")


@mcp.tool()
def find_part(code: str) -> str:
    """Look up a part by its code."""
    if code != "P-042":
        raise ToolError("unknown code: a code is the letter P, a dash and three digits")
    return "hex bolt, 0.35 EUR"


if __name__ == "__main__":
    mcp.run()
'''


async def test_the_generator_is_shown_what_the_server_said_of_its_failed_calls(tmp_path, monkeypatch):
    """An error that states a rule and no value to copy ("a code is the letter P, a dash and three digits") is
    shown to the generator with the call that got it, so one that reads it writes a call the server takes."""
    import json

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    server = tmp_path / "parts.py"
    server.write_text(CODES.format(root=str(Path(__file__).resolve().parents[2])))

    def reply(body):  # a generator that does what the server's error asks, once it is shown it
        told = "three digits" in body["messages"][-1]["content"]
        return json.dumps({"code": "P-042" if told else "bolt"})

    spec = ServerSpec.parse(f"{sys.executable} {server}")
    exploration, requests = await explored_with_generator(spec, ExploreConfig(calls=12, generated=4), tmp_path, reply)
    answered = [c for c in exploration.calls if not c.is_error]
    assert [c.arguments for c in answered] == [{"code": "P-042"}], exploration.summary()
    failed = [call_key(c.tool, c.arguments) for c in exploration.calls if c.is_error]
    assert len(failed) == len(set(failed))  # and no failed call made twice
    assert 1 < len(requests) <= 4


THINGS = '''
import sys
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)
from mcprl.servers import serve

THINGS = []


def list_things() -> str:
    """List the things."""
    return ", ".join(THINGS) or "nothing yet"


def add_thing(name: str) -> str:
    """Add a thing."""
    THINGS.append(name)
    return "added"


def shout(text: str) -> str:
    """Say a text loudly."""
    return text.upper()


def build(seed: int = 0):
    server = serve.new_server("things", "Things.")
    serve.add_tools(server, [list_things, add_thing, shout], writes=["add_thing", "shout"])
    return server


if __name__ == "__main__":
    serve.main(build, "Things.")
'''


async def test_reads_are_made_again_after_writes_that_change_them_not_after_ones_that_never_did(tmp_path):
    """A tool that may write but changed no read made again after it twice (a pure function named like a write) is
    read back after no more; one whose writes show is read back after every one, so write tasks still ground."""
    server = tmp_path / "things.py"
    server.write_text(THINGS.format(root=str(Path(__file__).resolve().parents[2])))
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {server}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
    calls = exploration.calls

    def backs(tool: str) -> list[list[ExploredCall]]:
        return [[b for b in calls if b.reads_back == c.index] for c in calls if c.tool == tool and not c.is_error]

    shouts, adds = backs("shout"), backs("add_thing")
    assert len(shouts) > QUIET_WRITES + 1, exploration.summary()  # enough of them for the bound to matter
    assert sum(map(len, shouts)) <= QUIET_WRITES * READ_BACKS
    assert len(adds) > QUIET_WRITES + 1 and all(adds[:-1]), exploration.summary()  # (the last may meet the budget)


async def test_after_a_write_a_read_that_showed_no_change_gives_its_turn_to_one_a_write_changed():
    """Adding to the shop's cart never changes its catalogue, and does change the cart's size. Once a read made again
    after a write answered otherwise (the size), each later add is read back by it, ahead of the catalogue read back to
    no change before, so adds keep grounding tasks checked by what they changed."""
    exploration, _, _ = await explore_and_ground(shop(), calls=40)
    calls = exploration.calls
    changed = min(c.index for c in calls if c.tool == "cart_size" and c.reads_back is not None and c.text != "0")
    later = [c for c in calls if c.tool == "add_to_cart" and not c.is_error and c.index > changed]
    backs = {w.index: {b.tool for b in calls if b.reads_back == w.index} for w in later}
    # (a write whose read-backs the budget cut asks nothing of this)
    cut = [w.index for w in later if w.index + READ_BACKS >= len(calls)]
    assert later and all("cart_size" in backs[i] for i in backs if i not in cut), backs


TRIPS = '''
import datetime, json, sys
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()
from mcprl.servers import serve


def list_trips() -> str:
    """List the planned trips."""
    return json.dumps([
        {{"city": "Oslo", "date": "2025-03-14", "zone": "Europe/Oslo"}},
        {{"city": "Lima", "date": "2025-07-02", "zone": "America/Lima"}},
        {{"city": "Cairo", "date": "2025-11-30", "zone": "Africa/Cairo"}},
    ])


def days_until(
    date: str | None = None, zone: str | None = None, city: str | None = None, unit: str | None = None
) -> str:
    """Days from 2025-01-01 until a date (default 2025-01-01)."""
    try:
        then = datetime.date.fromisoformat(date or "2025-01-01")
    except ValueError:
        raise ValueError(f"not a date: {{date!r}}; use YYYY-MM-DD")
    return f"{{(then - datetime.date(2025, 1, 1)).days}} days"


def build(seed: int = 0):
    server = serve.new_server("trips", "Trips.")
    serve.add_tools(server, [list_trips, days_until], writes=[])
    return server


if __name__ == "__main__":
    serve.main(build, "Trips.")
'''


async def test_a_read_given_optional_values_is_asked_with_those_that_changed_its_answer_alone(tmp_path):
    """A read sent a date beside a zone, a city and a unit that change nothing is made again without each in turn:
    the tasks asking it how many days state the date alone, and every one of them gives its answer on replay."""
    server = tmp_path / "trips.py"
    server.write_text(TRIPS.format(root=str(Path(__file__).resolve().parents[2])))
    for seed in (0, 1):
        async with ToolPool(ServerSpec.parse(f"{sys.executable} {server}")) as pool:
            exploration = await explore(pool, ExploreConfig(calls=40), seed=seed, say=lambda _: None)
            tasks, _ = await ground(pool, 12, exploration, seed=seed, say=lambda _: None)
            await come_back_fresh(pool, tasks)
        dated = [t for t in tasks if t.reference[-1].tool == "days_until" and t.reference[-1].arguments.get("date")]
        assert dated, [t.task for t in tasks]
        assert all(set(t.reference[-1].arguments) == {"date"} for t in dated), [t.task for t in dated]
        failed = [call_key(c.tool, c.arguments) for c in exploration.calls if c.is_error]
        assert len(failed) == len(set(failed))


async def test_after_a_move_every_read_of_the_board_that_gives_data_is_made_again_and_the_next_move_is_one_it_opened():
    """A game keeps one board per process, and each move opens other squares (as a chess server's listing of the
    moves holds white's, then black's). After a move, the reads of the whole state that give data (whose turn it
    is, the open squares) are made again, not a picture of the board (an image: nothing to ask about); a session's
    next move takes a square the read after its last move listed, not one a stale listing held, so moves chain."""
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {TRACK_GAME}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=20), seed=0, say=lambda _: None)
    calls = {c.index: c for c in exploration.calls}
    read_back = {c.tool for c in calls.values() if c.reads_back is not None}
    assert read_back == {"whose_turn", "open_moves"}, exploration.summary()
    # a move that answered, its square listed by a read made again after the session's move before it
    chained = [
        c
        for c in calls.values()
        if c.tool == "move" and not c.is_error and any(calls[p].reads_back is not None for p in c.parents)
    ]
    assert chained, [(c.tool, c.arguments, c.sources, c.is_error) for c in calls.values()]
    for c in chained:
        earlier = [b for b in calls.values() if b.session == c.session and b.index < c.index]
        last_move = max(b.index for b in earlier if b.tool == "move" and not b.is_error)
        assert all(p > last_move for p in c.parents), (c.arguments, c.parents, last_move)


async def test_reads_that_need_what_a_write_makes_are_called_after_it_with_what_it_gave():
    """A server's reads work on a workspace one opens first, in the same process (a code server's registered
    project). Exploring calls a session's writes last; once one answers with the id the reads take, the reads that
    have not answered get their turn in that session, sent its id: each answers, chained to the write, and none is
    called twice with one failed value."""
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {WORKSPACES}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=0, say=lambda _: None)
    calls = {c.index: c for c in exploration.calls}
    for tool in ("workspace_files", "workspace_size"):
        answered = [c for c in calls.values() if c.tool == tool and not c.is_error and c.reads_back is None]
        assert answered, exploration.summary()
        for c in answered:
            assert any(calls[p].tool == "open_workspace" and calls[p].session == c.session for p in c.parents), (
                c.arguments,
                c.sources,
            )
    failed = [call_key(c.tool, c.arguments) for c in calls.values() if c.is_error]
    assert len(failed) == len(set(failed))


@pytest.mark.parametrize("seed", range(4))
async def test_a_tool_taking_one_things_name_is_sent_a_listings_id_before_its_names_dates_and_notes(seed):
    """A listing's records hold a customer, a date, a note, a city, a status, a carrier and a reference of an id's
    form; the tool taking one order names its parameter as no field is named. Of the values the listing gave, the
    id-like ones are sent first: it answers within a few tries, whatever the seed."""
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {ORDERS}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=12, retire_after=3), seed=seed, say=lambda _: None)
    assert exploration.tools["order_detail"].answered, exploration.summary()


async def test_a_server_of_many_tools_gets_a_working_call_on_each_and_writes_that_change_nothing_are_not_read_back():
    """90 tools that compute, half of them saying they may write (explored on a shared server as `--explore-writes`
    allows), each answering only for a part its errors name: by default every tool is found a working call (the
    budget grows with the tools), no failed call is made twice, and once a few writes changed nothing read back
    after them, no write is read back again (the budget goes to tools not called yet)."""
    spec = ServerSpec.parse(f"{sys.executable} {MANY_TOOLS}", per_rollout=False)
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(writes=True), seed=0, say=lambda _: None)
    assert {c.tool for c in exploration.calls if not c.is_error} == set(exploration.tools), exploration.summary()
    assert len(exploration.calls) <= ExploreConfig().budget(len(exploration.tools))
    failed = [call_key(c.tool, c.arguments) for c in exploration.calls if c.is_error]
    assert len(failed) == len(set(failed))
    assert sum(c.reads_back is not None for c in exploration.calls) <= QUIET_SERVER * READ_BACKS


async def test_a_server_that_reads_the_users_home_to_answer_is_explored_in_it(tmp_path, monkeypatch):
    """A server whose reads need a file of the user's home (a configuration, a credential) answers nothing in a home
    of its own: it is explored in the user's, its writes (kept in its process) explored as on any fresh server."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".thingsrc").write_text("token")
    monkeypatch.setenv("HOME", str(home))
    needs_home = THINGS.replace(
        '    """List the things."""\n',
        '    """List the things."""\n'
        "    from pathlib import Path\n"
        '    if not (Path.home() / ".thingsrc").exists():\n'
        '        raise ValueError("no ~/.thingsrc: log in first")\n',
    )
    server = tmp_path / "things.py"
    server.write_text(needs_home.format(root=str(Path(__file__).resolve().parents[2])))
    said: list[str] = []
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {server}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=0, say=said.append)
    assert not exploration.private_home and any("home folder" in line for line in said)
    lists = [c for c in exploration.calls if c.tool == "list_things"]
    assert sum(c.is_error for c in lists) == 1 and len(lists) > 3  # the one call in a home of its own
    assert sum(c.tool == "add_thing" and not c.is_error for c in exploration.calls) >= 2


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


async def test_a_handle_a_write_issues_is_taken_from_it_and_no_task_states_it(tmp_path):
    """Seen on csv-mcp-server (`env -C DIR csv-editor`): 33 of 39 tools require the id of a session a load opens, a
    random one in every process. It was sent made-up ids 137 times, the loads got one call each of the writes' share,
    and the one that answered was withheld (it keeps a history under a hidden folder of the copy): 7 tasks, all on
    the server's info. Now: the tools that take the id answer with one a load of their own session issued; the load,
    which adds records of the server's own alone, is offered and grounds tasks, the write that changes the user's
    file is not; no task states an id (each asks after the load, "the previous result"), and every kept task comes
    back in a fresh session, where the load issues another; the user's folder is not written."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "stock.csv").write_text("item,qty\napple,3\npear,7\nplum,12\n")
    spec = ServerSpec.parse(f"env -C {folder} {sys.executable} {TABLES}")
    tasks, calls = await grounded_and_replayed(spec, tmp_path, calls=60)
    by_index = {c.index: c for c in calls}
    taking = [c for c in calls if "session_id" in c.arguments and c.tool != "load_table"]
    assert {c.tool for c in taking if not c.is_error} >= {"table_columns", "table_rows"}
    for c in taking:
        if not c.is_error:  # the id came from a load of the same session
            parents = [by_index[p] for p in c.parents]
            assert any(p.session == c.session and c.arguments["session_id"] in p.text for p in parents), c
    assert any(t.reference[0].tool == "load_table" and len(t.reference) > 1 for t in tasks), [t.task for t in tasks]
    for t in tasks:
        assert not UUID.search(t.task), t.task
        assert "drop_rows" not in t.tools
        for i, c in enumerate(t.reference):  # the id it takes is the one a load before it in the chain issues
            assert "session_id" not in c.arguments or "load_table" in [r.tool for r in t.reference[:i]], t.task
    assert sorted(p.name for p in folder.iterdir()) == ["stock.csv"]
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))


@pytest.mark.parametrize("server", [WORKSPACES, TABLES])
async def test_a_write_a_task_needs_is_said_by_it_or_made_before_its_episode(server, tmp_path):
    """Seen on @kazuph/mcp-taskmanager: "Add tasks to request req-1 ... What is the id?" kept the planning that made
    req-1 in its chain, a step the policy must make, which the task never mentions. Every write a task's reference
    makes before its last call is said by the task (each value it was sent is in it); one it does not say is made
    by the environment before the episode (`prepare`), and the task comes back in a fresh session either way."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "stock.csv").write_text("item,qty\napple,3\npear,7\nplum,12\n")
    spec = ServerSpec.parse(f"env -C {folder} {sys.executable} {server}")
    tasks, _ = await grounded_and_replayed(spec, tmp_path, calls=60)
    assert tasks
    for t in tasks:
        for c in t.reference[:-1]:
            assert not c.writes or all(holds_answer(t.task, v) for v in c.arguments.values()), (t.task, c)


async def test_a_database_a_url_names_is_explored_on_its_copies_and_reads_are_made_before_the_writes_it_keeps(
    tmp_path,
):
    """Seen on mcp-alchemy (`DB_URL=sqlite:////data/shop.db`, tools with no hints): the database a URL named was not
    copied, so no tool that may write was called, and every tool may: 0 calls. On copies, its queries then spent the
    writes' share, the rows a query listed were taken for handles, and sessions made no call, for ever. Now: the file
    a URL names is copied for each session and never written; a tool that answered on the copies without changing
    them spends no share of the writes; no handle is made of the rows a query listed; a read that answered after a
    write that changed the copy is made again in a later session before its writes, linked to no call of the first
    session (the values it took from results there are values that worked); no tool's answers say nothing
    more than `retire_after` times in a row; a count after the rows is no field of a row (each answer is a value of
    the database or a count), and a row is not asked for the field it is named by as a field of itself; every kept
    task comes back in a fresh session."""
    db = tmp_path / "data" / "shop.db"
    db.parent.mkdir()
    products = [("steel bolt", 0.25, 120), ("oak plank", 12.0, 15), ("copper wire", 3.5, 40)]
    orders = [("Ada", "oak plank", 2), ("Ben", "steel bolt", 50)]
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE products (name TEXT, price REAL, stock INTEGER)")
        c.executemany("INSERT INTO products VALUES (?, ?, ?)", products)
        c.execute("CREATE TABLE orders (customer TEXT, product TEXT, quantity INTEGER)")
        c.executemany("INSERT INTO orders VALUES (?, ?, ?)", orders)
    before = db.read_bytes()
    spec = ServerSpec.parse(f"{sys.executable} {SQL_URL}", env=[f"DB_URL=sqlite:///{db}"])
    assert spec.private_copy
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
        tasks, _ = await ground(pool, 8, exploration, seed=0, say=lambda _: None)
        await come_back_fresh(pool, tasks)
    calls = exploration.calls
    assert exploration.handles == [] and exploration.withheld == ["add_product"]
    assert {c.tool for c in calls if not c.is_error} == {"table_names", "find_tables", "run_query", "add_product"}
    assert len(calls) == 60 and len(tasks) >= 6, (len(calls), [t.task for t in tasks])
    values = {str(v) for row in products + orders for v in row} | {"products", "orders", "name", "price", "stock"}
    values |= {"customer", "product", "quantity", "12"}
    # (no record asked for a field by the thing that field names: "who is the customer of the customer whose ...")
    assert not any(re.search(r"\bthe (\w+) of the \1\b", t.task) for t in tasks), [t.task for t in tasks]
    for t in tasks:  # (a list, or names a comma joins)
        parts = [str(v) for v in t.answer] if isinstance(t.answer, list) else str(t.answer).split(", ")
        assert all(p in values or p.isdigit() for p in parts), (t.task, t.answer)
    # the reads after the write the copy keeps, made again before it in a later session (the last session aside),
    # once: one that fails there needs the write, and is not made again
    after_write, clean, failed_clean = {}, set(), Counter()
    for c in calls:
        wrote = any(w.tool == "add_product" and w.session == c.session and w.index < c.index for w in calls)
        if c.tool != "add_product" and c.reads_back is None:
            key = call_key(c.tool, c.arguments)
            if wrote and not c.is_error:
                after_write.setdefault(key, c)
            elif not wrote:
                clean.add(key)
                failed_clean[key] += c.is_error and c.repeats is not None
    last = calls[-1].session
    assert after_write and all(k in clean for k, c in after_write.items() if c.session < last - 1), after_write
    # ... each a call of its own session: none linked to the calls of the session it was first made in
    by_index = {c.index: c for c in calls}
    assert all(by_index[p].session == c.session for c in calls for p in c.parents)
    assert all(n <= 1 for n in failed_clean.values()), failed_clean
    silent: Counter = Counter()
    for c in calls:
        silent[c.tool] = silent[c.tool] + 1 if not c.is_error and not c.text.strip() else 0
        assert silent[c.tool] <= ExploreConfig().retire_after
    assert db.read_bytes() == before and sorted(p.name for p in db.parent.iterdir()) == ["shop.db"]


async def test_a_store_the_user_named_that_is_not_there_yet_is_the_servers_own_and_its_writes_are_explored(tmp_path):
    """Seen on @itseasy21/mcp-knowledge-graph (`--memory-path graph.jsonl`, no such file yet): each session ran on a
    copy, but the first write made the file there, which counted as changing the user's files, so every write was
    withheld and the reads of an empty store grounded nothing. A data file the user named that was not there is the
    server's own store: its writes are explored and offered, what the reads say after them grounds tasks (each comes
    back in a fresh session, its writes made before the episode), and the user's path is still not there."""
    notes = tmp_path / "store" / "notes.json"
    notes.parent.mkdir()
    spec = ServerSpec.parse(f"{sys.executable} {NOTES}", env=[f"NOTES_FILE={notes}"])
    assert spec.private_copy
    tasks, calls = await grounded_and_replayed(spec, tmp_path, calls=40)
    assert any(c.tool == "add_note" and not c.is_error for c in calls)
    assert any(c.writes for t in tasks for c in [*t.prepare, *t.reference]), [t.task for t in tasks]
    assert not notes.exists() and list(notes.parent.iterdir()) == []


PASTED = '''
import csv, io, json, sys, uuid
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()
from mcprl.servers import serve

SESSIONS = {{}}


def load_csv_from_content(content: str, session_id: str | None = None) -> dict:
    """Load CSV data from string content into a session."""
    sid = session_id or str(uuid.uuid4())
    SESSIONS[sid] = list(csv.DictReader(io.StringIO(content)))
    columns = list(SESSIONS[sid][0]) if SESSIONS[sid] else []
    return {{"success": True, "session_id": sid, "rows": len(SESSIONS[sid]), "columns": columns}}


def column_mean(session_id: str, column: str) -> dict:
    """The mean of a numeric column of a loaded table."""
    if session_id not in SESSIONS:
        raise ValueError("Session not found")
    try:
        values = [float(r[column]) for r in SESSIONS[session_id]]
    except (KeyError, ValueError, TypeError):
        raise ValueError(f"No numeric column {{column!r}}")
    if not values:
        raise ValueError("No rows")
    return {{"column": column, "mean": sum(values) / len(values)}}


def build(seed: int = 0):
    server = serve.new_server("pasted", "CSV tables pasted into sessions.")
    serve.add_tools(server, [load_csv_from_content, column_mean], writes=["load_csv_from_content"])
    return server


if __name__ == "__main__":
    serve.main(build, "CSV tables pasted into sessions.")
'''


OPENED = '''
import os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()
from mcprl.servers import serve

WORK = Path(os.environ["WORK_DIR"]).resolve()


def open_folder(folder: str) -> dict:
    """Open a working folder (its index refreshed): the label of its workspace."""
    if Path(folder).resolve() != WORK:
        raise ValueError(f"No such working folder: {{folder}}")
    (WORK / ".index").write_text(str(sorted(p.name for p in WORK.iterdir())))
    return {{"label": f"ws-{{WORK.name}}", "opened": True}}


def workspace_status(label: str) -> dict:
    """The status of a workspace, by its label."""
    if label != f"ws-{{WORK.name}}":
        raise ValueError(f"No workspace labelled {{label}}")
    names = sorted(p.name for p in WORK.iterdir() if not p.name.startswith("."))
    return {{"files": len(names), "first": names[0], "last": names[-1]}}


def build(seed: int = 0):
    server = serve.new_server("opened", "Working folders.")
    serve.add_tools(server, [open_folder, workspace_status], writes=["open_folder"])
    return server


if __name__ == "__main__":
    serve.main(build, "Working folders.")
'''


async def test_a_read_made_again_in_a_later_session_is_linked_to_no_call_of_the_first(tmp_path):
    """Seen on @cyanheads/git-mcp-server: `git_status` took its `path` from what `git_set_working_dir` said back, a
    write withheld for changing the copy (its index refreshed), and was made again at a later session's start, still
    linked to that write of the first session: every task on it was a chain through the withheld write, and dropped
    (0 of 5 status calls grounded one). A read made again in another session is linked only to calls of its own; the
    value it took from a result there is one that worked (a workspace's label, the same in every session): the status
    grounds tasks, each answered on replay. (A value the generator wrote that a result of its session gave is linked
    to that call, as a drawn one is: here the label, which only opening the folder says.)"""
    work = tmp_path / "work"
    work.mkdir()
    for name in ["alpha.txt", "beta.txt", "gamma.txt"]:
        (work / name).write_text(name)
    (work / ".index").write_text("[]")
    server = tmp_path / "opened.py"
    server.write_text(OPENED.format(root=str(Path(__file__).resolve().parents[2])))
    spec = ServerSpec.parse(f"{sys.executable} {server}", env=[f"WORK_DIR={work}"])
    assert spec.private_copy
    tasks, calls = await grounded_and_replayed(spec, tmp_path, calls=30)
    by_index = {c.index: c for c in calls}
    assert all(by_index[p].session == c.session for c in calls for p in c.parents)
    assert any(c.repeats is not None and c.tool == "workspace_status" for c in calls)
    assert any(t.reference[-1].tool == "workspace_status" for t in tasks), [t.task for t in tasks]
    assert not any(c.tool == "open_folder" for t in tasks for c in [*t.prepare, *t.reference])


async def test_a_value_a_result_named_for_a_parameter_is_sent_before_the_generator_writes_one(tmp_path, monkeypatch):
    """Seen in CI on the test above, at another folder's path: the status had failed on made-up labels, so the
    generator was asked for its next call, right after opening the folder said the label ("ws-work"); it wrote
    another made-up one, the status was retired after twelve errors and nothing was grounded. A value a result of the
    session gave in a field named as the parameter, not sent yet, is sent first."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    work = tmp_path / "work"
    work.mkdir()
    for name in ["alpha.txt", "beta.txt"]:
        (work / name).write_text(name)
    server = tmp_path / "opened.py"
    server.write_text(OPENED.format(root=str(Path(__file__).resolve().parents[2])))
    made_up = iter(["Garden plan", "Weekly report", "Trip to Lisbon", "Project Apollo"] * 20)

    def reply(body):  # a generator that makes labels up, whatever it is shown
        return json.dumps({"label": next(made_up)})

    spec = ServerSpec.parse(f"{sys.executable} {server}", env=[f"WORK_DIR={work}"])
    exploration, requests = await explored_with_generator(spec, ExploreConfig(calls=30, generated=30), tmp_path, reply)
    calls = exploration.calls
    opened = [c for c in calls if c.tool == "open_folder" and not c.is_error]
    assert opened and requests, [(c.tool, c.arguments) for c in calls]
    sent = [c.index for c in calls if c.tool == "workspace_status" and c.arguments == {"label": "ws-work"}]
    assert sent, [(c.tool, c.arguments) for c in calls]
    for o in opened:  # the status's next call in the session the folder was opened in sends its label, if none had
        after = [c for c in calls if c.session == o.session and c.index > o.index and c.tool == "workspace_status"]
        assert not after or after[0].index in sent or sent[0] < o.index, [(c.tool, c.arguments) for c in calls]


async def test_a_tool_that_takes_a_kind_of_document_is_given_the_text_of_a_file_of_that_kind_in_plain_view(tmp_path):
    """Seen on csv-mcp-server (`env -C DIR csv-editor`, a CSV file in DIR): `load_csv_from_content` was sent a probe
    sentence as its `content` in every session, so every statistics tool failed ("No numeric columns found"), and
    its tasks said "with session id 100", a made-up value of an optional handle, kept for every session's load. The
    text of a file in plain view of the kind the tool names is what it is given: the statistics answer, their tasks'
    answers are the file's (checked in a fresh session), and no task's load states a session id."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "stock.csv").write_text("item,qty\napple,3\npear,7\nplum,12\n")
    (folder / "notes.txt").write_text("Call the supplier on Monday.\n")
    server = tmp_path / "pasted.py"
    server.write_text(PASTED.format(root=str(Path(__file__).resolve().parents[2])))
    spec = ServerSpec.parse(f"env -C {folder} {sys.executable} {server}")
    tasks, calls = await grounded_and_replayed(spec, tmp_path, calls=40)
    assert any(c.tool == "column_mean" and not c.is_error for c in calls), [(c.tool, c.arguments) for c in calls]
    assert "Call the supplier" not in json.dumps([c.arguments for c in calls])  # (no CSV: no text of it)
    means = [t for t in tasks if t.reference[-1].tool == "column_mean"]
    assert means and all(t.answer == 22 / 3 for t in means), [(t.task, t.answer) for t in means]
    for t in tasks:
        assert not any("session_id" in c.arguments for c in t.reference if c.tool == "load_csv_from_content"), t.task
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))


async def test_a_tool_an_error_says_to_call_first_is_called_first():
    """memory-bank-mcp: every read answered "Memory Bank not found. Use initialize_memory_bank to create one." and
    was retired with the initialize untried in its sessions (3 tasks over 2 of 5 reads). An error that names another
    tool has it called next in the session, then the tool again: the tools the open notebook gates answer, or fail
    for their values alone, and no failed call is made twice."""
    spec = ServerSpec.parse(f"{sys.executable} {Path(__file__).with_name('notebook_server.py')}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
    answered = {c.tool for c in exploration.calls if not c.is_error}
    assert {"open_notebook", "find_notes"} <= answered, exploration.summary()
    assert (
        any(c.tool == "read_note" and "No note titled" in c.text for c in exploration.calls) or "read_note" in answered
    )
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in exploration.calls if c.is_error]
    assert len(failed) == len(set(failed))


async def test_a_tasks_id_a_plan_listed_is_sent_to_the_tools_that_take_one(tmp_path):
    """Seen on @kazuph/mcp-taskmanager (its tasks in a file its environment names): the planning answers each task's
    id as `"id"` in its `"tasks"`; the five tools that take a `taskId` were held back waiting for a call that issues
    one, and four never answered. Here three tools take one: marking a task done answers, sent the id of a task a plan
    of the same session listed; no failed call is made twice; the user's file is never written."""
    plans = tmp_path / "plans.json"
    spec = ServerSpec.parse(f"{sys.executable} {PLANS}", env=[f"PLANS_FILE={plans}"])
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
    calls = exploration.calls
    by_index = {c.index: c for c in calls}
    done = [c for c in calls if c.tool == "mark_task_done" and not c.is_error]
    assert done, [(c.tool, c.arguments, c.text[:60]) for c in calls]
    for c in done:
        assert any(by_index[p].session == c.session and c.arguments["taskId"] in by_index[p].text for p in c.parents)
    assert exploration.tools["mark_task_done"].errors  # (by what they say, not their JSON's opening)
    assert all("{" not in e for r in exploration.tools.values() for e in r.errors), exploration.tools
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))
    assert not plans.exists()


async def test_a_write_a_session_begins_with_is_made_after_the_write_that_issued_what_it_takes(tmp_path):
    """Seen on @kazuph/mcp-taskmanager: its plan answers the request's id beside a Markdown table of the tasks, and
    adding tasks answers the id it was sent beside the table again. The table was taken for the whole result (the id
    beside it not passed on), so a later read that said the id back was taken to issue it, and adding tasks, made
    first in a fresh session to fill it, failed "Request not found" session after session (12 of 25 calls). What a
    write takes is issued first, by the first call that gave it, not one that said it back; so each session begins
    with writes that answer."""
    plans = tmp_path / "plans.json"
    spec = ServerSpec.parse(f"{sys.executable} {PLANS}", env=[f"PLANS_FILE={plans}"])
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=120), seed=0, say=lambda _: None)
    firsts: dict[int, ExploredCall] = {}
    for c in exploration.calls:
        firsts.setdefault(c.session, c)
    failed_first = [c.session for c in firsts.values() if c.writes and c.is_error and c.repeats is None]
    assert len(failed_first) <= 1, failed_first  # (before: 6 sessions of 18)
    added = [c for c in exploration.calls if c.tool == "add_tasks" and c.reads_back is None]
    assert sum(c.is_error for c in added) <= len(added) // 4, [(c.session, c.is_error) for c in added]


async def test_notes_are_read_by_their_paths_within_the_folder_an_error_said_relative_paths_are_taken_in(tmp_path):
    """Seen on mcp-obsidian (`mcp-obsidian VAULT`): `read_notes` takes paths within the vault; it was sent the vault's
    own paths (each joined to the vault again: "Parent directory does not exist") and probes, and never answered,
    though "README.md" was answered "ENOENT: no such file or directory, open '<vault>/README.md'": where a relative
    path is looked for. The files under that folder are then sent by their paths within it, and the tool answers."""
    vault = tmp_path / "vault"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Reading list.md").write_text("# Reading list\n- Dune\n- Emma\n")
    (vault / "Projects" / "Garden.md").write_text("# Garden plan\nPlant tomatoes in May.\n")
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {VAULT} {vault}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=30), seed=0, say=lambda _: None)
    calls = exploration.calls
    read = [c for c in calls if not c.is_error]
    assert read, [(c.arguments, c.text[:80]) for c in calls]
    assert all(not p.startswith("/") for c in read for p in c.arguments["paths"] if p.endswith(".md")), read
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))


async def test_a_column_is_asked_of_by_the_names_the_file_in_plain_view_gives_its_columns(tmp_path):
    """Seen on mcp-pandas (`mcp-pandas --data-path sales.csv`): `average(column)` takes a column's name, no tool lists
    them and its errors name none; it was sent the file's path, its description's words and probes, and never
    answered. The names of the fields of the records a file in plain view holds (the CSV's header) are what a
    parameter named or described as a column's takes: the tool answers, and tasks ask the average of a column, each
    answer the mean of that column in the file."""
    table = tmp_path / "sales.csv"
    table.write_text("region,units,price\nNorth,12,3.5\nSouth,4,12.0\nEast,20,3.5\n")
    means = {"units": 12.0, "price": 6.333333333333333}
    exploration, tasks, _ = await explore_and_ground(
        ServerSpec.parse(f"{sys.executable} {FRAME} {table}"), calls=20, n=4
    )
    calls = exploration.calls
    answered = [c for c in calls if not c.is_error]
    assert answered and {c.arguments["column"] for c in answered} <= set(means), [(c.arguments, c.text) for c in calls]
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))
    assert tasks
    for task in tasks:
        (call,) = task.reference
        assert float(task.answer) == pytest.approx(means[call.arguments["column"]], rel=1e-3), task.task


def code_folder(tmp_path: Path) -> Path:
    """A folder of Python code a code server is started in: two files, one in a package."""
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "main.py").write_text("def main():\n    print('hello')\n")
    (code / "pkg" / "shop.py").write_text("def price():\n    return 3\n\n\ndef tax():\n    return 1\n")
    return code


async def test_the_tools_that_take_a_registered_projects_name_answer_once_a_project_is_registered(tmp_path):
    """Seen on mcp-server-tree-sitter (started in a code folder): fifteen tools take a project's name, which only
    `register_project_tool` makes (by the folder's path); they failed ("Project 'x' not found") before any project was
    registered, and after it they were not called again: the turn a write that gives values opens had been taken, each
    session, by `configure`, and the path had been refused by them before it named a project. Once a write makes a
    value the waiting tools take, they get a turn, sent it; the tools answer with the folder's files; a failed call is
    never made twice."""
    spec = ServerSpec.parse(f"{sys.executable} {PROJECTS}", cwd=str(code_folder(tmp_path)))
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
    calls = exploration.calls
    answered = {c.tool for c in calls if not c.is_error}
    assert {"list_files", "count_functions"} <= answered, [(c.tool, c.arguments, c.text[:60]) for c in calls]
    failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in calls if c.is_error]
    assert len(failed) == len(set(failed))


@pytest.mark.parametrize("seed", range(2))
async def test_once_tools_await_a_handle_each_session_makes_the_write_named_for_it_before_them(tmp_path, seed):
    """Seen on mcp-server-tree-sitter (26 tools, most taking a registered project's name): `register_project_tool`
    failed once (sent a file's path) and was drawn in none of the next five sessions, among a dozen listings that
    answered, while the turns `configure` opened each session sent fifteen tools names no project had: "Project 'x'
    not found", 95 errors of 150 calls, 3 tasks. Once AWAITING tools or more failed on a project, each session makes
    the write named for it before any tool taking one, and the tools that take a project answer."""
    spec = ServerSpec.parse(f"{sys.executable} {PROJECTS} --wide", cwd=str(code_folder(tmp_path)))
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=seed, say=lambda _: None)
        takes = {t["name"] for t in pool.toolset.mcp_tools if "project" in t["inputSchema"].get("required", [])}
    calls = exploration.calls
    trace = [(c.session, c.tool, c.arguments, c.is_error) for c in calls]
    failed: list[str] = []
    awaited_in = None  # the session in which AWAITING tools had failed on the project
    for c in calls:
        if c.tool in takes and "Project '" in c.text and c.tool not in failed:
            failed.append(c.tool)
            if len(failed) == AWAITING:
                awaited_in = c.session
    assert awaited_in is not None, trace
    for c in calls:
        if c.session > awaited_in and c.tool in takes:
            made = [b for b in calls if b.session == c.session and b.index < c.index and b.tool == "register_project"]
            assert made, (c.index, trace)
    assert {c.tool for c in calls if c.tool in takes and not c.is_error}, trace


def keyed_store(tmp_path: Path, named: bool) -> tuple[str, Path]:
    """The command of the keyed store server (tests/data/keyed_store_server.py) on a store of two notes of a project
    folder, under the id its path gives (and beside it that path, where `named`), and the store."""
    project = tmp_path / "proj"
    project.mkdir()
    store = tmp_path / "store.json"
    notes = [{"title": t, "body": b} for t, b in [("Garden plan", "Plant tomatoes in May"), ("Trip", "Lisbon")]]
    key = hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:16]
    store.write_text(json.dumps({key: {"notes": notes} | ({"folder": str(project.resolve())} if named else {})}))
    return f"{sys.executable} {KEYED_STORE} {store} {project}", store


async def test_a_store_keyed_by_its_folders_path_that_a_copy_hides_is_named_with_the_flag_that_reads_it(tmp_path):
    """Seen on kanban-mcp (`KANBAN_SQLITE_PATH=board.db KANBAN_PROJECT_DIR=proj`): its board keys each project by an
    id its folder's path gives; run on copies of the board and the folder, the folder's path is another, every read
    found nothing, and the run ended with no task and no word of why. Where nearly every read on copies found
    nothing, the run says so and names --no-private-copy; with it, the user's notes are read and grounded, and the
    store is left as it was."""
    command, store = keyed_store(tmp_path, named=False)
    held = store.read_text()
    said: list[str] = []
    async with ToolPool(ServerSpec.parse(command)) as pool:
        assert pool.spec.private_copy
        with contextlib.suppress(UserError):
            await grounded(
                pool, 8, ExploreConfig(calls=20), tmp_path / "e.jsonl", tmp_path / "g.json", seed=0,
                fallback=False, say=said.append,
            )  # fmt: skip
    assert any("--no-private-copy" in line for line in said), said
    async with ToolPool(ServerSpec.parse(command, private_copy=False)) as pool:
        tasks = await grounded(
            pool, 4, ExploreConfig(calls=20), tmp_path / "e2.jsonl", tmp_path / "g2.json", seed=0,
            fallback=False, min_grounded=1, say=lambda _: None,
        )  # fmt: skip
    assert tasks and store.read_text() == held


async def test_a_store_that_names_its_own_folder_is_read_where_it_is_not_on_copies(tmp_path):
    """kanban-mcp's board holds each project's folder path beside the id it gives: a store that names where it lies
    is another store once copied elsewhere, so by default sessions are not given copies of it. The run says why, its
    reads find the user's notes, and the store is left as it was."""
    command, store = keyed_store(tmp_path, named=True)
    held = store.read_text()
    said: list[str] = []
    async with ToolPool(ServerSpec.parse(command)) as pool:
        assert not pool.spec.private_copy
        tasks = await grounded(
            pool, 4, ExploreConfig(calls=20), tmp_path / "e.jsonl", tmp_path / "g.json", seed=0,
            fallback=False, min_grounded=1, say=said.append,
        )  # fmt: skip
    assert any("store.json there names where it lies" in line for line in said), said
    assert tasks and store.read_text() == held
    assert {t.answer for t in tasks} & {"Plant tomatoes in May", "Lisbon", "Garden plan", "Trip"}, tasks


async def test_a_write_names_no_path_outside_its_sessions_own_folders(tmp_path, monkeypatch):
    """memory-bank-mcp's `initialize_memory_bank` was sent the path probe "/" and made /memory-bank, and paths in
    folders of sessions since ended that their results named, and made those again: no fresh session undoes that. A
    write is sent no path outside its session's own folders (here each session's folder is made in tmp_path); the
    bank is still made, and made again as it was where a later session's write is told to make it first."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {BANK}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
    trace = [(c.session, c.tool, c.arguments, c.text[:60]) for c in exploration.calls]
    sent = [v for c in exploration.calls if c.writes for v in c.arguments.values() if os.path.isabs(str(v))]
    assert all(Path(v).is_relative_to(tmp_path) for v in sent), trace
    assert not list(tmp_path.glob("mcprl-server-*")), ("a write made a folder of a session that had ended", trace)
    made = [c for c in exploration.calls if c.tool == "initialize_bank" and not c.is_error]
    assert len({c.session for c in made}) >= 2 and len({json.dumps(c.arguments) for c in made}) < len(made), trace


async def test_a_session_opened_by_a_write_that_issues_a_handle_still_makes_its_reads():
    """mcp-mathematics: `create_session` issues the id two tools take, so each fresh session began with it, and the
    next write drawn (`clear_history`, which takes nothing and so came before the reads that take arguments) ended
    the session there, the check for state that outlives the process not yet made (no read showed a write): 56 of
    120 calls were `create_session` alone in a session, `calculate_expression` was called twice. A session's writes
    after its first wait for that check; its reads do not."""
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {CALC_SESSIONS}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
    sessions: dict[int, list[str]] = {}
    for c in exploration.calls:
        sessions.setdefault(c.session, []).append(c.tool)
    alone = [number for number, tools in sessions.items() if tools == ["create_session"]]
    assert len(alone) <= 1, sessions
    for tool in ("calculate", "is_prime", "session_calculate"):
        assert exploration.tools[tool].answered >= 3, exploration.summary()
    assert exploration.tools["create_session"].calls <= 20, exploration.summary()
    failed = [call_key(c.tool, c.arguments) for c in exploration.calls if c.is_error and c.repeats is None]
    assert len(failed) == len(set(failed))


def _db_files(tmp_path: Path) -> ServerSpec:
    """The database files server (`DB_FILES`) run in a folder of one database, `shop.db`, of two products."""
    folder = tmp_path / "data"
    folder.mkdir()
    with sqlite3.connect(folder / "shop.db") as c:
        c.execute("CREATE TABLE products (name TEXT, price REAL, stock INTEGER)")
        c.executemany("INSERT INTO products VALUES (?, ?, ?)", [("steel bolt", 0.25, 120), ("oak plank", 12.0, 15)])
    return ServerSpec.parse(f"{sys.executable} {DB_FILES}", cwd=str(folder))


async def test_database_files_a_listing_names_are_sent_to_the_tools_that_take_their_path(tmp_path):
    """sqlite-mcp-server: every tool but the listing of database files takes `db_path`, which only that listing
    gives (a name in the folder the server runs in). Made-up paths failed on three tools, so the parameter was taken
    for a handle some write issues; the one write takes it too, so nothing was left to issue one, the tools waited for
    ever, and the search got 137 of 150 calls, each sent what the last one said back where it found nothing ("No
    matches found for 'No matches found for ...'", "found''''"): 1 task. Tools wait for a handle only while a write
    that takes none is left to call; a parameter a value worked for that no call issued is no handle; a result that
    found nothing gives no values to send on, and a word of a text ends in a letter."""
    async with ToolPool(_db_files(tmp_path)) as pool:
        # (a seed whose first made-up paths failed on three tools, as they did on sqlite-mcp-server: before, the tools
        # that take the path were sent the values of rows a query listed, and `describe_table` never answered)
        exploration = await explore(pool, ExploreConfig(calls=60), seed=15, say=lambda _: None)
    for tool in ("list_tables", "describe_table", "get_schema_summary", "execute_query"):
        assert exploration.tools[tool].answered >= 1, exploration.summary()
    assert exploration.tools["search_databases"].calls <= len(exploration.calls) // 3, exploration.summary()
    sent = [str(v) for c in exploration.calls for v in c.arguments.values()]
    assert not any("No matches" in v or re.fullmatch(r"[A-Za-z]+'+", v) for v in sent), sent
    failed = [call_key(c.tool, c.arguments) for c in exploration.calls if c.is_error and c.repeats is None]
    assert len(failed) == len(set(failed))


@pytest.mark.parametrize("seed", [0, 2, 5, 10])
async def test_a_path_a_tool_refused_is_not_sent_to_it_again(tmp_path, seed):
    """sqlite-mcp-server: a path a creation took ("1", or "table_name") was sent to the reads that had refused it
    ("Database file not found at 1", each time with another query) as one that had worked; and `execute_query` was
    sent "." again and again: its error, "Error executing query: Could not connect to database at .", names the
    tool's own thing, which was taken for its `query`, and a path one character long was not taken as named; the
    count 1 a result gave was not the path "1" refused (seed 0); a read that answered after a write made its path,
    made again in a later session to see whether it needs the write, was so even where it had failed without it
    (seed 2). A path a tool refused, naming it, is not sent to that tool again (seeds that sent one again before)."""
    async with ToolPool(_db_files(tmp_path)) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=seed, say=lambda _: None)
    refused: set[tuple[str, str]] = set()
    for c in exploration.calls:
        if (path := c.arguments.get("db_path")) is None:
            continue
        assert (c.tool, path) not in refused, (c.index, c.tool, path)
        if c.is_error and re.search(rf"\bat {re.escape(str(path))}(?!\w)", c.text):
            refused.add((c.tool, path))
    assert refused, exploration.summary()


async def test_a_line_that_names_algorithms_gives_each_to_the_tools_that_take_one_and_a_digest_is_asked_for():
    """mcp-hashlib: `hash_info` names its algorithms in one line, "blake2b, md5, sha1, ...". `hash_properties` and
    `hash_new` were sent digests and probes ("unsupported hash type test") and never answered; and no task asked for
    a digest, 64 hexadecimal digits being taken for encoded bytes (only `hash_md5`'s 32 were asked for). The names a
    line lists by commas are values to send; a digest that is a call's whole result is what it is asked for, and
    right: the digest of the text the task gives."""
    from mcprl.scenarios.candidates import candidates

    async with ToolPool(ServerSpec.parse(f"{sys.executable} {DIGESTS}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=0, say=lambda _: None)
    for tool in ("hash_properties", "hash_new"):
        assert exploration.tools[tool].answered >= 1, exploration.summary()
    failed = [call_key(c.tool, c.arguments) for c in exploration.calls if c.is_error and c.repeats is None]
    assert len(failed) == len(set(failed))
    asked = [t for t in candidates(exploration, {}, seed=0) if [c.tool for c in t.reference] == ["hash_sha256"]]
    assert asked
    for t in asked:
        data = t.reference[0].arguments["data"]
        assert t.answer == hashlib.sha256(data.encode()).hexdigest() and data in t.task, (t.task, t.answer)


async def test_a_geometry_a_standard_writes_and_a_call_a_catalogue_shows_in_code_reach_every_tool_that_can_answer():
    """mcp-geo (PyPI): every refusal is a result MCP calls a success (`{"error": ..., "hint": ...}`), taken for an
    answer: 131 of 132 calls "answered", and its tasks asked for the hint ("What is the hint of the centroid for
    example?"). Its geometries are GeoJSON texts, of which nothing in view gave one; its reprojection takes systems
    by code, which only its catalogue's example calls show (`transform_crs(..., from_crs='EPSG:4326', ...)`); its
    two-geometry tools were sent "float", which Python's words for a value of the wrong kind quoted. Each tool that
    can answer answers; the lookup of places, whose every record failed, never; no failed call is made again."""
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {GEOMETRY}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=0, say=lambda _: None)
    for tool in ("area", "distance", "transform_crs", "list_all_tools"):
        assert exploration.tools[tool].answered >= 1, exploration.summary()
    assert exploration.tools["batch_geocode"].answered == 0, exploration.summary()
    assert all(c.is_error for c in exploration.calls if '"error"' in c.text), exploration.summary()
    assert not any(v == "float" for c in exploration.calls for v in c.arguments.values())
    failed = [call_key(c.tool, c.arguments) for c in exploration.calls if c.is_error and c.repeats is None]
    assert len(failed) == len(set(failed))


async def test_a_tool_that_refuses_alike_whatever_it_is_sent_gets_its_least_call_and_the_tools_after_it_answer():
    """numpy-mcp (PyPI): a matrix is made from a shape and a flat list of values whose number is the shape's product,
    which lists drawn at random ([12, 11, 17] with [9.5]) never met: every call of it said "Shape does not match number
    of values.", and no tool that takes a matrix's name ever answered. After a few such refusals its least call (one
    item in each list, each number 1) makes one, whose name the others then take; no failed call is made again."""
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {MATRICES}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=30, isolated=True), seed=0, say=lambda _: None)
    for tool in ("create_matrix", "matrix_sum", "matrix_shape", "matrix_max"):
        assert exploration.tools[tool].answered >= 1, exploration.summary()
    least = [c for c in exploration.calls if "least" in c.sources.values()]
    assert least and len(least) <= 2 * len(exploration.tools), [(c.tool, c.arguments) for c in least]
    failed = [call_key(c.tool, c.arguments) for c in exploration.calls if c.is_error and c.repeats is None]
    assert len(failed) == len(set(failed))


async def test_reads_that_need_what_a_write_held_back_makes_end_in_an_error_naming_the_flag_that_calls_it(tmp_path):
    """numpy-mcp over SSE: a shared server's writes are not called, and every read takes the name of a matrix only a
    write makes: the one-line error says which tools were held back and which flag calls them."""
    files = tmp_path / "exploration.jsonl", tmp_path / "grounding.json"
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {MATRICES}")) as pool:
        with pytest.raises(UserError, match=r"create_matrix were not called.*--explore-writes calls them"):
            await grounded(
                pool, 4, ExploreConfig(calls=12, isolated=False, phrase=False), *files, seed=0, fallback=False
            )


async def test_a_computed_value_sent_on_is_no_handle_whose_making_each_fresh_session_repeats():
    """mcp-math (PyPI): every tool may write for all a client knows (described in Chinese, no hints), and a session
    that sent a factorial on to `sqrt` made `factorial` the issuer of `sqrt`'s number: each later session made it
    again first, as it was, as it would a load that opens the session a read needs. 59 of 120 calls were distinct
    and 10 of 16 tasks asked for a power. Any number fits a square root: only a parameter that awaits what a call
    issues (`Knowledge.handles`) has its issuer made first."""
    spec = ServerSpec.parse(f"{sys.executable} {SUMS}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40, isolated=True), seed=0, say=lambda _: None)
    made = Counter(call_key(c.tool, c.arguments) for c in exploration.calls)
    assert len(made) >= 0.9 * len(exploration.calls), made.most_common(3)
    assert any(c.parents for c in exploration.calls if c.tool == "sqrt"), exploration.summary()
