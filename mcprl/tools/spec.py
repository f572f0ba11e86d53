"""`ServerSpec`: which MCP server to talk to, how, and which of its tools the model may see.

A spec is a URL or a command line. `http(s)://...` is streamable HTTP, unless the path ends in
`/sse` (or transport="sse"), which is the older SSE transport; anything else is a stdio command,
split like a shell would (`"npx -y @modelcontextprotocol/server-memory"`).
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcprl.errors import UserError, first_problem
from mcprl.tools.copies import not_copied, worked_on

Transport = Literal["stdio", "http", "sse"]
TRANSPORT_CHOICES = ("auto", "stdio", "http", "sse")
OnMiss = Literal["error", "live", "nearest"]


class CassetteSettings(BaseModel):
    """Recording tool calls into a cassette, answering them from one, and caching reads (mcprl.tools.tape)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: str | None = Field(default=None, description="JSONL file every tool call is recorded into")
    replay: str | None = Field(default=None, description="JSONL cassette tool calls are answered from")
    on_miss: OnMiss = Field(
        default="error",
        description="a call the cassette does not hold: fail its rollout, "
        "call the live server, or answer a read-only tool's nearest recorded call",
    )
    cache_reads: bool = Field(default=False, description="answer identical read-only calls of a step once")
    read_only: tuple[str, ...] = Field(default=(), description="tools to treat as read-only besides the annotated ones")

    @property
    def active(self) -> bool:
        return bool(self.record or self.replay or self.cache_reads)


class ServerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str = Field(description="the URL or command line as given")
    transport: Transport
    command: list[str] = Field(default_factory=list, description="stdio: the argv to run")
    url: str | None = Field(default=None, description="http/sse: the endpoint")
    headers: dict[str, str] = Field(default_factory=dict, description="http/sse: sent with every request")
    env: dict[str, str] = Field(
        default_factory=dict, description="stdio: added to the minimal environment the server starts with"
    )
    cwd: str | None = Field(default=None, description="stdio: working directory; default: a run-scoped temp dir")
    private_home: bool = Field(
        default=False,
        description="stdio: each session gets a home folder of its own (`private_home_env`), so state a server keeps "
        "under the home starts fresh each session and the user's stays as it was",
    )
    private_copy: bool = Field(
        default=False,
        description="stdio: each session runs on a copy of the files and folders its command line names and of its "
        "working directory (`mcprl.tools.copies`), so the user's are never written and every session starts from them",
    )
    connect_timeout: float = Field(default=30.0, gt=0)
    call_timeout: float = Field(default=60.0, gt=0)
    allow: list[str] = Field(default_factory=list, description="tool names or globs to keep (empty: all)")
    deny: list[str] = Field(default_factory=list, description="tool names or globs to hide; deny wins over allow")
    per_rollout: bool | None = Field(
        default=None, description="a new session per rollout (default for stdio) or one shared (default for http/sse)"
    )
    max_result_chars: int = Field(default=4000, gt=0, description="tool results longer than this are truncated")
    cassette: CassetteSettings = Field(default_factory=CassetteSettings, description="record, replay, cache reads")

    @classmethod
    def parse(
        cls,
        target: str,
        *,
        transport: str = "auto",
        headers: Mapping[str, str] | Iterable[str] | None = None,
        env: Mapping[str, str] | Iterable[str] | None = None,
        cwd: str | None = None,
        private_copy: bool | None = None,
        **options: object,
    ) -> ServerSpec:
        """Build a spec from a URL or command line. `headers` may be `"Name: value"` strings and
        `env` `"KEY=value"` strings (as the CLI passes them); other options are the fields above.

        A command starting with `python`/`python3` runs the current interpreter, so the shipped
        servers (`python -m mcprl.servers.inventory`) work whether or not the venv is activated.
        Without `cwd` a stdio server runs in a directory of the run's own, so a path in the command
        (a file here, `python server.py`, or a relative path, `./bin/serve`) is made absolute.
        `private_copy` None: on for a stdio server that works on files a session can copy (`not_copied`).
        """
        target = target.strip()
        if transport not in TRANSPORT_CHOICES:
            raise UserError(f"unknown transport {transport!r}; choose one of {', '.join(TRANSPORT_CHOICES)}")
        is_url = urlsplit(target).scheme in ("http", "https")
        if transport == "auto":
            transport = ("sse" if urlsplit(target).path.rstrip("/").endswith("/sse") else "http") if is_url else "stdio"
        header_map = _pairs(headers, ":", "--header", "'Authorization: Bearer ...'")
        env_map = _pairs(env, "=", "--env", "KEY=value")
        fields: dict[str, object] = {"target": target, "transport": transport, "headers": header_map, "env": env_map}
        if transport == "stdio":
            if is_url:
                raise UserError(f"{target}: a URL cannot be run as a stdio command; use --transport http or sse")
            if header_map:
                raise UserError(f"{target}: headers apply to HTTP/SSE servers; pass a stdio server secrets with --env")
            argv = _argv(target)
            if cwd is None:  # it runs in a directory of the run's own, not here: paths keep meaning what they mean here
                argv = [_from_here(argv[0], program=True), *(_from_here(arg) for arg in argv[1:])]
            fields.update(command=argv, cwd=cwd)
        else:
            if not is_url:
                raise UserError(f"{target!r}: --transport {transport} needs a URL like http://localhost:8000/mcp")
            if env_map or cwd:
                raise UserError(f"{target}: --env and --cwd apply to stdio commands, not to a server at a URL")
            fields.update(url=target)
        try:
            spec = cls.model_validate({**options, **fields})
        except ValidationError as e:
            raise UserError(f"{target}: invalid server option {first_problem(e)}") from None
        if private_copy is None:
            private_copy = transport == "stdio" and bool(paths := worked_on(spec)) and not_copied(paths) is None
        return spec.model_copy(update={"private_copy": private_copy and transport == "stdio"})

    def allows(self, tool_name: str) -> bool:
        """Whether the model may see and call this tool (allow/deny by name or glob; deny wins)."""
        if any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.deny):
            return False
        return not self.allow or any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.allow)


