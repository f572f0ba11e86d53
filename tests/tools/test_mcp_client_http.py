"""The MCP client over streamable HTTP and SSE, against shipped servers run as subprocesses."""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

import anyio
import pytest

from mcprl.errors import UserError
from mcprl.tools import ServerGone, ServerSpec, ToolPool, discover, open_session

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_discover_and_call_over_http_and_sse(serve_http, transport):
    server = serve_http("inventory", transport)
    spec = ServerSpec.parse(server.url, headers=["Authorization: Bearer not-checked-here"])
    assert spec.transport == transport
    toolset = await discover(spec)
    assert toolset.names() == ["list_categories", "list_items", "search_items", "get_item", "update_stock"]
    async with open_session(spec) as session:
        assert (await session.call("list_categories")).text.startswith("tools, electrical, plumbing")
        missing = await session.call("get_item", {"sku": "SKU-0000"})
        assert missing.error_kind == "tool_error" and "no item with SKU 'SKU-0000'" in missing.text
        assert (await session.call("get_item", {})).error_kind == "bad_arguments"


async def test_results_bigger_than_the_sdks_default_event_limit_arrive_truncated(serve_http):
    server = serve_http("echo_env", "http")
    async with open_session(ServerSpec.parse(server.url, max_result_chars=100)) as session:
        outcome = await session.call("huge", {"n_chars": 3_000_000})  # mcp 2.x refuses events over 1 MiB by default
        assert outcome.text == "x" * 100 + "\n[... truncated: 2999900 more characters]"
        assert (await session.call("sleep", {"seconds": 0})).text == "slept 0.0 s"


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_stopped_server_makes_calls_raise_server_gone_promptly(serve_http, transport):
    server = serve_http("echo_env", transport)
    async with open_session(ServerSpec.parse(server.url, call_timeout=30)) as session:
        assert (await session.call("sleep", {"seconds": 0})).text == "slept 0.0 s"
        started = time.monotonic()
        threading.Timer(0.3, server.kill).start()
        with pytest.raises(ServerGone, match="lost the connection") as gone:
            await session.call("sleep", {"seconds": 20})  # in flight when the server dies
        assert time.monotonic() - started < 5
        with pytest.raises(ServerGone):
            await session.call("process_id")
        assert session.gone == gone.value.reason


async def test_wrong_transport_and_bad_urls_are_user_errors_naming_the_fix(serve_http):
    sse_server, http_server = serve_http("calculator", "sse"), serve_http("calculator", "http")
    base = f"http://{urlsplit(http_server.url).netloc}"
    cases = [
        (ServerSpec.parse(sse_server.url, transport="http"), "this is an SSE endpoint.*use --transport sse"),
        (ServerSpec.parse(http_server.url, transport="sse"), "speaks streamable HTTP, not SSE; use --transport http"),
        (ServerSpec.parse(f"{base}/nope"), r"nothing at /nope \(HTTP 404\); check the path"),
        (ServerSpec.parse("http://127.0.0.1:9/mcp"), r"cannot connect \(.*\); check that the server is running"),
    ]
    for spec, message in cases:
        with pytest.raises(UserError, match=message) as e:
            await discover(spec)
        assert "\n" not in str(e.value) and str(e.value).startswith(spec.target)


async def test_shared_http_session_is_reused_and_reconnects_after_a_restart(serve_http):
    server = serve_http("echo_env", "http")
    port = urlsplit(server.url).port
    async with ToolPool(ServerSpec.parse(server.url, call_timeout=10)) as pool:
        assert pool.per_rollout is False
        pids: list[str] = []

        async def rollout() -> None:
            async with pool.session() as session:
                pids.append((await session.call("process_id")).text)

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(rollout)
        assert len(pids) == 3 and len(set(pids)) == 1

        server.kill()
        with pytest.raises(ServerGone):
            async with pool.session() as session:
                await session.call("process_id")
        with pytest.raises(ServerGone, match="could not reconnect"):
            async with pool.session():
                pass

        serve_http("echo_env", "http", port=port)
        async with pool.session() as session:
            assert (await session.call("process_id")).text not in pids
