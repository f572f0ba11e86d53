"""The MCP client over stdio, against the shipped servers: discovery, every outcome of a call,
server death, the minimal environment, working directories, pools, and connection errors."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import get_default_environment

from mcprl.errors import UserError
from mcprl.tools import ServerGone, ServerSpec, ToolPool, discover, open_session

pytestmark = pytest.mark.anyio

ECHO = "python -m mcprl.servers.echo_env"


async def test_discover_lists_tools_as_openai_schemas():
    toolset = await discover(ServerSpec.parse("python -m mcprl.servers.inventory"))
    assert toolset.names() == ["list_categories", "list_items", "search_items", "get_item", "update_stock"]
    update = next(t for t in toolset.tools if t["function"]["name"] == "update_stock")
    assert update["function"]["parameters"]["required"] == ["sku", "change"]
    assert update["function"]["parameters"]["properties"]["change"]["type"] == "integer"
    assert toolset.server_info["name"] == "inventory" and toolset.mcp_tools[0]["inputSchema"]["type"] == "object"
    assert [(r["uri"], r["mimeType"]) for r in toolset.resources] == [("inventory://categories", "text/plain")]
    assert [(p["name"], [a["name"] for a in p["arguments"]]) for p in toolset.prompts] == [
        ("restock_plan", ["category"])
    ]


async def test_the_tool_hash_is_stable_across_connections_and_follows_the_filter():
    target = "python -m mcprl.servers.bare_jsonrpc --tools 4"
    first, second = await discover(ServerSpec.parse(target)), await discover(ServerSpec.parse(target))
    assert first.hash == second.hash
    filtered = await discover(ServerSpec.parse(target, deny=["tool_3"]))
    assert filtered.names() == ["tool_0", "tool_1", "tool_2"] and filtered.hash != first.hash


async def test_discover_follows_pagination_cursors():
    toolset = await discover(ServerSpec.parse("python -m mcprl.servers.bare_jsonrpc --tools 25 --page-size 10"))
    assert toolset.names() == [f"tool_{i}" for i in range(25)]
    async with open_session(toolset.spec) as session:
        assert (await session.call("tool_17", {"x": 1})).text == "17"


async def test_call_outcomes_for_results_huge_results_and_every_error_kind():
    spec = ServerSpec.parse(ECHO, call_timeout=1, deny=["crash"], max_result_chars=1000)
    async with open_session(spec) as session:
        assert [t["name"] for t in session.mcp_tools if t["name"] == "crash"] == []
        ok = await session.call("sleep", '{"seconds": 0}')
        assert (ok.text, ok.is_error, ok.error_kind) == ("slept 0.0 s", False, None) and ok.latency_s > 0
        assert (await session.call("picture")).text == "[image/png, 70 B]"

        outcomes = {
            "tool_error": await session.call("fail", {"message": "the disk is full"}),
            "unknown_tool": await session.call("format_disk", {}),
            "denied": await session.call("crash", {}),
            "bad_arguments": await session.call("sleep", {"seconds": "soon"}),
            "timeout": await session.call("sleep", {"seconds": 10}),
        }
        for kind, outcome in outcomes.items():
            assert (outcome.is_error, outcome.error_kind) == (True, kind), outcome
            assert outcome.text.startswith("Error")
        assert "the disk is full" in outcomes["tool_error"].text
        assert "available tools: environment, process_id" in outcomes["unknown_tool"].text
        assert "at 'seconds': 'soon' is not of type 'number'" in outcomes["bad_arguments"].text
        assert 1 <= outcomes["timeout"].latency_s < 3
        for arguments, message in [
            ("{not json", "not valid JSON"),
            ("[1, 2]", "must be a JSON object"),
            ({}, "'seconds' is a required property"),
        ]:
            outcome = await session.call("sleep", arguments)
            assert outcome.error_kind == "bad_arguments" and message in outcome.text

        # Huge results are truncated, and their structured content dropped; small ones keep it.
        huge = await session.call("huge", {"n_chars": 300_000})
        assert huge.text == "x" * 1000 + "\n[... truncated: 299000 more characters]"
        assert huge.structured is None and not huge.is_error
        assert (await session.call("huge", {"n_chars": 10})).structured == {"result": "x" * 10}

        # After all that, the session still works.
        assert (await session.call("sleep", {"seconds": 0})).text == "slept 0.0 s"


async def test_json_rpc_errors_are_protocol_outcomes():
    async with open_session(ServerSpec.parse("python -m mcprl.servers.bare_jsonrpc --tools 1 --explode")) as session:
        outcome = await session.call("explode", {})
    assert (outcome.is_error, outcome.error_kind) == (True, "protocol")
    assert "the tool exploded" in outcome.text


async def test_stdio_servers_get_a_minimal_environment_and_no_secrets(monkeypatch):
    monkeypatch.setenv("MCPRL_TEST_API_TOKEN", "do-not-leak-123456")
    spec = ServerSpec.parse(ECHO, env=["GREETING=hello"])
    async with open_session(spec) as session:
        env = json.loads((await session.call("environment")).text)
    assert env["GREETING"] == "hello" and env["PATH"] == os.environ["PATH"]
    assert "MCPRL_TEST_API_TOKEN" not in env and "do-not-leak-123456" not in json.dumps(env)
    # LC_CTYPE: set by Python's own locale coercion inside the server process.
    assert set(env) <= set(get_default_environment()) | {"GREETING", "LC_CTYPE"}


async def test_stdio_servers_run_in_a_run_scoped_directory(tmp_path):
    async with open_session(ServerSpec.parse(ECHO)) as session:
        scratch = Path((await session.call("working_directory")).text)
        assert scratch.is_dir() and scratch.name.startswith("mcprl-server-")
    assert not scratch.exists()  # removed with the session
    async with open_session(ServerSpec.parse(ECHO), workdir=tmp_path) as session:
        assert (await session.call("working_directory")).text == str(tmp_path)
    (tmp_path / "given").mkdir()
    async with open_session(ServerSpec.parse(ECHO, cwd=str(tmp_path / "given"))) as session:
        assert (await session.call("working_directory")).text == str(tmp_path / "given")
    with pytest.raises(UserError, match=r"working directory .* does not exist"):
        await discover(ServerSpec.parse(ECHO, cwd=str(tmp_path / "missing")))


async def test_paths_in_the_command_mean_what_they_mean_where_it_was_given(tmp_path, monkeypatch):
    """The server runs in a directory of the run's own, not where `python server.py` was typed."""
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    script = Path(__file__).resolve().parents[2] / "servers" / "bare_jsonrpc.py"
    (project / "server.py").write_text(script.read_text())
    (project / "bin" / "serve").write_text(f'#!/bin/sh\nexec {sys.executable} {project / "server.py"} "$@"\n')
    (project / "bin" / "serve").chmod(0o755)
    monkeypatch.chdir(project)
    for target in ("python server.py --tools 2", "bin/serve --tools 2"):
        spec = ServerSpec.parse(target)
        assert spec.command[0] != "bin/serve" and str(project) in " ".join(spec.command)
        assert (await discover(spec, workdir=tmp_path)).names() == ["tool_0", "tool_1"]
    # a bare program name is looked up in PATH, as a shell would; a word naming nothing here, or a
    # directory by its bare name, stays a word; a directory written as a relative path does not
    assert ServerSpec.parse("serve -m server --tools 2").command == ["serve", "-m", "server", "--tools", "2"]
    assert ServerSpec.parse("docker run -i bin").command[1:] == ["run", "-i", "bin"]
    assert ServerSpec.parse("files ./bin .").command[1:] == [str(project / "bin"), str(project)]
    # a module of this directory is not found from the run's own: the error says where it ran and what fixes it
    with pytest.raises(
        UserError,
        match=r"No module named server.*by hand to see why \(it started in a directory of the run's own, "
        r"not here: --cwd DIR starts it in DIR\)$",
    ):
        await discover(ServerSpec.parse("python -m server --tools 2"), workdir=tmp_path)
    assert (await discover(ServerSpec.parse("python -m server --tools 2", cwd="."), workdir=tmp_path)).names() == [
        "tool_0",
        "tool_1",
    ]


