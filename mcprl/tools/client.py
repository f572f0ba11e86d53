"""Talking to an MCP server: `discover` what it offers, `open_session` to call its tools.

    toolset = await discover(spec)                  # tools as OpenAI schemas, + raw MCP, hash
    async with open_session(spec) as session:      # one MCP session (a new stdio process / HTTP session)
        outcome = await session.call("add", {"a": 1, "b": 2})

`session.call` never raises for anything the model did wrong or the tool reported: those are
`ToolOutcome(is_error=True, error_kind=...)` with a short message for the model. It raises
`ServerGone` only when the transport is dead, so the rollout can be recorded as failed.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import jsonschema
from mcp.types import PaginatedRequestParams
from pydantic import BaseModel, Field, ValidationError

from mcprl.errors import UserError, clip, first_problem
from mcprl.tools import compat
from mcprl.tools.cassette import Replayed, ToolResult
from mcprl.tools.content import ContentBlock, parse_blocks
from mcprl.tools.convert import render, reports_error, schema_problem, to_openai, tools_hash
from mcprl.tools.copies import HOME_PREFIX, WORKDIR_PREFIX, PathMap, copied
from mcprl.tools.spec import ServerSpec, private_home_env
from mcprl.tools.transport import Connection, connect, is_connection_lost
from mcprl.types import ToolSchema

ErrorKind = Literal["tool_error", "protocol", "unknown_tool", "bad_arguments", "timeout", "denied"]
MAX_PAGES = 1000  # a server whose cursors never end cannot hang a listing
PING_TIMEOUT = 5.0


class ServerGone(Exception):
    """The transport is dead (process exited, HTTP server down, connection reset)."""

    label = "MCP server gone"  # how a rollout it ends names the failure

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ToolOutcome(BaseModel):
    """What a tool call gave the model (`text`; every error text starts with "Error"), and what the server
    sent: its content blocks, typed, and the text of those that are text (`data_text`), which is what
    reading the result as data (grounding) reads, never a placeholder the client wrote for an image."""

    text: str
    content: list[ContentBlock] = Field(
        default_factory=list,
        exclude=True,
        description="the result's content blocks as the server sent them; [] when the call never reached it",
    )
    data_text: str = Field(
        default="",
        description="the text the server wrote: its text blocks and text resources (else its structured content as "
        "JSON), cut where `text` is cut; no placeholder of ours for an image, audio, a blob or a link",
    )
    is_error: bool = False
    error_kind: ErrorKind | None = None
    structured: Any = Field(default=None, description="the result's structured content, when small enough")
    latency_s: float = 0.0
    result: ToolResult | None = Field(
        default=None, exclude=True, description="the server's answer as it sent it; None when the call never reached it"
    )
    replayed: Replayed | None = Field(default=None, description="answered from a cassette or a step's read cache: how")


class ToolSet(BaseModel):
    """What a server offers, after the spec's allow/deny filter. `spec` may hold secrets
    (headers, env): pass dumps through `redact(..., secret_values(spec))` before writing them."""

    spec: ServerSpec
    tools: list[ToolSchema] = Field(description="OpenAI function schemas, for the model")
    mcp_tools: list[dict[str, Any]] = Field(description="the MCP tool definitions as the server sent them")
    resources: list[dict[str, Any]] = Field(default_factory=list)
    resource_templates: list[dict[str, Any]] = Field(default_factory=list)
    prompts: list[dict[str, Any]] = Field(default_factory=list)
    server_info: dict[str, Any] = Field(default_factory=dict)
    hash: str = Field(description="stable hash of `tools`, for run metadata")

    def names(self) -> list[str]:
        return [t["name"] for t in self.mcp_tools]

    def hiding(self, names: set[str]) -> ToolSet:
        """This set with `names` denied as `--deny` would: not offered, and a call to one refused."""
        spec = self.spec.model_copy(update={"deny": [*self.spec.deny, *sorted(names)]})
        tools = [t for t in self.tools if spec.allows(t["function"]["name"])]
        return self.model_copy(
            update={
                "spec": spec,
                "tools": tools,
                "mcp_tools": [t for t in self.mcp_tools if spec.allows(t["name"])],
                "hash": tools_hash(tools),
            }
        )


def _error(kind: ErrorKind, message: str, started: float) -> ToolOutcome:
    """An error outcome; its message cut to MAX_MESSAGE characters (it can quote a schema or an
    argument, and it goes into the model's context)."""
    return ToolOutcome(
        text=f"Error: {clip(message)}", is_error=True, error_kind=kind, latency_s=time.perf_counter() - started
    )


def schema_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator | None:
    """A validator for a tool's input schema, or None when the schema itself is broken (not JSON
    Schema, a `$ref` cycle, nested too deep: the server then judges the arguments, `mcprl
    validate` reports the schema)."""
    if schema_problem(schema) is not None:
        return None
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except (jsonschema.SchemaError, RecursionError):
        return None
    return cls(schema)


class ToolSession:
    """One MCP session. Use it from `open_session` or `ToolPool.session`."""

    workdir: Path | None = None  # the folder of the run's own a stdio server runs in (where it has no `--cwd`)

    def __init__(
        self,
        conn: Connection,
        mcp_tools: list[dict[str, Any]],
        spec: ServerSpec | None = None,
        paths: PathMap | None = None,
        workdir: Path | None = None,
    ) -> None:
        """`mcp_tools`: everything the server listed; the model sees only what the spec allows. `spec`: the server
        as the user named it, where the connection runs it on copies (`mcprl.tools.copies`) whose paths `paths`
        maps to the originals' and back."""
        self._conn = conn
        self.paths = paths
        self.workdir = workdir
        self._offer(spec or conn.spec, mcp_tools if paths is None else paths.outward(mcp_tools))

    def _offer(self, spec: ServerSpec, mcp_tools: list[dict[str, Any]]) -> None:
        self.spec = spec
        self.listed = mcp_tools
        self.mcp_tools = [t for t in mcp_tools if self.spec.allows(t["name"])]
        self._validators = {t["name"]: schema_validator(t.get("inputSchema") or {}) for t in self.mcp_tools}
        # tools whose input schema no validator can follow: a call to one is refused with why
        self._unusable = {
            t["name"]: problem for t in self.mcp_tools if (problem := schema_problem(t.get("inputSchema") or {}))
        }
        self.gone: str | None = None

    @property
    def copy_folders(self) -> list[Path]:
        """The folders of the copies of what the server works on that this session runs on (`ServerSpec.private_copy`),
        each holding one copy and what the server made beside it."""
        return self.paths.folders if self.paths is not None else []

    @property
    def made_files(self) -> list[Path]:
        """The copies of data files the user named that were not there (`PathMap.made`): the server makes them."""
        return self.paths.made if self.paths is not None else []

    @property
    def home(self) -> Path | None:
        """The home folder of this session's own (`ServerSpec.private_home`), where the server was given one."""
        return Path(self.spec.env["HOME"]) if self.spec.private_home and "HOME" in self.spec.env else None

    @property
    def own_folders(self) -> list[Path]:
        """Where a stdio server of this session may write and change nothing else: the folder it runs in (the run's
        own, or `--cwd`), its home of its own, and the user's files it runs on copies of (as calls name them); each
        also as the server may see it, through links (macOS' /private/var)."""
        cwd = [Path(self.spec.cwd).absolute()] if self.spec.cwd is not None else [self.workdir] if self.workdir else []
        own = cwd + ([self.home] if self.home else []) + (self.paths.originals if self.paths is not None else [])
        return list(dict.fromkeys([*own, *(p.resolve() for p in own)]))

    @property
    def alive(self) -> bool:
        """False once the transport is known to be dead (calls would raise `ServerGone`)."""
        return self.gone is None and not self._conn.ended

    async def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolOutcome:
        """Call a tool. Errors are outcomes; only a dead transport raises (`ServerGone`)."""
        started = time.perf_counter()
        if self.gone is None and self._conn.ended:
            self.gone = self._conn.lost_reason()
        if self.gone is not None:
            raise ServerGone(self.gone)
        args = self._checked(name, arguments, started)
        if isinstance(args, ToolOutcome):
            return args
        return await self._send(name, args if self.paths is None else self.paths.inward(args), started)

    def _checked(
        self, name: str, arguments: dict[str, Any] | str | None, started: float
    ) -> dict[str, Any] | ToolOutcome:
        """The call's arguments, or the error outcome of a call that cannot be made (before any server sees it)."""
        if not self.spec.allows(name):
            return _error("denied", f"the tool {name!r} is not available in this environment", started)
        if name not in self._validators:
            available = ", ".join(self._validators) or "none"
            return _error("unknown_tool", f"there is no tool named {name!r}; available tools: {available}", started)
        if name in self._unusable:
            return _error(
                "protocol",
                f"the input schema of {name!r} cannot be used ({self._unusable[name]}); "
                "this tool cannot be called until the server fixes it",
                started,
            )
        args = _parse_arguments(name, arguments, self._validators[name])
        if isinstance(args, str):
            return _error("bad_arguments", args, started)
        return args

    async def _send(self, name: str, args: dict[str, Any], started: float) -> ToolOutcome:
        with anyio.move_on_after(self.spec.call_timeout):
            try:
                result = await self._conn.session.call_tool(name, args)
            except Exception as e:
                if is_connection_lost(e):
                    if await self._still_connected():  # only this response was lost (e.g. an oversized event)
                        return _error("protocol", f"the result of {name!r} could not be received ({e})", started)
                    self.gone = self._conn.lost_reason(e)
                    raise ServerGone(self.gone) from None
                if isinstance(e, compat.MCPError) and e.error.code in compat.REQUEST_TIMEOUT_CODES:
                    return _error("timeout", f"{name!r} timed out on the server: {e.error.message}", started)
                if isinstance(e, compat.MCPError):
                    return _error("protocol", f"the server rejected the call to {name!r} ({e.error.message})", started)
                return _error("protocol", f"the server's answer to {name!r} could not be used ({e})", started)
            return self._outcome(result, started)
        if self._conn.ended:  # the transport died without failing the request
            self.gone = self._conn.lost_reason()
            raise ServerGone(self.gone)
        return _error("timeout", f"{name!r} did not answer within {self.spec.call_timeout:g} s", started)

    async def _still_connected(self) -> bool:
        """Whether the server still answers a ping: after a request failed as if the connection
        had closed, the transport may still be fine (it can fail just one response)."""
        if self._conn.ended:
            return False
        with anyio.move_on_after(PING_TIMEOUT):
            try:
                await self._conn.session.send_ping()
            except Exception:
                return False
            return True
        return False

    def _outcome(self, result: Any, started: float) -> ToolOutcome:
        wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return self.outcome(wire if self.paths is None else self.paths.outward(wire), started)

    def outcome(self, wire: dict[str, Any], started: float, **fields: Any) -> ToolOutcome:
        """What the model is shown of a `tools/call` result (`wire`: as the server sent it)."""
        fields["result"] = ToolResult.model_validate(wire)
        fields["content"] = parse_blocks(wire.get("content"))
        structured = wire.get("structuredContent")
        text, fields["data_text"] = render(fields["content"], structured, self.spec.max_result_chars)
        if structured is not None and len(json.dumps(structured)) > self.spec.max_result_chars:
            structured = None  # the text already holds the truncated version; keep memory bounded
        # A result that says in its text that the call failed is an error like MCP's `isError`,
        # for the model and for everything that reads outcomes (demonstrations, shaping, grounding).
        if (
            wire.get("isError")
            or reports_error(text)
            or structured is not None
            and reports_error(json.dumps(structured))
        ):
            if not text.lstrip().lower().startswith("error"):
                text = f"Error: {text}"
            return ToolOutcome(
                text=text,
                is_error=True,
                error_kind="tool_error",
                structured=structured,
                latency_s=time.perf_counter() - started,
                **fields,
            )
        return ToolOutcome(text=text, structured=structured, latency_s=time.perf_counter() - started, **fields)


def _parse_arguments(
    name: str, arguments: dict[str, Any] | str | None, validator: jsonschema.protocols.Validator | None
) -> dict[str, Any] | str:
    """The arguments as a dict, or a message saying what is wrong with them."""
    if isinstance(arguments, str):
        if not arguments.strip():
            arguments = None
        else:
            try:
                arguments = json.loads(arguments)
            except ValueError as e:
                return f"the arguments for {name!r} are not valid JSON ({e.args[0] if e.args else e})"
            except RecursionError:
                return f"the arguments for {name!r} are nested too deep"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return f"the arguments for {name!r} must be a JSON object, not {type(arguments).__name__}"
    if validator is not None:
        try:
            error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        except RecursionError:
            return f"the arguments for {name!r} are nested too deep to check"
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            return f"bad arguments for {name!r}" + (f" at {where!r}" if where else "") + f": {error.message}"
    return arguments


class Unreadable(Exception):
    """The server answered with something the MCP SDK could not read (the SDK would wait on)."""


async def _list_all(conn: Connection, method: str, key: str) -> list[dict[str, Any]]:
    """Every item of a paginated listing (tools/resources/prompts), following cursors. A page
    the SDK cannot read (not JSON-RPC, nested past its parser's limit) raises Unreadable at once
    instead of waiting out the timeout."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page: Any = None
        conn.unreadable = anyio.Event()
        with anyio.fail_after(conn.spec.connect_timeout):
            async with anyio.create_task_group() as tg:

                async def fetch() -> None:
                    nonlocal page
                    page = await getattr(conn.session, method)(params=params)  # noqa: B023 (awaited in this iteration)
                    tg.cancel_scope.cancel()

                async def watch() -> None:
                    await conn.unreadable.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(fetch)
                tg.start_soon(watch)
        if page is None:
            raise Unreadable(str(conn.stream_error))
        wire = page.model_dump(by_alias=True, mode="json", exclude_none=True)
        items.extend(wire.get(key) or [])
        cursor = wire.get("nextCursor")
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return items


@asynccontextmanager
async def open_session(spec: ServerSpec, *, workdir: Path | None = None) -> AsyncIterator[ToolSession]:
    """One MCP session: a new process for stdio, a new session for HTTP/SSE.

    A stdio server without `spec.cwd` runs in `workdir`, or in a temp dir removed afterwards; with
    `spec.private_copy`, on copies of its files of this session's own. Failing to connect is a `UserError`;
    closing never raises, even when the server died."""
    with ExitStack() as dirs:
        if workdir is None and spec.transport == "stdio" and spec.cwd is None:
            workdir = Path(dirs.enter_context(tempfile.TemporaryDirectory(prefix=WORKDIR_PREFIX)))
        run, paths = spec, None
        if spec.private_copy and spec.transport == "stdio":
            try:
                run, paths = dirs.enter_context(copied(spec))
            except OSError as e:
                raise UserError(
                    f"{spec.target}: copying what the server works on failed ({e}); pass --no-private-copy to run it "
                    "on the files themselves (its tools that may write are then not called)"
                ) from None
        if spec.private_home and spec.transport == "stdio":
            home = Path(dirs.enter_context(tempfile.TemporaryDirectory(prefix=HOME_PREFIX)))
            spec = spec.model_copy(update={"env": {**spec.env, **private_home_env(home)}})
            run = run.model_copy(update={"env": {**run.env, **private_home_env(home)}})
        async with connect(run, workdir or Path.cwd()) as conn:
            try:
                tools = await _list_all(conn, "list_tools", "tools")
            except Exception as e:
                raise _listing_error(spec, e) from None
            yield ToolSession(conn, tools, spec, paths, workdir)


def _listing_error(spec: ServerSpec, error: Exception) -> UserError:
    if isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        return _listing_error(spec, error.exceptions[0])
    if isinstance(error, Unreadable):
        return UserError(
            f"{spec.target}: its tools/list answer could not be read ({clip(str(error), 200)}); "
            "fix the server (is a tool's schema nested hundreds of levels deep?)"
        )
    if isinstance(error, TimeoutError):
        return UserError(
            f"{spec.target}: tools/list got no answer within {spec.connect_timeout:g} s; is the server stuck?"
        )
    if isinstance(error, ValidationError):
        return UserError(
            f"{spec.target}: its tools/list answer is not valid MCP ({first_problem(error)}); "
            "fix the server (every tool needs a name and an object inputSchema)"
        )
    return UserError(
        f"{spec.target}: listing its tools failed ({type(error).__name__}: {clip(str(error), 300)}); check the "
        "server's logs"
    )


async def discover(spec: ServerSpec, *, workdir: Path | None = None) -> ToolSet:
    """Connect once and describe the server (`describe`)."""
    async with open_session(spec, workdir=workdir) as session:
        return await describe(session)


async def describe(session: ToolSession) -> ToolSet:
    """The server of an open session: its (filtered) tools, resources and prompts.

    A server with no tools, or a filter that hides all of them, is a `UserError`."""
    spec, conn = session.spec, session._conn
    capabilities = conn.initialize_result.get("capabilities") or {}
    resources = await _optional_listing(conn, "list_resources", "resources") if "resources" in capabilities else []
    templates = (
        await _optional_listing(conn, "list_resource_templates", "resourceTemplates")
        if "resources" in capabilities
        else []
    )
    prompts = await _optional_listing(conn, "list_prompts", "prompts") if "prompts" in capabilities else []
    if session.paths is not None:  # (a file's resource names the original, as the tools' results do)
        resources, templates, prompts = session.paths.outward([resources, templates, prompts])
    if not session.listed:
        raise UserError(
            f"{spec.target}: the server offers no tools; an agent needs at least one (check its configuration)"
        )
    if not session.mcp_tools:
        names = ", ".join(t["name"] for t in session.listed)
        raise UserError(f"{spec.target}: --allow/--deny hide all of its tools ({names}); loosen the filter")
    tools = [to_openai(t) for t in session.mcp_tools]
    return ToolSet(
        spec=spec,
        tools=tools,
        mcp_tools=session.mcp_tools,
        resources=resources,
        resource_templates=templates,
        prompts=prompts,
        server_info=conn.initialize_result.get("serverInfo") or {},
        hash=tools_hash(tools),
    )


async def _optional_listing(conn: Connection, method: str, key: str) -> list[dict[str, Any]]:
    """Resources and prompts are context, not essentials: a server failing to list them still works."""
    try:
        return await _list_all(conn, method, key)
    except Exception:
        return []
