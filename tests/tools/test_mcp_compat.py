"""Other generations and languages: shipped servers under mcp 1.x, our client under mcp 1.x, and a
Node server (`@modelcontextprotocol/server-memory`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from mcprl.tools import ServerGone, ServerSpec, discover, open_session

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.anyio
async def test_a_server_on_mcp_1x_works_with_our_client_over_stdio(mcp1_python):
    spec = ServerSpec.parse(f"{mcp1_python} -m mcprl.servers.inventory", env={"PYTHONPATH": str(REPO)})
    toolset = await discover(spec)
    assert toolset.names() == ["list_categories", "list_items", "search_items", "get_item", "update_stock"]
    assert toolset.tools == (await discover(ServerSpec.parse("python -m mcprl.servers.inventory"))).tools
    async with open_session(spec) as session:
        assert "SKU-" in (await session.call("search_items", {"query": "paint"})).text
        missing = await session.call("get_item", {"sku": "SKU-0000"})
        assert missing.error_kind == "tool_error" and "no item with SKU 'SKU-0000'" in missing.text


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_server_on_mcp_1x_works_with_our_client_over_http(mcp1_python, serve_http, transport):
    server = serve_http("echo_env", transport, python=str(mcp1_python))
    async with open_session(ServerSpec.parse(server.url, call_timeout=30)) as session:
        assert (await session.call("fail", {"message": "boom"})).text == "Error executing tool fail: boom"
        assert (await session.call("picture")).text == "[image/png, 70 B]"
        server.kill()
        started = time.monotonic()
        with pytest.raises(ServerGone):
            await session.call("sleep", {"seconds": 1})
        assert time.monotonic() - started < 5


CLIENT_UNDER_MCP1 = textwrap.dedent(
    """
    import json, sys, anyio
    import mcp.server.fastmcp  # this really is mcp 1.x
    from mcprl.tools import ServerGone, ServerSpec, discover, open_session

    async def main(url):
        out = {}
        repo = sys.argv[2]
        stdio = ServerSpec.parse(sys.executable + " -m mcprl.servers.echo_env", env={"PYTHONPATH": repo}, call_timeout=1)
        paged = ServerSpec.parse("python -m mcprl.servers.bare_jsonrpc --tools 12 --page-size 5", cwd=repo)
        out["pages"] = len((await discover(paged)).tools)
        async with open_session(stdio) as s:
            out["kinds"] = [(await s.call(*c)).error_kind for c in
                            [("fail", {"message": "x"}), ("sleep", {"seconds": 5}), ("sleep", {}), ("nope", {})]]
            try:
                await s.call("crash")
            except ServerGone:
                out["gone"] = True
        async with open_session(ServerSpec.parse(url)) as s:
            out["http"] = (await s.call("list_categories")).text
        print(json.dumps(out))

    anyio.run(main, sys.argv[1])
    """  # noqa: E501 (the client's code, as it runs)
)


def test_our_client_works_when_the_installed_sdk_is_mcp_1x(mcp1_python, serve_http):
    server = serve_http("inventory", "http")  # served by mcp 2.x, the other way round
    done = subprocess.run(
        [str(mcp1_python), "-c", CLIENT_UNDER_MCP1, server.url, str(REPO)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {
        "pages": 12,
        "kinds": ["tool_error", "timeout", "bad_arguments", "unknown_tool"],
        "gone": True,
        "http": "tools, electrical, plumbing, garden, paint, fasteners",
    }


@pytest.mark.integration
@pytest.mark.anyio
async def test_the_node_memory_server(tmp_path):
    if shutil.which("npx") is None:
        pytest.skip("npx is not installed")
    probe = subprocess.run(
        ["npm", "view", "@modelcontextprotocol/server-memory", "version"], capture_output=True, text=True, timeout=60
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot fetch @modelcontextprotocol/server-memory from npm: {probe.stderr.strip()[-200:]}")
    spec = ServerSpec.parse(
        "npx -y @modelcontextprotocol/server-memory",
        connect_timeout=180,
        env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
    )
    toolset = await discover(spec)
    assert {"create_entities", "read_graph", "search_nodes"} <= set(toolset.names())
    async with open_session(spec) as session:
        created = await session.call(
            "create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": ["programmer"]}]}
        )
        assert not created.is_error, created.text
        graph = await session.call("read_graph", "{}")
        assert json.loads(graph.text)["entities"][0]["name"] == "Ada"
        bad = await session.call("create_entities", {"entities": "Ada"})
        assert bad.error_kind == "bad_arguments"
