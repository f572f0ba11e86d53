"""Grounded scenarios (mcprl.scenarios.explore, mcprl.scenarios.grounded): exploring real servers over real
transports, tasks checked by value, verified by replay, errors reported in text counted as errors."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcprl.checks import holds_answer
from mcprl.errors import UserError
from mcprl.judges import VerifyJudge
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import Exploration, ExploredCall, explore, may_write, names_a_file
from mcprl.scenarios.grounded import ANSWER_WORDS, ground
from mcprl.scenarios.replay import gives_answer
from mcprl.scenarios.source import grounded
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario, Trajectory, TrajectoryGroup, load_jsonl
from tests.conftest import _free_port, _wait_listening

pytestmark = pytest.mark.anyio
SHOP = Path(__file__).resolve().parents[1] / "data" / "shop_server.py"
NOTES = Path(__file__).resolve().parents[1] / "data" / "notes_file_server.py"
TASKS = Path(__file__).resolve().parents[1] / "data" / "tasks_server.py"


def shop(*flags: str) -> ServerSpec:
    return ServerSpec.parse(f"{sys.executable} {SHOP} {' '.join(flags)}")


async def explore_and_ground(spec: ServerSpec, calls: int, n: int = 12, **cfg):
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=calls, **cfg), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, n, exploration, seed=0, say=lambda _: None)
    return exploration, tasks, report


def test_the_items_of_a_list_a_write_is_sent_name_different_things_as_a_person_names_them():
    """Entities a knowledge graph is sent in one call are different entities, each named and typed as a person
    would, whatever values of other fields results held (a status is no entity's name)."""
    import random

    from mcprl.scenarios.values import Knowledge, SeenValue

    entity = {"type": "object", "properties": {"name": {"type": "string"}, "entityType": {"type": "string"}}}
    schema = {
        "type": "object",
        "properties": {
            "entities": {"type": "array", "minItems": 2, "items": {**entity, "required": ["name", "entityType"]}}
        },
        "required": ["entities"],
    }
    knowledge = Knowledge([], writers=frozenset({"create_entities"}))
    knowledge.seen = [SeenValue(value="active", field="status", call=0), SeenValue(value="2 + 3", field="", call=1)]
    for seed in range(6):
        args, _ = knowledge.arguments("create_entities", schema, session=1, rng=random.Random(seed))
        names = [e["name"] for e in args["entities"]]
        assert len(set(names)) == len(names) >= 2, args
        assert not {"active", "2 + 3"} & {v for e in args["entities"] for v in e.values()}, args
    # a list of a length the tool refused is not sent again while another is left ("sqrt requires one input")
    numbers = {
        "type": "object",
        "properties": {"numbers": {"type": "array", "items": {"type": "number"}}},
        "required": ["numbers"],
    }
    lengths = set()
    for index in range(3):
        args, leaves = knowledge.arguments("sqrt", numbers, session=1, rng=random.Random(index))
        assert len(args["numbers"]) not in lengths, args
        lengths.add(len(args["numbers"]))
        knowledge.learn(
            "sqrt", args, leaves, index=index, session=1, text="requires one input", is_error=True, error_kind=None,
            values=[],
        )  # fmt: skip


def test_results_are_read_as_records_and_arguments_take_the_shape_their_description_asks_for():
    import random

    from mcprl.scenarios.lexicon import probes
    from mcprl.scenarios.results import result_records
    from mcprl.scenarios.values import Knowledge, SeenValue

    # a server that prints Python's repr() of its rows
    assert result_records("[{'name': 'customers'}, {'name': 'orders'}]", None) == [
        [("name", "customers")],
        [("name", "orders")],
    ]
    assert result_records("P-1 | mug | price: 2\nP-2 | cup | price: 3", None)[1] == [
        ("", "P-2"),
        ("", "cup"),
        ("price", "3"),
    ]
    assert result_records("From: a@b.c\nSubject: hi", {"result": "From: a@b.c\nSubject: hi"}) == [
        [("From", "a@b.c"), ("Subject", "hi")]
    ]
    # records of `key: value` lines one after another, under a heading
    log = "Commit history:\nCommit: a1\nAuthor: Ann\nCommit: b2\nAuthor: Bob"
    assert result_records(log, None) == [[("Commit", "a1"), ("Author", "Ann")], [("Commit", "b2"), ("Author", "Bob")]]
    # an SQL parameter is sent a query over a table some result named; a time one, a time first
    knowledge = Knowledge([])
    knowledge.seen = [SeenValue(value="orders", field="name", call=3, session=0)]
    sql = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
        "required": ["query"],
    }
    rng = random.Random(0)
    drawn = [knowledge.arguments("run", sql, 0, rng) for _ in range(40)]
    assert "SELECT * FROM orders LIMIT 5" in {args["query"] for args, _ in drawn if args}
    assert re.fullmatch(r"\d\d:\d\d", probes("time", "Time to convert in 24-hour format (HH:MM)")[0])


