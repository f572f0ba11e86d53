"""The server a run trains against, as the user names it (`[server]` in a run file, the server
flags of every command that connects to one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mcprl.errors import UserError
from mcprl.tools.cassette import recorded_target
from mcprl.tools.spec import CassetteSettings, OnMiss, ServerSpec, _pairs


class ServerConfig(BaseModel):
    """The MCP server, as the user names it; `spec()` is the ServerSpec the client connects with."""

    model_config = ConfigDict(extra="forbid")

    target: str | None = Field(
        default=None, description="MCP server: URL (streamable HTTP; .../sse for SSE) or stdio command"
    )
    transport: Literal["auto", "stdio", "http", "sse"] = Field(default="auto", description="how to reach the server")
    headers: dict[str, str] = Field(default_factory=dict, description="'Name: value' sent to HTTP servers")
    env: dict[str, str] = Field(default_factory=dict, description="K=V for a stdio server's environment")
    cwd: str | None = Field(default=None, description="working directory of a stdio server")
    private_home: bool = Field(
        default=False,
        description="give each session of a stdio server a home folder of its own (HOME), the caches kept: a "
        "server keeping its state under the home starts fresh, and the user's is never written (exploring "
        "turns it on where it finds such a server)",
    )
    private_copy: bool | None = Field(
        default=None,
        description="run each session of a stdio server on a copy of the files and folders its command line names "
        "and of its --cwd, so yours are never written and its tools that write are explored there (default: on "
        "where they are at most 20,000 files and 100 MB and no data file there names where it lies)",
    )
    allow: list[str] = Field(default_factory=list, description="only tools matching this name/glob")
    deny: list[str] = Field(default_factory=list, description="never offer or call tools matching this name/glob")
    connect_timeout: float = Field(default=30.0, gt=0, description="seconds to wait for the MCP handshake")
    call_timeout: float = Field(default=60.0, gt=0, description="seconds a tool call may take")
    per_rollout: bool | None = Field(
        default=None,
        description="a fresh session per rollout, so no rollout sees another's writes (default: on for stdio, "
        "each its own process; off for HTTP/SSE); --no-per-rollout shares one: a stdio server that "
        "keeps no state then starts once, not once per rollout",
    )
    # what a result costs the prompt: a whole listing carried into the next turn makes every
    # trained sequence long (an inventory listing: 4,000 characters a call)
    max_result_chars: int = Field(
        default=4000, gt=0, description="tool results longer than this are cut, for the model and the checks alike"
    )
    # record and replay (mcprl.tools.tape; docs/replay.md)
    record: str | None = Field(
        default=None,
        description="record every tool call into this JSONL cassette (a training "
        "run records into its cassette.jsonl unless 'off')",
    )
    replay: str | None = Field(
        default=None, description="answer tool calls from this cassette; --server may be left out"
    )
    on_miss: OnMiss = Field(
        default="error",
        description="a call the cassette lacks: fail that rollout, call the live "
        "server, or answer the nearest recorded read-only call",
    )
    cache_reads: bool = Field(
        default=False, description="identical read-only calls within a training step are answered once"
    )
    read_only: list[str] = Field(
        default_factory=list, description="tools to treat as read-only besides those annotated so"
    )

    @field_validator("headers", mode="before")
    @classmethod
    def _header_lines(cls, value: Any) -> Any:
        """Headers may also be given as 'Name: value' strings (as the flag takes them)."""
        return _pairs(value, ":", "--header", "'Authorization: Bearer ...'") if isinstance(value, list) else value

    @field_validator("env", mode="before")
    @classmethod
    def _env_lines(cls, value: Any) -> Any:
        """The environment may also be given as K=V strings (as the flag takes them)."""
        return _pairs(value, "=", "--env", "KEY=value") if isinstance(value, list) else value

    @property
    def connects(self) -> bool:
        """Whether there is a server to call: one named, or a cassette that answers for it."""
        return self.target is not None or self.replay is not None

    def spec(self) -> ServerSpec:
        cassette = CassetteSettings(
            record=None if self.record == "off" else self.record,
            replay=self.replay,
            on_miss=self.on_miss,
            cache_reads=self.cache_reads,
            read_only=tuple(self.read_only),
        )
        target = self.target if self.target is not None or self.replay is None else recorded_target(Path(self.replay))
        if target is None:
            raise UserError("no MCP server given; pass --server URL-or-command")
        return ServerSpec.parse(
            target,
            cassette=cassette,
            transport=self.transport,
            headers=self.headers,
            env=self.env,
            cwd=self.cwd,
            private_home=self.private_home,
            private_copy=self.private_copy,
            allow=self.allow,
            deny=self.deny,
            connect_timeout=self.connect_timeout,
            call_timeout=self.call_timeout,
            per_rollout=self.per_rollout,
            max_result_chars=self.max_result_chars,
        )