def private_home_env(home: Path) -> dict[str, str]:
    """What a stdio server's environment gets to make `home` its home folder, where programs keep what is
    theirs (`~/.local/share/<app>`, `~/.config/<app>`); the caches stay the user's, so a server that
    `npx` or `uvx` fetched starts from them, offline too."""
    real = Path.home()
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(real / ".cache")),
        "npm_config_cache": os.environ.get("npm_config_cache", str(real / ".npm")),
    }


def _argv(command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise UserError(f"{command!r}: cannot split the command line ({e}); check the quoting") from None
    if not argv:
        raise UserError("the server spec is empty; give a URL or a command like 'python -m mcprl.servers.inventory'")
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv


def _from_here(arg: str, program: bool = False) -> str:
    """`arg` as an absolute path when it is one relative to the current directory: a file here
    (`server.py`, `build/index.js`), or a path written as relative (`.`, `./data`, `../srv`). A
    directory's bare name stays a word (`docker run mcp/fetch` names an image, whatever is here), and
    a program's bare name too (a shell looks it up in PATH)."""
    explicit = arg in (".", "..") or arg.startswith(("./", "../"))
    if program and "/" not in arg:
        return arg
    if explicit and os.path.exists(arg) or not os.path.isabs(arg) and os.path.isfile(arg):
        return os.path.abspath(arg)
    return arg


def _pairs(values: Mapping[str, str] | Iterable[str] | None, sep: str, option: str, example: str) -> dict[str, str]:
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return dict(values)
    out: dict[str, str] = {}
    for item in values:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            raise UserError(f"{option} {item!r}: expected {example}")
        out[key.strip()] = value.strip()
    return out
