"""Opening an MCP connection for a `ServerSpec`, and saying in one line why it failed.

`connect(spec, workdir)` yields an initialized `Connection`. Failing to connect is a `UserError`
naming the spec and the fix: a missing command, a server that exits or never answers, an
unreachable URL, or the wrong transport (found by probing the URL both ways).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import TaskStatus
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CONNECTION_CLOSED, Implementation

from mcprl.errors import UserError, clip
from mcprl.tools import compat
from mcprl.tools.spec import ServerSpec
from mcprl.version import __version__

CLOSE_TIMEOUT = 5.0  # closing never waits longer on a hung server (stdio shutdown bounds itself)
PROBE_TIMEOUT = 5.0
GARBAGE_GRACE_S = 3.0  # after an unreadable line on stdout, how long the handshake may still take
STDERR_TAIL_BYTES = 4000
CLIENT_INFO = Implementation(name="mcprl", version=__version__)


def leaves(error: BaseException) -> Iterator[BaseException]:
    """The individual exceptions inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from leaves(inner)
    else:
        yield error


def is_connection_lost(error: BaseException) -> bool:
    if isinstance(error, compat.MCPError):
        return error.error.code == CONNECTION_CLOSED
    return isinstance(error, compat.TRANSPORT_FAILURES)


class Connection:
    """An initialized `ClientSession` and what is known about its transport: the stdio server's
    stderr, the last transport-level exception the session saw, and whether it has ended."""

    def __init__(self, spec: ServerSpec, errlog: IO[str] | None) -> None:
        self.spec = spec
        self.errlog = errlog
        self.stream_error: Exception | None = None
        self.session: Any = None  # ClientSession (mcp 1.x and 2.x differ in type details)
        self.initialize_result: dict[str, Any] = {}
        self.ended = False  # the transport has shut down (the server died, or we closed it)
        self.started = False  # through the handshake
        self.unreadable = anyio.Event()  # set when the server sends something that is not a JSON-RPC message
        self._closing = anyio.Event()
        self._scope = anyio.CancelScope()

    async def on_message(self, message: Any) -> None:
        """ClientSession's message handler: notes transport exceptions for the error messages. The
        SDK drops what it cannot read and waits on, so a server writing only garbage would be
        reported after the whole connect timeout: the handshake gets GARBAGE_GRACE_S more."""
        if isinstance(message, Exception):
            self.stream_error = message
            self.unreadable.set()
            if not self.started:
                self._scope.deadline = min(self._scope.deadline, anyio.current_time() + GARBAGE_GRACE_S)

    def stderr_tail(self) -> str:
        """The last non-empty line the stdio server wrote to stderr (its error, usually)."""
        if self.errlog is None:
            return ""
        self.errlog.flush()
        size = self.errlog.seek(0, os.SEEK_END)
        self.errlog.seek(max(0, size - STDERR_TAIL_BYTES))
        lines = [line.strip() for line in self.errlog.read().splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""

    def lost_reason(self, error: BaseException | None = None) -> str:
        """Why the connection died, for `ServerGone`."""
        if self.spec.transport == "stdio":
            tail = self.stderr_tail()
            return f"{self.spec.target}: the server process exited" + (f" (stderr: {tail})" if tail else "")
        cause = self.stream_error or error
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        return f"{self.spec.target}: lost the connection to the server{detail}"

    async def run(self, workdir: Path, *, task_status: TaskStatus[None]) -> None:
        """Own the SDK's transport and session for the connection's life, in a task of its own.

        The SDK's transports cancel the task that entered them when the server dies; here that
        is this task, never the caller's. Failing before `started()` (including not getting
        through the handshake within the connect timeout) is a UserError, raised to the caller by
        `TaskGroup.start`; failing after is recorded, never raised."""
        started = False
        with self._scope:
            self._scope.deadline = anyio.current_time() + self.spec.connect_timeout
            try:
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(_streams(self.spec, workdir, self.errlog))
                    self.session = await stack.enter_async_context(
                        ClientSession(read, write, message_handler=self.on_message, client_info=CLIENT_INFO)
                    )
                    result = await self.session.initialize()
                    self.initialize_result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                    self._scope.deadline = math.inf
                    task_status.started()
                    started = self.started = True
                    await self._closing.wait()
            except BaseException as e:
                errors = list(leaves(e))
                real = [x for x in errors if isinstance(x, Exception) and not _is_cancellation(x)]
                if any(isinstance(x, KeyboardInterrupt | SystemExit) for x in errors) or not real:
                    raise  # a cancellation (ours is absorbed by self._scope) or an interrupt
                if not started:
                    raise await _diagnose(self, real) from None
                self.stream_error = self.stream_error or real[0]  # the teardown of a dead transport
            finally:
                self.ended = True
        if not started:  # the connect deadline ran out
            raise await _diagnose(self, [TimeoutError()])

    def close(self) -> None:
        """Ask `run` to shut the transport down, within CLOSE_TIMEOUT."""
        self._closing.set()
        self._scope.deadline = anyio.current_time() + CLOSE_TIMEOUT


@asynccontextmanager
async def connect(spec: ServerSpec, workdir: Path) -> AsyncIterator[Connection]:
    """An initialized connection; a `UserError` naming the fix when there is none to be had."""
    with ExitStack() as files:
        errlog = None
        if spec.transport == "stdio":  # the server's stderr, kept to explain why it died
            errlog = files.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
        conn = Connection(spec, errlog)
        raised: BaseException | None = None
        async with anyio.create_task_group() as tg:
            # Exceptions are re-raised below, outside the task group, so that it does not wrap them.
            try:
                await tg.start(conn.run, workdir)
            except BaseException as e:
                raised = e
            else:
                try:
                    yield conn
                except BaseException as e:
                    raised = e
                finally:
                    conn.close()
        if raised is not None:
            raise raised


def _is_cancellation(error: BaseException) -> bool:
    return isinstance(error, anyio.get_cancelled_exc_class())


def _streams(spec: ServerSpec, workdir: Path, errlog: IO[str] | None) -> Any:
    if spec.transport == "http":
        return compat.streamable_http(spec.url or "", spec.headers, spec.connect_timeout)
    if spec.transport == "sse":
        return compat.sse(spec.url or "", spec.headers, spec.connect_timeout)
    cwd = Path(spec.cwd) if spec.cwd else workdir
    if not cwd.is_dir():
        raise UserError(f"{spec.target}: working directory {cwd} does not exist; create it or fix --cwd")
    params = StdioServerParameters(command=spec.command[0], args=spec.command[1:], env=spec.env or None, cwd=cwd)
    assert errlog is not None
    return stdio_client(params, errlog=errlog)


async def _diagnose(conn: Connection, errors: list[BaseException]) -> UserError:
    spec = conn.spec
    for e in errors:
        if isinstance(e, UserError):
            return e
    timed_out = any(isinstance(e, TimeoutError) for e in errors)
    if spec.transport == "stdio":
        return _diagnose_stdio(conn, errors, timed_out)
    unreachable = next(
        (e for e in errors if isinstance(e, compat.TRANSPORT_FAILURES) and "connect" in type(e).__name__.lower()), None
    )
    if unreachable is not None:
        return UserError(
            f"{spec.target}: cannot connect ({unreachable}); "
            "check that the server is running and the host and port are right"
        )
    hint = await _probe_http(spec)
    if hint:
        return UserError(f"{spec.target}: {hint}")
    if timed_out:
        return UserError(
            f"{spec.target}: no MCP handshake within {spec.connect_timeout:g} s; check the URL and --transport"
        )
    first = next((e for e in errors if not _is_cancellation(e)), errors[0])
    return UserError(
        f"{spec.target}: the MCP handshake failed ({type(first).__name__}: {first}); check the URL and --transport"
    )


def _diagnose_stdio(conn: Connection, errors: list[BaseException], timed_out: bool) -> UserError:
    spec, program = conn.spec, conn.spec.command[0]
    if any(isinstance(e, FileNotFoundError) for e in errors):
        return UserError(
            f"{spec.target}: command {program!r} not found; check the spelling, install it, or give its full path"
        )
    if any(isinstance(e, PermissionError) for e in errors):
        return UserError(
            f"{spec.target}: {program!r} cannot be executed (permission denied); check the path and its permissions"
        )
    tail = conn.stderr_tail()
    said = f" (stderr: {tail})" if tail else ""
    if conn.stream_error is not None and not is_connection_lost(conn.stream_error):
        return UserError(
            f"{spec.target}: the server wrote something that is not MCP JSON-RPC to stdout "
            f"({clip(str(conn.stream_error), 200)}){said}; is this an MCP stdio server (logs go to stderr)?"
        )
    # A server that needs the directory it was given in (`python -m my_server`, `uv run ...` of a
    # project) fails in the run's own: say so, since by hand, there, it works.
    where = "" if spec.cwd else " (it started in a directory of the run's own, not here: --cwd DIR starts it in DIR)"
    if timed_out:
        return UserError(
            f"{spec.target}: no MCP handshake within {spec.connect_timeout:g} s{said}; "
            f"check that the command starts an MCP server on stdio{where}"
        )
    return UserError(
        f"{spec.target}: the server exited before completing the MCP handshake{said}; "
        f"run the command by hand to see why{where}"
    )


async def _probe_http(spec: ServerSpec) -> str:
    """Ask the URL directly what it is, to name the fix: credentials, path, or the other transport.
    Only status and content type are read, so a streaming answer cannot hold the probe up."""
    url = spec.url or ""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "mcprl", "version": "0"},
        },
    }
    try:
        with anyio.fail_after(min(PROBE_TIMEOUT, spec.connect_timeout)):
            async with compat.create_mcp_http_client(headers=spec.headers) as client:
                async with client.stream("GET", url, headers={"Accept": "text/event-stream"}) as got:
                    get_status, get_type = got.status_code, got.headers.get("content-type", "")
                accept = {"Accept": "application/json, text/event-stream"}
                async with client.stream("POST", url, json=initialize, headers=accept) as posted:
                    post_status, post_type = posted.status_code, posted.headers.get("content-type", "")
    except Exception:
        return ""
    if 401 in (get_status, post_status) or 403 in (get_status, post_status):
        return "the server refuses the request without credentials (HTTP 401/403); " + (
            "pass --header 'Authorization: Bearer ...'"
        )
    is_sse = get_status == 200 and get_type.startswith("text/event-stream")
    is_streamable = post_status == 200 and post_type.split(";")[0] in ("application/json", "text/event-stream")
    if spec.transport == "http" and is_sse and not is_streamable:
        return "this is an SSE endpoint, not streamable HTTP; use --transport sse"
    if spec.transport == "sse" and is_streamable and not is_sse:
        return "this endpoint speaks streamable HTTP, not SSE; use --transport http"
    if get_status == 404 and post_status == 404:
        path = urlsplit(url).path or "/"
        return f"nothing at {path} (HTTP 404); check the path (streamable HTTP is usually at /mcp, SSE at /sse)"
    return ""