def test_sources_that_keep_failing_a_parameter_are_dropped_and_a_tool_with_one_live_value_runs_out():
    """A repository path the server's command line fixes: the sources whose values keep failing on it
    (blamed by name) are dropped for it, so a tool of that one parameter runs out of calls once its one
    value that works was sent, and the exploration reports that value as the server's context. A short
    value the error text holds inside a word ("all" in "allowed") is not blamed."""
    import random

    from mcprl.scenarios.phrasing import noun_of
    from mcprl.scenarios.results import result_records
    from mcprl.scenarios.values import Drawn, Knowledge, SeenValue

    knowledge = Knowledge(["/srv/r"])  # the server's command line names the repository
    status = {"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}
    branch = {
        "type": "object",
        "properties": {"repo_path": {"type": "string"}, "kind": {"type": "string"}},
        "required": ["repo_path", "kind"],
    }

    def call(tool: str, args: dict, error: str | None) -> None:
        leaves = [Drawn(path=k, name=k, arm="context", value=v) for k, v in args.items()]
        text, failed = error or "On branch main", bool(error)
        knowledge.learn(tool, args, leaves, index=0, session=0, text=text, is_error=failed, error_kind=None, values=[])

    call("status", {"repo_path": "/srv/r"}, None)
    call("branch", {"repo_path": "/srv/o", "kind": "all"}, "Repository path '/srv/o' is outside the allowed repository")
    assert repr("all") not in knowledge.blamed["branch", "kind"]
    assert repr("/srv/o") in knowledge.blamed["branch", "repo_path"]
    rng = random.Random(0)
    bad = 0  # every new value an arm draws for the status tool fails, until its sources run out
    while (drawn := knowledge.arguments("status", status, 1, rng)) is not None:
        args, leaves = drawn
        bad += 1
        error = f"Repository path '{args['repo_path']}' is outside the allowed repository '/srv/r'"
        knowledge.learn(
            "status", args, leaves, index=bad, session=1, text=error, is_error=True, error_kind=None, values=[]
        )
        assert bad <= 30, "arms that keep failing were not dropped"
    # the server's context: the one value that worked is one its command line names
    assert knowledge.fixed("repo_path")
    knowledge.context = []  # one value that worked, but not one in plain view: not the server's context
    assert not knowledge.fixed("repo_path")
    knowledge.context = ["/srv/r"]
    knowledge.refused["repo_path"].add(repr("/srv/r"))  # a tool refused it (a folder, where a file is read)
    assert not knowledge.fixed("repo_path")
    knowledge.refused["repo_path"].clear()
    # new values a result gave (new sources, untried for the parameter) change nothing: the context is sent alone
    knowledge.seen += [SeenValue(value=v, field=f, call=9) for f, v in [("path", "/srv/other"), ("author", "Ann")]]
    drawn = [knowledge.arguments("branch", branch, 1, rng) for _ in range(20)]
    assert {args["repo_path"] for args, _ in filter(None, drawn)} == {"/srv/r"}
    # a key is a label, not code that holds a colon (a diff's line); a plural loses its "s", "status" keeps it
    diff = 'Author: Ann\n+    return {"city": city, "temp": 21.4}'
    assert [k for k, _ in result_records(diff, None)[0] if k] == ["Author"]
    assert (noun_of("git_status"), noun_of("search_emails"), noun_of("get_address")) == ("status", "email", "address")


def test_a_parameter_whose_bad_values_draw_anothers_error_is_sent_the_values_that_worked_there():
    """`git_show`'s `revision` is refused as `git_diff`'s `target` is ("Ref 'X' did not resolve to an
    object"): the two take one kind of value, so a commit hash that `target` took is sent to `revision`.
    An error that only echoes the value, or quotes nothing, relates no parameters."""
    import random

    from mcprl.scenarios.values import Drawn, Knowledge, error_shape

    knowledge = Knowledge([])
    show = {"type": "object", "properties": {"revision": {"type": "string"}}, "required": ["revision"]}

    def call(tool: str, name: str, value: str, error: str | None) -> None:
        leaves = [Drawn(path=name, name=name, arm="word", value=value)]
        knowledge.learn(
            tool,
            {name: value},
            leaves,
            index=0,
            session=0,
            text=error or "diff --git a/x b/x",
            is_error=bool(error),
            error_kind=None,
            values=[],
        )

    call("git_diff", "target", "3f2a9c1", None)
    call("git_diff", "target", "README", "Error executing tool git_diff: Ref 'README' did not resolve to an object")
    call("git_show", "revision", "Ann Lee", "Error executing tool git_show: Ref 'Ann Lee' did not resolve to an object")
    assert knowledge.kin("revision") == {"target"} and knowledge.kin("target") == {"revision"}
    rng = random.Random(0)
    sent = [knowledge.arguments("git_show", show, 1, rng) for _ in range(6)]
    assert "3f2a9c1" in {args["revision"] for args, _ in filter(None, sent)}
    # the value quoted in part ("Ref '2024-03-05 10'" of "2024-03-05 10:00"), the tool's name left out
    assert (
        error_shape("git_log: Ref '2024-03-05 10' is bad", "2024-03-05 10:00", "git_log") == "{tool}: Ref '{}' is bad"
    )
    assert error_shape("Error executing tool t: /srv/x", "/srv/x", "t") is None  # an echo, not quoted
    assert error_shape("Invalid value 'x'", "y", "t") is None  # quotes another value


def test_a_file_servers_paths_come_from_its_results_and_its_files_ground_tasks():
    """Seen on @modelcontextprotocol/server-filesystem, which grounded no task: every `path` was the
    word "path". Now a path parameter (or a list of them) takes a path a result held, a result that
    wraps its text (`{"content": "..."}`) is read as that text, a list argument is phrased as its
    items, and neither a file's base64 blob nor a search that found nothing is an answer."""
    import random

    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates
    from mcprl.scenarios.values import Knowledge

    # a folder a call took, and the names its listing gave: paths to read (joined), for one path or a list of them
    knowledge = Knowledge(["/srv/docs"])
    listing = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    rng = random.Random(0)
    args, leaves = knowledge.arguments("list_directory", listing, 0, rng)
    assert args == {"path": "/srv/docs"} and leaves[0].arm == "context"  # the server's command line named it
    knowledge.learn(
        "list_directory",
        args,
        leaves,
        index=0,
        session=0,
        text="[FILE] README.md\n[DIR] notes",
        is_error=False,
        error_kind=None,
        values=[("", "[FILE] README.md"), ("", "[DIR] notes")],
    )
    read = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    many = {
        "type": "object",
        "properties": {"paths": {"type": "array", "items": {"type": "string"}}},
        "required": ["paths"],
    }
    picked = {knowledge.arguments("read_file", read, 0, rng)[0]["path"] for _ in range(30)}
    assert {"/srv/docs/README.md", "/srv/docs/notes"} <= picked
    lists = [knowledge.arguments("read_multiple_files", many, 0, rng)[0]["paths"] for _ in range(30)]
    assert all(isinstance(p, list) and p for p in lists) and any("/srv/docs/README.md" in p for p in lists)

    text = "README.md:\n# Project\nOwner: Dana Reyes\n"
    read = ExploredCall(
        index=0,
        session=0,
        tool="read_multiple_files",
        arguments={"paths": ["README.md"]},
        text=text,
        structured={"content": text},
    )
    media = ExploredCall(
        index=1,
        session=0,
        tool="read_media_file",
        arguments={"path": "README.md"},
        text="[text/plain, 43 B]",
        structured={"blob": "IyBQcm9qZWN0Ck93bmVyOiBEYW5hIFJleWVzClZlcnNpb246IDIuNC4xCg==", "mimeType": "text/plain"},
    )
    search = ExploredCall(
        index=2,
        session=0,
        tool="search_files",
        arguments={"path": "/srv/docs", "pattern": "budget"},
        text="No matches found",
    )
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=[read, media, search]), {}, seed=seed)]
    asked = {(t.task, t.answer) for t in tasks}
    assert any("owner" in task and "README.md" in task for task, answer in asked if answer == "Dana Reyes"), asked
    assert {answer for _, answer in asked} == {"Dana Reyes", "text/plain"}, asked
    assert not [task for task, _ in asked if "['" in task or "# " in task or "README.md:" in task], asked


def test_which_tools_may_write():
    assert not may_write({"name": "delete_everything", "annotations": {"readOnlyHint": True}})
    assert may_write({"name": "get_item", "annotations": {"destructiveHint": True}})
    assert not may_write({"name": "searchEmails"}) and not may_write({"name": "list_units"})
    assert may_write({"name": "send_email"}) and may_write({"name": "createIssue"})
    assert may_write({"name": "frobnicate", "description": "Frobnicates."})  # says neither: assume it writes
    assert not may_write({"name": "frobnicate", "description": "Get the frobnication level."})
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
    from mcprl.tools.convert import reports_error

    for text in (
        "Error: Database error",
        "ValueError: boom",
        'Database error: near "2026": syntax error',
        "notes.txt: Error - ENOENT: no such file or directory",
        "/srv/a: Error - EISDIR: illegal operation",
        '{"error": "not found"}',
    ):
        assert reports_error(text), text
    for text in ("a.txt:\nhello\n---\nb.txt: Error - ENOENT", "status: error", "found: 0 errors", "price: 12"):
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


@pytest.fixture(scope="module")
def shop_grounded():
    """One exploration of the shop over stdio, grounded, shared by the tests that read it."""
    import anyio

    return anyio.run(lambda: explore_and_ground(shop(), calls=30))