async def test_a_server_that_crashes_mid_call_raises_server_gone_promptly_and_closes_quietly():
    async with open_session(ServerSpec.parse(ECHO, call_timeout=30)) as session:
        started = time.monotonic()
        with pytest.raises(ServerGone, match="the server process exited") as gone:
            await session.call("crash")
        assert time.monotonic() - started < 3
        with pytest.raises(ServerGone):
            await session.call("environment")
        assert session.gone == gone.value.reason
    # leaving the block above raised nothing


async def test_a_server_killed_from_outside_during_a_call_raises_server_gone_promptly():
    async with open_session(ServerSpec.parse(ECHO, call_timeout=30)) as session:
        pid = int((await session.call("process_id")).text)
        started = time.monotonic()
        threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
        with pytest.raises(ServerGone):
            await session.call("sleep", {"seconds": 20})
        assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    ("target", "options", "message"),
    [
        ("no-such-command-xyz --flag", {}, "command 'no-such-command-xyz' not found"),
        ("python -m mcprl.servers.no_such_server", {}, "exited before completing the MCP handshake .*No module named"),
        ("python -m mcprl.servers.bare_jsonrpc --tools 0", {}, "the server offers no tools"),
        ("python -c 'print(12345)'", {}, "not MCP JSON-RPC"),
        ("python -c 'import time; time.sleep(60)'", {"connect_timeout": 1}, "no MCP handshake within 1 s"),
        (ECHO, {"allow": ["nothing_*"]}, "--allow/--deny hide all of its tools"),
    ],
)
async def test_connection_problems_are_one_line_user_errors(target, options, message):
    started = time.monotonic()
    with pytest.raises(UserError, match=message) as e:
        await discover(ServerSpec.parse(target, **options))
    assert "\n" not in str(e.value) and str(e.value).startswith(target)
    assert time.monotonic() - started < 8


