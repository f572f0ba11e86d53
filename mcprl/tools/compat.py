"""The few MCP SDK names that differ between mcp 1.x (>=1.24) and 2.x, resolved once here.

Everything else mcprl uses is the same in both: `ClientSession` (initialize / list_* with
`params=PaginatedRequestParams` / call_tool / `message_handler`), `stdio_client` with
`StdioServerParameters` and `get_default_environment`, `sse_client(url, headers, timeout, ...)`,
`create_mcp_http_client(headers=...)`, and result models that dump to the same wire JSON
(`model_dump(by_alias=True, mode="json")`; attribute names differ: camelCase in 1.x, snake_case in 2.x).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.client.sse import sse_client
from mcp.shared._httpx_utils import create_mcp_http_client

try:
    from mcp.shared.exceptions import MCPError
except ImportError:  # mcp 1.x
    from mcp.shared.exceptions import McpError as MCPError  # type: ignore[no-redef,attr-defined]

try:  # mcp 2.x and late 1.x: the client is passed in
    from mcp.client.streamable_http import streamable_http_client

    _LEGACY_HTTP = False
except ImportError:  # early 1.x: only streamablehttp_client(url, headers=...)
    from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined]

    _LEGACY_HTTP = True

# mcp 2.x fails any streamable-HTTP response event over 1 MiB by default; a big tool result should
# reach us (to be truncated), so allow more, still bounded. (1.x has no such limit.)
MAX_HTTP_EVENT_BYTES = 64 * 1024 * 1024
_EVENT_LIMIT = (
    {"max_sse_event_size": MAX_HTTP_EVENT_BYTES}
    if not _LEGACY_HTTP and "max_sse_event_size" in inspect.signature(streamable_http_client).parameters
    else {}
)

__all__ = ["REQUEST_TIMEOUT_CODES", "TRANSPORT_FAILURES", "MCPError", "sse", "streamable_http"]

# JSON-RPC codes for "timed out": 2.x uses -32001 (as the TypeScript SDK), 1.x HTTP's 408.
REQUEST_TIMEOUT_CODES = frozenset({-32001, 408})


def _http_transport_errors() -> tuple[type[BaseException], ...]:
    """httpx (1.x) and httpx2 (2.x) raise their own TransportError family; either may be installed."""
    found: list[type[BaseException]] = []
    for module in ("httpx", "httpx2"):
        with contextlib.suppress(ImportError, AttributeError):
            found.append(importlib.import_module(module).TransportError)
    return tuple(found)


# Exceptions meaning the connection itself is gone (not that one request failed).
TRANSPORT_FAILURES: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    *_http_transport_errors(),
)


@asynccontextmanager
async def streamable_http(url: str, headers: dict[str, str], timeout: float) -> AsyncIterator[tuple[Any, Any]]:
    """(read_stream, write_stream) of a streamable HTTP connection, on either SDK generation."""
    if _LEGACY_HTTP:
        async with streamablehttp_client(url, headers=headers, timeout=timeout) as (read, write, _):
            yield read, write
        return
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url, http_client=client, **_EVENT_LIMIT) as streams,
    ):
        yield streams[0], streams[1]


@asynccontextmanager
async def sse(url: str, headers: dict[str, str], timeout: float) -> AsyncIterator[tuple[Any, Any]]:
    async with sse_client(url, headers=headers, timeout=timeout) as streams:
        yield streams[0], streams[1]


# The SDKs log transport failures with tracebacks at ERROR level; mcprl reports them itself (as
# UserError / ServerGone / error results), so without an application logging setup they stay quiet.
for _name in ("mcp", "client", "httpx", "httpx2"):
    logging.getLogger(_name).addHandler(logging.NullHandler())