async def test_grounded_tasks_on_a_stdio_server_are_checked_by_value_and_replayed(shop_grounded):
    exploration, tasks, report = shop_grounded
    assert len(exploration.calls) <= 30
    assert {"list_products", "get_product", "run_query", "add_to_cart"} <= {c.tool for c in exploration.calls}
    assert all(c.is_error for c in exploration.calls if c.tool == "run_query")
    assert any(c.parents for c in exploration.calls if c.tool == "get_product")  # an id from a listing, fed on
    assert len(tasks) >= 4 and report.kept == len(tasks)
    assert not any("run_query" in t.tools for t in tasks)
    for t in tasks:
        # a question's answer is a sentence around the value, not a pasted result; a write's, the state it reads back
        on = (
            {"max_words": len(str(t.answer).split()) + ANSWER_WORDS}
            if t.read_back is None
            else {"on": "read_back", "max_other_numbers": None}
        )
        # the clock's answers do not reproduce on replay: a task about it is asked live, by the episode's own call
        live = {"live": {"tool": "now", "arguments": {}, "field": ""}} if t.tools == ["now"] else {}
        assert t.check.model_dump() == {"kind": "holds", **on, **live}
        assert t.reference and t.difficulty == len(t.reference)
    assert report.live == sum(t.tools == ["now"] for t in tasks)
    prices = [t for t in tasks if "price" in t.task]
    assert prices and all(isinstance(t.answer, (int, float)) for t in prices)


async def test_writes_stay_inside_a_fresh_session(shop_grounded):
    exploration, tasks, _ = shop_grounded
    assert any(c.tool == "add_to_cart" and not c.is_error for c in exploration.calls)
    async with ToolPool(shop()) as pool:
        async with pool.session() as session:
            assert (await session.call("cart_size", {})).text == "0"  # nothing the exploration added is here
        # a cart size is only kept where a fresh session reproduces it, once the task's prepared writes are made
        for t in tasks:
            if t.tools[-1:] == ["cart_size"] and t.read_back is None:
                async with pool.session() as session:
                    for c in [*t.prepare, *t.reference]:
                        outcome = await session.call(c.tool, c.arguments)
                assert outcome.text == str(t.answer)


async def test_a_write_is_a_task_checked_by_reading_back_the_rollouts_own_session(shop_grounded, tiny_model_dir):
    from mcprl.rollout.loop import rollout
    from tests.scripted_policy import call, scripted_endpoint

    exploration, tasks, _ = shop_grounded
    # exploring repeated the session's earlier reads after the write: the cart's size went 0 -> 1
    assert any(c.reads_back is not None and c.tool == "cart_size" and c.text == "1" for c in exploration.calls)
    task = next(t for t in tasks if t.read_back)
    # (the session's earlier adds, which the environment makes first: `prepare`)
    prepared = sum(c.tool == "add_to_cart" for c in task.prepare)
    assert task.read_back == {"tool": "cart_size", "arguments": {}} and task.answer == 1 + prepared
    product = task.reference[-1].arguments["product_id"]
    assert task.reference[-1].tool == "add_to_cart" and product in task.task
    judge = VerifyJudge()
    async with ToolPool(shop()) as pool:
        with scripted_endpoint(tiny_model_dir, [call("add_to_cart", product_id=product), "Added.", "Done."]) as (
            model,
            _,
        ):
            did, didnt = await rollout(model, task, pool), await rollout(model, task, pool)
    # each its own fresh session
    assert did.metadata["read_back"] == str(1 + prepared) and didnt.metadata["read_back"] == str(prepared)
    group = await judge.score_group(TrajectoryGroup(scenario=task, trajectories=[did, didnt]))
    assert [t.reward for t in group.trajectories] == [1.0, 0.0]  # the answer's words do not matter: the state does


async def test_a_rollout_starts_in_the_state_its_task_prepares_in_its_own_session(
    tmp_path, monkeypatch, tiny_model_dir
):
    """A task's `prepare` calls are made in the rollout's own session before its first turn, not by the policy: a
    policy that only reads finds the note they added, once in each rollout (no state piles up across them), and is
    scored right; a prepare call that fails fails that rollout, with the reason, and not the others."""
    from mcprl.rollout.loop import rollout
    from mcprl.types import ReferenceCall
    from tests.scripted_policy import call, scripted_endpoint

    monkeypatch.setenv("HOME", str(tmp_path))  # each session gets a home of its own below; none writes here
    task = Scenario(
        task="What does my note say?",
        answer="buy milk",
        check={"kind": "holds"},
        prepare=[ReferenceCall(tool="add_note", arguments={"text": "buy milk"}, writes=True)],
        reference=[ReferenceCall(tool="list_notes", result="note 1: buy milk")],
    )
    broken = task.model_copy(update={"prepare": [ReferenceCall(tool="add_note", arguments={}, writes=True)]})
    script = [call("list_notes"), "It says buy milk.", call("list_notes"), "It says buy milk."]
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {NOTES}", private_home=True)) as pool:
        with scripted_endpoint(tiny_model_dir, script) as (model, engine):
            first, failed, second = [await rollout(model, t, pool) for t in (task, broken, task)]
    for t in (first, second):
        assert t.error is None and t.metrics["tool_calls"] == 1  # the policy's one call: the prepare is not its
        assert [m["content"] for m in t.messages if m["role"] == "tool"] == ["note 1: buy milk"]
    assert "preparing the task's state: add_note {}" in failed.error and not failed.generations
    assert len(engine.seen) == 4  # the failed rollout asked the policy nothing
    group = await VerifyJudge().score_group(TrajectoryGroup(scenario=task, trajectories=[first, second]))
    assert [t.reward for t in group.trajectories] == [1.0, 1.0]
    assert not (tmp_path / ".local").exists()


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


@pytest.mark.parametrize("seed", [0, 1])
async def test_a_server_whose_state_outlives_its_process_gets_one_write_and_names_it(tmp_path, seed):
    """State in a file the command line does not name: after the first write that answers, a fresh session's reads
    (the whole listing, not one under a filter the write missed; `server_info` never changes) show it outlived its
    process, so no tool that may write is called again, and the exploration says why and which writes landed.
    Grounding then replays no chain that writes, and the run's pool offers the policy no tool that may write."""
    notes = tmp_path / "notes.json"
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