async def test_pool_gives_each_rollout_its_own_stdio_server():
    async with ToolPool(ServerSpec.parse(ECHO)) as pool:
        assert pool.per_rollout and pool.toolset is not None and "sleep" in pool.toolset.names()
        pids: list[str] = []

        async def rollout() -> None:
            async with pool.session() as session:
                pids.append((await session.call("process_id")).text)

        async with anyio.create_task_group() as tg:
            tg.start_soon(rollout)
            tg.start_soon(rollout)
        assert len(set(pids)) == 2


@pytest.mark.parametrize("per_rollout", [True, False])
async def test_the_per_rollout_setting_decides_whether_rollouts_share_a_process(per_rollout):
    """`--no-per-rollout` (`server.per_rollout = false`) gives every rollout the same stdio server."""
    from mcprl.tools.config import ServerConfig

    spec = ServerConfig(target=ECHO, per_rollout=per_rollout).spec()
    async with ToolPool(spec) as pool:
        pids = []
        for _ in range(2):
            async with pool.session() as session:
                pids.append((await session.call("process_id")).text)
    assert len(set(pids)) == (2 if per_rollout else 1)


async def test_shared_pool_session_reconnects_after_the_server_died():
    async with ToolPool(ServerSpec.parse(ECHO), per_rollout=False) as pool:
        async with pool.session() as s1, pool.session() as s2:
            assert s1 is s2
            first = (await s1.call("process_id")).text
            with pytest.raises(ServerGone):
                await s1.call("crash")
        async with pool.session() as s3:
            assert s3 is not s1 and (await s3.call("process_id")).text != first


async def test_per_rollout_servers_start_a_few_at_a_time(tmp_path):
    """Sixteen rollouts of a step start their servers at once; on a small machine every one then
    misses the handshake timeout. The pool starts as many at a time as there are cores (at least 2)."""
    import sys

    spec = ServerSpec.parse(
        f"{sys.executable} {Path(__file__).resolve().parents[1] / 'data' / 'slow_start_server.py'}",
        env=[f"MARK_DIR={tmp_path}"],
        private_copy=False,  # (the folder the servers mark in is the test's: no copy of it a session)
    )
    pool = ToolPool(spec, per_rollout=True)
    answers = []

    async def rollout() -> None:
        async with pool.session() as session:
            answers.append((await session.call("ping", {})).text)

    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(rollout)
    assert answers == ["pong"] * 6
    most = max(int(p.read_text()) for p in tmp_path.glob("*.concurrent"))
    assert most <= max(2, os.cpu_count() or 2) < 6