async def test_a_stores_records_are_written_as_a_person_writes_them_and_asked_for_by_a_name_one_write_gave(tmp_path):
    """A store that starts empty (a to-do list, a process each session): what its write is sent as a name, a
    description or tags is never another field's value the server set ("open") nor a word of its stock replies
    ("successfully"), and the names vary; a question that names a record by its name ("the task "Weekly report"")
    names one that only one of the writes preparing it gave, and its answer comes back in a fresh session."""
    from mcprl.scenarios.results import result_values

    async with ToolPool(ServerSpec.parse(f"{sys.executable} {TASKS}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=0, say=lambda _: None)
        tasks, _ = await ground(pool, 12, exploration, seed=0, say=lambda _: None)
        adds = [c for c in exploration.calls if c.tool == "add_task" and not c.is_error]
        assert len(adds) >= 4, exploration.summary()
        server_set = {
            str(v)
            for c in exploration.calls
            if not c.writes
            for k, v in result_values(c.data, c.structured)
            if k.rpartition(".")[2] in {"status", "priority"}
        }
        replies = {w.strip(".:") for c in adds for w in c.text.split()}
        assert server_set and "successfully" in replies
        for c in adds:
            texts = [c.arguments["name"], c.arguments.get("desc"), *(c.arguments.get("tags") or [])]
            assert not {str(t) for t in texts if t is not None} & (server_set | replies), c.arguments
        assert len({c.arguments["name"] for c in adds}) >= 4
        named = [t for t in tasks if t.prepare and re.search(r'the task "([^"]+)"', t.task)]
        assert named, [t.task for t in tasks]
        for t in named:
            name = re.search(r'the task "([^"]+)"', t.task)[1]
            assert sum(name in json.dumps(c.arguments) for c in t.prepare) == 1, (t.task, t.prepare)
            async with pool.session() as session:
                for c in [*t.prepare, *t.reference]:
                    outcome = await session.call(c.tool, c.arguments)
            assert gives_answer(t, outcome.data_text)


async def test_exploration_stays_within_its_bounds_and_skips_a_tool_that_hangs():
    started = time.monotonic()
    exploration, tasks, _ = await explore_and_ground(shop("--hang"), calls=12, call_timeout=1.0)
    assert len(exploration.calls) <= 12 and exploration.hung_tools == ["wait_forever"]
    assert sum(c.tool == "wait_forever" for c in exploration.calls) <= 4  # once per concurrent session at most
    assert tasks and time.monotonic() - started < 60
    async with ToolPool(shop()) as pool:
        bounded = await explore(pool, ExploreConfig(calls=1000, minutes=0.05), seed=0, say=lambda _: None)
    assert bounded.seconds < 10 and len(bounded.calls) < 1000


async def test_grounded_tasks_on_the_shipped_servers():
    _, inventory, _ = await explore_and_ground(ServerSpec.parse("python -m mcprl.servers.inventory"), calls=18, n=6)
    assert any(re.search(r"\b(price|stock)\b", t.task) and t.metadata["kind"] == "field" for t in inventory)
    # one calculator server for each exploring: it keeps no state, so its sessions need no process each
    calc = ServerSpec.parse("python -m mcprl.servers.calculator", per_rollout=False)
    async with ToolPool(calc) as pool:
        exploration = await explore(pool, ExploreConfig(calls=18), seed=0, say=lambda _: None)
        calculator, report = await ground(pool, 6, exploration, seed=0, max_calls=1, say=lambda _: None)
    assert len(calculator) == 6 and all(isinstance(t.answer, (int, float)) for t in calculator)
    assert any(
        re.fullmatch(r"(What is |Compute |Work out )?[-+*/() .\d]+( = )?[?.]", t.task) for t in calculator
    )  # "What is 8.5 * 19?"
    assert len(report.covered) >= 3  # spread over the tools
    # chains the exploration made, but longer than an episode of 2 turns allows (a call, then the answer)
    assert all(t.difficulty == 1 for t in calculator) and report.dropped["more calls than an episode's 1"] >= 1
    async with ToolPool(calc) as pool:  # the same seed grounds the same tasks, ids and all
        again, _ = await ground(
            pool,
            6,
            await explore(pool, ExploreConfig(calls=18), seed=0, say=lambda _: None),
            seed=0,
            max_calls=1,
            say=lambda _: None,
        )
    assert [(t.id, t.task) for t in again] == [(t.id, t.task) for t in calculator]


def test_a_short_listing_asks_for_every_name_it_gives_and_states_none():
    """A listing whose lines are names, none labelled (`git_branch`'s "  feature/alerts\n* main"), grounds a
    task asking for them all, markers left out, checked by the share the answer holds; the task states none
    of them. Prose lines, a listing of one line, or one of the values the call was sent ground none."""
    from mcprl.judges.verify import checker_for
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates
    from mcprl.types import Message, Trajectory

    def listing(text: str, arguments: dict | None = None) -> list:
        call = ExploredCall(index=0, session=0, tool="git_branch", arguments=arguments or {}, text=text)
        return [t for t in candidates(Exploration(calls=[call]), {}, seed=0) if t.metadata["kind"] == "listing"]

    (task,) = listing("  feature/alerts\n* main\n[DIR] docs")
    assert task.answer == ["feature/alerts", "main", "docs"] and task.check.kind == "contains"
    assert not any(name in task.task for name in task.answer)
    check = checker_for(task)

    def said(answer: str) -> float:
        return check(task, Trajectory(messages=[Message(role="assistant", content=answer)]))

    assert said("The branches are feature/alerts and main, and the folder docs.") == 1.0
    assert 0 < said("Only main.") < 1
    assert listing("Changes to be committed and more\nOn branch main") == []  # prose, not names
    assert listing("main") == []  # one line
    assert listing("main\ndev", {"name": "dev"}) == []  # a listing of what the call was given


def test_no_task_states_a_filter_that_changed_nothing():
    """`git_log` with `end_timestamp` "README" said what `git_log` alone said: every task is asked of the
    plain call (its reference takes no filter, its wording states none); a filter that changed the answer
    stays."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    log = "Commit: a1\nAuthor: Ann Lee\nMessage: Initial commit\n\nCommit: b2\nAuthor: Bob Stone\nMessage: Add tests"
    calls = [
        ExploredCall(index=0, session=0, tool="git_log", arguments={"end_timestamp": "README"}, text=log),
        ExploredCall(index=1, session=0, tool="git_log", arguments={}, text=log),
        ExploredCall(index=2, session=0, tool="git_log", arguments={"max_count": 1}, text=log.split("\n\n")[0]),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert tasks and not any("README" in t.task or "end_timestamp" in t.reference[-1].arguments for t in tasks)
    assert any(t.reference[-1].arguments == {"max_count": 1} for t in tasks)  # it changed what the call said


def test_a_text_a_tool_gave_whatever_it_was_asked_answers_no_task():
    """A lookup that said "Task not found" for three ids answers that to anything: no task asks for it, for any of
    them; a record it found is still asked about, and a value three calls share that is a number (a sum) stays."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    calls = [
        ExploredCall(index=i, session=0, tool="task_get", arguments={"id": n}, text="Task not found")
        for i, n in enumerate((8, 18, 2))
    ]
    calls.append(
        ExploredCall(index=3, session=0, tool="task_get", arguments={"id": 1}, text='{"name": "Renew passport"}')
    )
    calls += [
        ExploredCall(index=4 + i, session=0, tool="add", arguments={"a": a, "b": b}, text="7")
        for i, (a, b) in enumerate(((3, 4), (2, 5), (1, 6)))
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert {t.answer for t in tasks} == {"Renew passport", 7}, {(t.task, t.answer) for t in tasks}


def test_an_answer_picked_from_a_list_the_task_gives_is_asked_and_one_an_argument_states_is_not():
    """The largest of 3, 8 and 5 is 8, in a text or a JSON record: a choice the task asks for, so kept; a value a
    list holds once (no choice), or one another argument states (`start` 7), still gives the answer away."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    calls = [
        ExploredCall(index=0, session=0, tool="max", arguments={"numbers": [3, 8, 5]}, text="8"),
        ExploredCall(
            index=1, session=0, tool="largest", arguments={"numbers": [4, 9]}, text='{"result": "9.0", "count": 2}'
        ),
        ExploredCall(index=2, session=0, tool="max", arguments={"numbers": [6, 6]}, text="6"),
        ExploredCall(index=3, session=0, tool="top", arguments={"numbers": [1, 7], "start": 7}, text="7"),
    ]
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    answers = {t.answer: t.task for t in tasks}
    assert {8, 9} <= set(answers) and not {6, 7} & set(answers), answers
    assert re.search(r"\b3\b.*\b8\b.*\b5\b", answers[8]) and re.search(r"\b4\b.*\b9\b", answers[9])  # stated


def test_a_dated_listing_asks_for_its_latest_and_earliest_lines_by_their_dates():
    """A listing whose lines are dated, newest first or oldest first, asks for its first and last lines by place
    ("the latest commit"), and the answer is the field of the line with that date; a listing in no date order says
    only "the first one listed"; a line is picked out by words before a hash."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    people = ["Ann Lee", "Bob Stone", "Carla Diaz", "Dan Roe"]
    lines = [
        (("abc", "bcd", "cde", "def")[i] * 13 + str(i), people[i], f"2024-03-0{i + 1} 10:00:00+00:00", f"Change {i}")
        for i in range(4)
    ]

    def log(order: list[int]) -> str:
        return "\n\n".join(
            f"Commit: {lines[i][0]}\nAuthor: {lines[i][1]}\nDate: {lines[i][2]}\nMessage: {lines[i][3]}" for i in order
        )

    for order, latest, earliest in (([3, 2, 1, 0], 3, 0), ([0, 1, 2, 3], 3, 0), ([2, 0, 3, 1], None, None)):
        call = ExploredCall(index=0, session=0, tool="git_log", arguments={}, text=log(order))
        tasks = [t for seed in range(12) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
        placed = [t for t in tasks if re.search(r"\b(latest|earliest|first one listed)\b", t.task)]
        places = {p for t in placed for p in ("latest", "earliest") if p in t.task}
        assert places == ({"latest", "earliest"} if latest is not None else set()), [t.task for t in placed]
        for t in placed:
            at = latest if "latest" in t.task else earliest if "earliest" in t.task else order[0]
            assert any(str(t.answer) in v for v in lines[at]), (t.task, t.answer)
            assert "Who" in t.task or "who" in t.task or "Author" not in t.task  # the author is asked who, not what
        # a hash picks a line out only where no value in words does
        assert not any(lines[i][0] in t.task for t in tasks for i in range(4)), [t.task for t in tasks]


def test_a_text_of_lines_is_asked_for_by_its_labelled_values_not_its_one_number():
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    text = "Meeting at 10am with Dana.\nBudget: 4500 USD\n"
    call = ExploredCall(index=0, session=0, tool="read_text_file", arguments={"path": "notes.txt"}, text=text)
    tasks = [t for seed in range(4) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks and all("budget" in t.task for t in tasks if t.answer == 4500), [t.task for t in tasks]


def test_a_csv_table_is_asked_for_by_its_cells_not_as_lines():
    """A file that is a CSV table grounds tasks about one row's cell, picked out by another cell of that row, and
    no task asks for its lines as a listing."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    rows = [("apple", "3"), ("pear", "7"), ("plum", "12")]
    text = "name,qty\n" + "\n".join(",".join(r) for r in rows) + "\n"
    call = ExploredCall(index=0, session=0, tool="read_text_file", arguments={"path": "./data.csv"}, text=text)
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks and not any(isinstance(t.answer, list) or "," in str(t.answer) for t in tasks)
    for t in tasks:  # the answer is a cell of the one row whose other cell the task names
        row = next(r for r in rows if any(re.search(rf"\b{c}\b", t.task) for c in r))
        assert str(t.answer) in row and not re.search(rf"\b{t.answer}\b", t.task), t.task


def test_no_answer_is_longer_than_a_line():
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    env = {"HOME": "/root", "SHELL": "/bin/bash", "PATH": ":".join(f"/opt/tool{i}/bin" for i in range(12))}
    call = ExploredCall(index=0, session=0, tool="get_env", arguments={}, text=json.dumps(env))
    tasks = [t for seed in range(6) for t in candidates(Exploration(calls=[call]), {}, seed=seed)]
    assert tasks and all(len(str(t.answer)) <= 80 for t in tasks), [t.answer for t in tasks]


def test_a_task_that_states_a_value_needs_no_call_that_found_it():
    """Exploring found SKU-3000 by listing first; asked for by its sku, the item needs `get_item`
    alone, asked for by its name, the listing too (what the rollout must find)."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    listing = ExploredCall(
        index=0,
        session=0,
        tool="list_items",
        arguments={},
        text="SKU-3000 | mini hook | 167.07\nSKU-4000 | steel level | 53.63",
    )
    item = ExploredCall(
        index=1,
        session=0,
        tool="get_item",
        arguments={"sku": "SKU-3000"},
        sources={"sku": "result:0"},
        parents=[0],
        text='{"sku": "SKU-3000", "name": "mini hook", "price": 167.07, "stock": 40}',
    )
    found = {}
    for seed in range(8):  # both wordings: by the sku the call took, by the record's name
        for t in candidates(Exploration(calls=[listing, item]), {}, seed=seed):
            if t.reference[-1].tool == "get_item":
                found["SKU-3000" in t.task] = [c.tool for c in t.reference]
    assert found == {True: ["get_item"], False: ["list_items", "get_item"]}
    # a write the chain made stays: it made the state the read reads
    from mcprl.scenarios.replay import needed

    write = ExploredCall(
        index=2,
        session=0,
        tool="update_stock",
        arguments={"sku": "SKU-3000", "change": 7},
        writes=True,
        sources={"sku": "result:0"},
        parents=[0],
        text="SKU-3000 (mini hook): stock 40 -> 47",
    )
    read = item.model_copy(update={"index": 3})
    assert [c.tool for c in needed("What is the stock of the item with sku SKU-3000?", [listing, write, read])] == [
        "update_stock",
        "get_item",
    ]


def test_no_task_is_answered_by_our_rendering_or_by_its_own_wording():
    """Seen on @modelcontextprotocol/server-everything: an image's placeholder (`[image/png, 4 KB]`,
    written by our client) gave the answer 4, and a one-sentence result named its own record
    ('What is the sum of the sum "The sum of 10 and 20 is 30."?')."""
    from mcprl.checks import holds_answer
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    image = ExploredCall(
        index=0,
        session=0,
        tool="get-tiny-image",
        arguments={},
        text="Here's the image you requested:\n[image/png, 4 KB]\nThe image above is the MCP logo.",
        data_text="Here's the image you requested:\nThe image above is the MCP logo.",  # its text blocks
    )
    total = ExploredCall(
        index=1, session=0, tool="get-sum", arguments={"a": 10, "b": 20}, text="The sum of 10 and 20 is 30."
    )
    tasks = [
        t
        for seed in range(8)
        for t in candidates(
            Exploration(calls=[image, total]), {"get-sum": "Returns the sum of two numbers."}, seed=seed
        )
    ]
    assert not [t for t in tasks if t.reference[-1].tool == "get-tiny-image"]
    assert tasks and all(t.answer == 30 and not holds_answer(t.task, 30) for t in tasks), [t.task for t in tasks]


def test_a_listing_cut_by_max_result_chars_grounds_each_field_in_its_own_record():
    """A long listing is cut mid-record, and the client says so on a last line: neither the cut
    record nor that line is a record, the rest is still a listing (not one record whose keys repeat,
    which asked for one item's stock with another's), and a reference keeps the result whole."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates
    from mcprl.tools.convert import _BoundedText

    rows = [
        f"SKU-{1000 + i} | item {chr(97 + i)}{chr(97 + i)}x | tools | stock: {10 + i} | price: ${i}.50"
        for i in range(12)
    ]
    bounded = _BoundedText(300)
    bounded.add("\n".join(rows))
    listing = ExploredCall(index=0, session=0, tool="list_items", arguments={}, text=bounded.text())
    assert listing.text.endswith("more characters]")
    fields = [
        t
        for seed in range(6)
        for t in candidates(Exploration(calls=[listing]), {}, seed=seed)
        if t.metadata["kind"] == "field"
    ]
    assert fields
    for t in fields:
        name = t.metadata["given"][0]
        row = next(r for r in rows if f"| {name} |" in r)
        assert row in listing.text and str(t.answer) in row, (t.task, t.answer)
        assert t.reference[0].result == listing.text


def test_prose_states_labelled_values_and_a_listing_may_end_with_a_note():
    """A message's body says what a person asks about ("Confirmation code: ZOE67V.", "Your
    reservation number is 4F2A9C01."); a search's listing ends with a note that is not a record;
    a one-sentence result is a message, not an answer; a subject that holds a number is a name."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates
    from mcprl.scenarios.results import result_records, sentence_fields

    assert sentence_fields(
        "Confirmation code: ZOE67V. Flight SW 764 to Porto is booked. Check in 24 hours before."
    ) == [("Confirmation code", "ZOE67V")]
    assert sentence_fields("Dear Alex, thank you. Your reservation number is 4F2A9C01. We look forward to it.") == [
        ("reservation number", "4F2A9C01")
    ]
    assert sentence_fields("The Wi-Fi password at Lake Cabin is k3j2h1x9. Enjoy!") == [("Wi-Fi password", "k3j2h1x9")]
    assert sentence_fields("Good news: your order is on its way. Please keep noise down after 10 PM.") == []
    # a clause labels its value by the noun it ends with; an expression is no value of the number it starts with
    assert sentence_fields("Task created successfully with ID: 2") == [("ID", "2")]
    assert sentence_fields("tags: 2 + 3") == []
    listing = (
        "msg-0296 | 2024-12-18 | SkyWay <b@sky.example> | Your flight to Porto is confirmed | Confirmation code: "
        "ZOE67V. Flight ...\n"
        "msg-0266 | 2024-11-14 | City Guides <h@cg.example> | 48 hours in Porto | Where to eat in Porto.\n"
        "(2 of 11 matching emails shown)"
    )
    assert len(result_records(listing, None)) == 2
    calls = [
        ExploredCall(index=0, session=0, tool="search_emails", arguments={"query": "Porto"}, text=listing),
        ExploredCall(index=1, session=0, tool="search_emails", arguments={"query": "Oslo"}, text="No emails match."),
    ]
    tasks = {t.task: t.answer for seed in range(6) for t in candidates(Exploration(calls=calls), {}, seed=seed)}
    assert tasks == {
        "Find the email about Porto and tell me its confirmation code.": "ZOE67V",  # what the search was about
        'What is the confirmation code of the email "Your flight to Porto is confirmed"?': "ZOE67V",
    }


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


def test_a_description_that_states_an_expression_words_the_task_as_that_expression():
    from mcprl.scenarios.phrasing import formula

    assert formula("Multiply two numbers and return a * b.", "multiply", {"a": 18.5, "b": 10}) == "18.5 * 10"
    # the previous call's expression in brackets where its result is fed on
    assert (
        formula("Subtract b from a and return a - b.", "subtract", {"a": 184, "b": 6}, frozenset({"a"}), "18.5 * 10")
        == "(18.5 * 10) - 6"
    )
    assert (
        formula("Raise base to the power exponent and return base ** exponent.", "power", {"base": 2, "exponent": -1.5})
        == "2 ** -1.5"
    )
    # none where the description states no expression, or one without every argument
    assert formula("Convert an amount from one unit to another.", "convert", {"value": 3, "to_unit": "km"}) is None
    assert formula("Divide a by b and return a / b.", "divide", {"a": 2, "c": 1}) is None


async def test_a_server_with_nothing_to_ground_stops_with_the_fix(tmp_path):
    from mcprl.scenarios.config import ScenarioConfig
    from mcprl.scenarios.source import run_scenarios

    spec = ServerSpec.parse(f"{sys.executable} {SHOP}", allow=["run_query"])
    async with ToolPool(spec) as pool:
        with pytest.raises(UserError, match="every call it answered was an error.*--scenarios FILE"):
            await run_scenarios(
                ScenarioConfig(n=8),
                tmp_path,
                seed=0,
                resume=False,
                pool=pool,
                generate=None,
                model="local",
                api_base=None,
                explore=ExploreConfig(calls=6),
                say=lambda _: None,
            )
    assert (tmp_path / "exploration.jsonl").exists()


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


async def test_run_scenarios_grounds_by_default_and_the_demonstration_is_a_reference_call(tmp_path):
    from mcprl.run.demonstration import Context, settle
    from mcprl.scenarios.config import ScenarioConfig
    from mcprl.scenarios.source import run_scenarios

    async with ToolPool(ServerSpec.parse("python -m mcprl.servers.calculator")) as pool:
        train, val = await run_scenarios(
            ScenarioConfig(n=8),
            tmp_path,
            seed=0,
            resume=False,
            pool=pool,
            generate=None,
            model="local",
            api_base=None,
            explore=ExploreConfig(calls=16),
            say=lambda _: None,
        )
        context = Context(
            train=train,
            pool=pool,
            enabled=True,
            given=None,
            file=None,
            shipped=None,
            model="local",
            api_base=None,
            seed=0,
            per_tool=False,
            say=lambda _: None,
        )
        demo, kept = await settle(context)
    assert all(s.metadata["source"] == "grounded" for s in train + val)
    assert (tmp_path / "grounding.json").exists() and (tmp_path / "exploration.jsonl").exists()
    assert demo.source.startswith("grounded:") and len(kept) == len(train) - 1
    shown = next(s for s in train if s.id == demo.source.split(":")[1])
    assert len(demo.exchanges) == 1
    call = demo.exchanges[0][1]["tool_calls"][0]["function"]
    assert call["name"] == shown.reference[0].tool
    assert [m["role"] for m in demo.exchanges[0]] == ["user", "assistant"]  # ends at the call
    assert holds_answer(shown.reference[0].result, shown.answer)  # the reference keeps what it returned

    # --demonstration-per-tool: one reference call per tool a chain starts with, each scenario shown one
    from mcprl.rollout.config import RolloutConfig
    from mcprl.rollout.loop import initial_messages
    from mcprl.run.demonstration import from_reference

    per, kept = from_reference(train, train, seed=0, per_tool=True)
    first_tools = {s.reference[0].tool for s in train}
    shown_tools = [e[1]["tool_calls"][0]["function"]["name"] for e in per.exchanges]
    assert sorted(shown_tools) == sorted(first_tools) and len(first_tools) >= 2
    assert len(kept) == len(train) - len(first_tools) and per.source.count(",") == len(first_tools) - 1
    config = RolloutConfig(demonstrations=per.exchanges)
    seen = {
        initial_messages(s, [{"type": "function", "function": {"name": "x"}}], config)[1]["content"]
        for s in train + val
    }
    assert len(seen) >= 2  # scenarios see different tools' exchanges ...
    assert initial_messages(val[0], [{}], config) == initial_messages(
        val[0].model_copy(), [{}], config
    )  # ... a scenario always the same


async def test_the_holds_check_reads_numbers_by_value_and_refuses_a_recital():
    scenario = Scenario(task="What is the price of the blue mug?", answer=12.5, check={"kind": "holds"})

    def answered(text: str) -> Trajectory:
        return Trajectory(messages=[{"role": "assistant", "content": text}])

    texts = [
        "The blue mug costs $12.50.",
        "It costs 13.",
        "P-101 | blue mug | price: 12.5 | stock: 4 | aisle 3, bin 9, row 2",
    ]
    group = await VerifyJudge().score_group(
        TrajectoryGroup(trajectories=[answered(t) for t in texts], scenario=scenario)
    )
    assert [t.reward for t in group.trajectories] == [1.0, 0.0, 0.0]
    names = Scenario(task="Name a unit of mass.", answer=["kg", "lb"], check={"kind": "holds", "any_of": True})
    group = await VerifyJudge().score_group(
        TrajectoryGroup(trajectories=[answered("lb"), answered("metre")], scenario=names)
    )
    assert [t.reward for t in group.trajectories] == [1.0, 0.0]
    # a grounded text field: a pasted result holds it too, with few numbers (what a run's policy learnt to do)
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    text = (
        "From: Aisha Bello <aisha.bello@work.example>\nTo: Alex Morgan <alex.morgan@example.com>\n"
        "Subject: Lunch on Tuesday?"
    )
    call = ExploredCall(index=0, session=0, tool="read_email", arguments={"email_id": "msg-0143"}, text=text)
    sender = next(
        t
        for seed in range(8)
        for t in candidates(Exploration(calls=[call]), {}, seed=seed)
        if t.answer.startswith("Aisha")
    )
    replies = [
        "The sender is Aisha Bello <aisha.bello@work.example>.",
        f"<tool_response>\n{text} Hi Alex, are you free for lunch?",
    ]
    group = await VerifyJudge().score_group(
        TrajectoryGroup(trajectories=[answered(r) for r in replies], scenario=sender)
    )
    assert [t.reward for t in group.trajectories] == [1.0, 0.0]


async def test_a_generator_rephrases_a_task_only_where_the_rewrite_keeps_it():
    import json

    from mcprl.scenarios.phrasing import keeps, phrase
    from tests.fake_llm import FakeLLM

    template = 'What is the price of the item "steel level"?'
    assert keeps(template, 53.63, "How much does the steel level cost?")
    assert not keeps(template, 53.63, "How much does a level cost?")  # the item is gone
    assert not keeps(template, 53.63, "Is the steel level 53.63?")  # the answer is given away
    assert not keeps(
        "List the categories. What is the result?", "tools", "What are the categories?"
    )  # nothing to check
    # a name the task states bare is kept as a quoted one is
    assert not keeps("What is the price of the steel level?", 53.63, "How much does a level cost?", ["steel level"])

    rewrites = {
        template: "How much does the steel level cost?",
        "Add two numbers and return a + b (a 2, b 3). What is the result?": "What is two plus three?",
    }

    def reply(request: dict) -> str:
        return json.dumps({"question": rewrites[request["messages"][-1]["content"]]})

    tasks = [
        Scenario(task=t, answer=a, check={"kind": "holds"}) for t, a in ((template, 53.63), (list(rewrites)[1], 5))
    ]
    with FakeLLM(handler=reply) as llm:
        assert await phrase(tasks, "openai/gen", api_base=llm.base_url, seed=0) == 1
    assert tasks[0].task == "How much does the steel level cost?" and tasks[0].metadata["template"] == template
    assert (
        tasks[1].task == list(rewrites)[1] and "template" not in tasks[1].metadata
    )  # "two plus three" dropped 2 and 3


async def test_a_task_follows_its_most_focused_chain_and_exploring_draws_from_every_record():
    """A warehouse's listing names 36 items: exploring draws its lookups' ids from every record of
    it (drawn from the latest few values, every lookup took one of the last records' ids: 4 SKUs
    in 120 calls), and its searches' words from names. Of the chains that answer one task, the kept
    one has its answer in the fewest records (a lookup, not a listing's line), and the
    demonstration is a one-record read, never a write."""
    from mcprl.run.demonstration import from_reference
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates
    from mcprl.scenarios.results import result_records
    from mcprl.scenarios.selection import select

    async with ToolPool(ServerSpec.parse("python -m mcprl.servers.inventory")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
    looked_up = {c.arguments.get("sku") for c in exploration.calls if c.tool == "get_item" and not c.is_error}
    assert len(looked_up) >= 6, looked_up
    # a search takes words of a name (one item found), not a category's one word, which has the shape of its example
    # ('drill')
    searched = {
        c.arguments["query"]
        for c in exploration.calls
        if c.tool == "search_items" and not c.is_error and len(result_records(c.text, None)) == 1
    }
    assert len(searched) >= 2, searched

    listing = ExploredCall(
        index=0,
        session=0,
        tool="list_items",
        arguments={},
        text="\n".join(f"SKU-{3000 + i} | item {chr(97 + i) * 3} | stock: {40 + i} | price: ${i}.75" for i in range(8)),
    )
    item = ExploredCall(
        index=1,
        session=0,
        tool="get_item",
        arguments={"sku": "SKU-3002"},
        sources={"sku": "result:0"},
        parents=[0],
        text="SKU-3002 | item ccc | stock: 42 | price: $2.75 | location: aisle 3",
    )
    write = ExploredCall(
        index=2, session=0, tool="update_stock", arguments={"sku": "SKU-3002", "change": 5}, writes=True, text="47"
    )
    found = [t for seed in range(8) for t in candidates(Exploration(calls=[listing, item, write]), {}, seed=seed)]
    asked = [t for t in found if t.metadata.get("given") == ["item ccc"] and t.metadata["field"] == "stock"]
    assert {t.reference[-1].tool for t in asked} == {"list_items", "get_item"}
    assert len({t.task for t in asked}) == 1  # one question, one wording: whichever call grounds it, a duplicate
    # names are asked for quoted and bare, as people write them ('What is the stock of the item ccc?')
    by_name = [t for t in found if t.metadata.get("given") and t.metadata["given"][0].startswith("item ")]
    assert {'"' in t.task for t in by_name} == {True, False}
    for order in (asked, asked[::-1]):
        kept, _ = select(order, 10, seed=0)
        assert [t.reference[-1].tool for t in kept if t.task == asked[0].task] == ["get_item"]
    one_call = [t for t in found if len(t.reference) == 1]
    assert {t.reference[0].tool for t in one_call} >= {"list_items", "update_stock"}
    for seed in range(6):
        demo, _ = from_reference(one_call, one_call, seed=seed)
        shown = next(t for t in one_call if t.id == demo.source.split(":")[1])
        assert shown.metadata["records"] == 1 and not shown.reference[0].writes, shown.task


async def test_a_task_that_names_its_record_is_shown_the_one_call_a_person_would_make():
    """A task about one line of a 36-item listing, asked by the item's name: its chain becomes a
    search for that name (one record), the call a person makes, not the listing; a task whose
    answer no one-call result holds keeps its chain."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates, shortcut

    async with ToolPool(ServerSpec.parse("python -m mcprl.servers.inventory")) as pool:
        async with pool.session() as session:
            listing = await session.call("list_items", {})
        call = ExploredCall(index=0, session=0, tool="list_items", arguments={}, text=listing.text)
        named = [t for t in candidates(Exploration(calls=[call]), {}, seed=0) if t.metadata.get("given")]
        assert named and all(t.metadata["records"] == 36 for t in named)
        unheld = named[0].model_copy(deep=True, update={"answer": 123456.5})
        assert await shortcut([*named, unheld], pool) == len(named)
    for t in named:
        assert t.reference[0].tool == "search_items" and t.metadata["records"] == 1, t.task
        assert t.reference[0].arguments == {"query": t.metadata["given"][0]}
        assert str(t.answer) in t.reference[0].result.replace("$", "")
    assert unheld.reference[0].tool == "list_items"


def test_a_replayed_answer_counts_only_where_it_came_back_in_its_own_field():
    """A time difference of 0 hours is not given back by a date's "+00:00" beside a difference of 1 hour, nor by
    another tool's date; a sentence gives its number back where it states it again."""
    from mcprl.scenarios.replay import comes_back

    def converted(offset: str, difference: str) -> str:
        return json.dumps({"target": {"datetime": f"2027-05-30T10:30:00{offset}"}, "time_difference": difference})

    assert comes_back(converted("+00:00", "+0.0h"), converted("+00:00", "+0.0h"), 0)
    assert not comes_back(converted("+00:00", "+0.0h"), converted("+01:00", "+1.0h"), 0)
    assert not comes_back(converted("+00:00", "+0.0h"), json.dumps({"datetime": "2026-11-28T02:34:09+00:00"}), 0)
    assert comes_back("The meeting is in room 4.", "The meeting is in room 4.", 4)
    assert not comes_back("The meeting is in room 4.", "The meeting moved to room 5.", 4)


def test_a_value_that_changed_no_answer_makes_no_other_question_and_one_text_given_twice_none():
    """Three times of day give one time difference: one question, not three. Converting a zone to itself
    asks nothing, where the zones are what the call works on. A value that changed the answer still makes
    its own question."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates
    from mcprl.scenarios.selection import select

    def convert(index: int, source: str, at: str, target: str, difference: float) -> ExploredCall:
        result = {"source": source, "target": target, "time_difference": f"{difference:+.1f}h"}
        arguments = {"source_timezone": source, "time": at, "target_timezone": target}
        return ExploredCall(index=index, session=0, tool="convert_time", arguments=arguments, text=json.dumps(result))

    calls = [
        *(convert(i, "America/New_York", at, "Europe/London", 5) for i, at in enumerate(["09:30", "12:00", "8:54"])),
        convert(3, "Asia/Tokyo", "09:30", "Europe/London", -9),
        convert(4, "Asia/Tokyo", "09:30", "Asia/Tokyo", 0),
        # two names of one zone change no answer; the target zone still does, so each target is its own question
        convert(5, "Asia/Kolkata", "12:00", "UTC", -5.5),
        convert(6, "Asia/Kolkata", "12:00", "Etc/UTC", -5.5),
        convert(7, "Asia/Kolkata", "09:30", "Asia/Tokyo", 3.5),
        convert(8, "Asia/Tokyo", "12:00", "Asia/Kolkata", -3.5),
    ]
    found = [
        t for t in candidates(Exploration(calls=calls), {}, seed=0) if t.metadata.get("field") == "time_difference"
    ]
    assert {t.reference[-1].arguments["time"] for t in found if t.answer == 5} == {"09:30", "12:00", "8:54"}
    kept, dropped = select(found, 10, seed=0)
    asked = sorted((t.reference[-1].arguments["source_timezone"], t.answer) for t in kept)
    assert asked == [
        ("America/New_York", 5),
        ("Asia/Kolkata", -5.5),
        ("Asia/Kolkata", -5.5),
        ("Asia/Kolkata", 3.5),
        ("Asia/Tokyo", -9),
        ("Asia/Tokyo", -3.5),
    ], [t.task for t in kept]
    assert dropped["one text given twice"] == 1
    # as filters, one value given twice narrows (one date as both bounds of a range asks for that day)
    _, dropped = select(found, 10, seed=0, optional={"convert_time": {"source_timezone", "target_timezone"}})
    assert not dropped["one text given twice"]


def test_the_previous_result_is_always_the_result_of_the_call_said_before():
    """A chain is said call after call, a value one call found given to the next as "the previous result": never
    where it came from an earlier call (`divide(a=<first sum>, b=<second sum>)` is not "divide the previous result by
    the previous result")."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates

    def made(index, tool, arguments, text, sources=None):
        parents = sorted({int(s.split(":")[1]) for s in (sources or {}).values()})
        return ExploredCall(
            index=index, session=0, tool=tool, arguments=arguments, text=text, sources=sources or {}, parents=parents
        )

    calls = [
        made(0, "add", {"a": 2, "b": 3}, "5"),
        made(1, "add", {"a": 16, "b": 34}, "50"),
        made(2, "divide", {"a": 5, "b": 50}, "0.1", {"a": "result:0", "b": "result:1"}),
        made(3, "multiply", {"a": 50, "b": 2}, "100", {"a": "result:1"}),
    ]
    tasks = [t for seed in range(8) for t in candidates(Exploration(calls=calls), {}, seed=seed)]
    assert not [t.task for t in tasks if t.answer == 0.1 and "previous result" in t.task]
    assert any("previous result" in t.task for t in tasks if t.answer == 100), [t.task for t in tasks]


async def test_a_listing_too_long_to_name_is_asked_how_many_it_lists(tmp_path):
    """A listing of more values than a task would ask to name (12 legal moves) is asked how many it gives, the
    answer its number of values; not where the client cut it, where a value repeats, or where a short listing's
    names are asked for instead. Replayed, a count is kept where the listing gives as many again, not where it
    grew."""
    from mcprl.scenarios.explore import Exploration, ExploredCall
    from mcprl.scenarios.grounded import candidates
    from mcprl.scenarios.replay import replayed
    from mcprl.tools.convert import TRUNCATED
    from tests.scenarios.listings_server import MOVES as moves

    def listed(tool: str, values: list[str], cut: bool = False) -> ExploredCall:
        text = "\n".join(values) + ("\n[... truncated: 400 more characters]" if cut else "")
        assert bool(TRUNCATED.search(text)) == cut
        return ExploredCall(index=0, session=0, tool=tool, arguments={}, text=text)

    def counts(call: ExploredCall) -> list[Scenario]:
        return [t for t in candidates(Exploration(calls=[call]), {}, seed=0) if t.metadata.get("kind") == "count"]

    (task,), events = counts(listed("get_valid_moves", moves)), counts(listed("get_recent_events", moves[:10]))
    assert task.answer == len(moves) and str(task.answer) not in task.task and "valid moves" in task.task
    assert not counts(listed("get_valid_moves", moves, cut=True))
    assert not counts(listed("get_valid_moves", [*moves[:-1], moves[0]]))
    assert not counts(listed("get_valid_moves", moves[:5]))
    server = Path(__file__).with_name("listings_server.py")
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {server} {tmp_path / 'seen'}")) as pool:
        kept, dropped = await replayed([task, *events], pool, say=lambda _: None)
    assert kept == [task] and dropped == {"answer not reproduced": 1}


def test_a_value_that_worked_is_varied_as_a_person_varies_it():
    """Each number of a value that worked changes within half to twice its size and keeps its form (an integer, a
    zero-padded one, a decimal's places), so a dice notation stays one a person rolls and a time stays a time."""
    import random

    from mcprl.scenarios.values import _varied

    rng = random.Random(0)
    for value in ("2d6+3", "09:30", "(7 - 2) / 5", "12.5"):
        for _ in range(20):
            varied = _varied(value, rng)
            before, after = re.findall(r"\d+(?:\.\d+)?", value), re.findall(r"\d+(?:\.\d+)?", varied)
            assert re.sub(r"\d+(?:\.\d+)?", "#", varied) == re.sub(r"\d+(?:\.\d+)?", "#", value)
            for b, a in zip(before, after, strict=True):
                assert float(b) / 2 - 1 <= float(a) <= float(b) * 2 + 1 and len(a) >= len(b) - (b[0] != "0")
                assert ("." in a) == ("." in b) and len(a.partition(".")[2]) == len(b.partition(".")[2])


THINGS = '''
import sys
sys.path.insert(0, {root!r})
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
    from mcprl.scenarios.explore import QUIET_WRITES, READ_BACKS

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
