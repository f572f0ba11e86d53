"""Cassettes: the tool calls of MCP sessions, recorded as JSONL, and matched again for replay.

A cassette's first line is its header: the server it was recorded from (target as given, secrets
masked; the name and version it gave in `initialize`), the tools it listed and their hash (the
hash `tools.json` holds). Each further line is one call that reached the server:

    {"kind": "call", "session": 3, "position": 0, "tool": "get_item", "arguments": {"sku": "SKU-1000"},
     "result": {"content": [{"type": "text", "text": "..."}], "isError": false}, "latency_s": 0.004}

`session` numbers the sessions (a rollout's), `position` the call in its session; `arguments` are
canonical (keys sorted, a whole float written as an integer), so one call is one line whatever
spacing or key order the model wrote. Calls that never reached the server (an unknown tool, bad
arguments) are not recorded: a replay refuses them again by the same checks. Secrets are masked
as in trajectories (`mcprl.tools.redact`).

`Player` answers calls from a loaded cassette (`mcprl.tools.tape` puts it behind a session): a
read-only tool's call by its exact arguments as recorded in the same server state (after as many
writes, in a recorded session whose writes this one has matched); a call to a tool that may write
in order per session: the k-th call of that tool in a session matches the k-th one of a recorded
session that has matched so far (so calls to different tools may come in another order).
`nearest` answers a read-only call the cassette lacks with the recorded call of that tool whose
arguments differ least (in the same state, where it recorded one).
"""

from __future__ import annotations

import difflib
import json
import math
import threading
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcprl.errors import UserError, clip, first_problem
from mcprl.tools.redact import redact

FORMAT = 1
Replayed = Literal["exact", "nearest", "live", "cached"]


class ToolResult(BaseModel):
    """A `tools/call` result as the server sent it (MCP's CallToolResult, on the wire)."""

    model_config = ConfigDict(extra="allow")

    content: list[dict[str, Any]] = Field(default_factory=list)
    structuredContent: Any = None
    isError: bool = False

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Header(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["header"] = "header"
    format: int = FORMAT
    server: str = Field(description="the server's target as given (secrets masked)")
    transport: str
    env: dict[str, str] = Field(
        default_factory=dict, description="the environment the server was given, secrets left out"
    )
    cwd: str | None = Field(default=None, description="the working directory it was given")
    server_info: dict[str, Any] = Field(default_factory=dict, description="name and version from `initialize`")
    tools_hash: str
    tools: list[dict[str, Any]] = Field(description="the MCP tool definitions, as listed")
    resources: list[dict[str, Any]] = Field(default_factory=list)
    resource_templates: list[dict[str, Any]] = Field(default_factory=list)
    prompts: list[dict[str, Any]] = Field(default_factory=list)

    def identity(self) -> str:
        name = self.server_info.get("name")
        return self.server + (f" ({name})" if name else "") + f", tools {self.tools_hash}"


class Call(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["call"] = "call"
    session: int = Field(ge=0)
    position: int = Field(ge=0)
    tool: str
    arguments: dict[str, Any]
    result: ToolResult | None = None
    error: str | None = Field(default=None, description="no result: why (a timeout, a rejected request)")
    error_kind: str | None = None
    latency_s: float = 0.0


def canonical(value: Any) -> Any:
    """`value` with dict keys sorted and whole floats as integers (1.0 -> 1), recursively."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def call_key(tool: str, arguments: dict[str, Any]) -> str:
    return tool + " " + json.dumps(canonical(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def recorded_target(path: Path) -> str:
    """The server a cassette was recorded from (its target as given), for a replay given no --server."""
    return read_header(path).server


def read_header(path: Path) -> Header:
    if not path.is_file():
        raise UserError(f"{path}: no such cassette; record one with --record FILE")
    with path.open(encoding="utf-8") as f:
        first = f.readline()
    return _header(path, first)


def _header(path: Path, line: str) -> Header:
    try:
        return Header.model_validate(json.loads(line))
    except ValueError as e:  # JSON, or ValidationError (a ValueError)
        why = first_problem(e) if isinstance(e, ValidationError) else "not JSON"
        raise UserError(f"{path}:1: not a cassette header ({clip(why, 200)}); record one with --record FILE") from None


class CassetteWriter:
    """Appends calls to a cassette file; one per file in a process (pools of a run share it)."""

    _open: ClassVar[dict[Path, CassetteWriter]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: Path, header: Header, secrets: list[str]) -> None:
        self.path, self.header, self.secrets = path, header, secrets
        self.users = 0
        self._lock = threading.Lock()
        self.sessions = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size:  # a resumed run appends, to the same server only
            existing = Cassette.load(path)
            self.sessions = max((c.session for c in existing.calls), default=-1) + 1
            if (existing.header.tools_hash, existing.header.server) != (header.tools_hash, header.server):
                raise UserError(
                    f"{path} holds calls of {existing.header.identity()}, not of {header.identity()}; "
                    "record into another file (--record) or remove it"
                )
            self._file = path.open("a", encoding="utf-8")
        else:
            self._file = path.open("w", encoding="utf-8")
            self._write(header.model_dump(mode="json"))

    @classmethod
    def acquire(cls, path: Path, header: Header, secrets: list[str]) -> CassetteWriter:
        with cls._guard:
            key = path.resolve()
            writer = cls._open.get(key)
            if writer is None:
                writer = cls._open[key] = CassetteWriter(path, header, secrets)
            elif writer.header.tools_hash != header.tools_hash:
                raise UserError(f"{path} is being recorded from {writer.header.identity()}, not {header.identity()}")
            writer.users += 1
            return writer

    def release(self) -> None:
        with self._guard:
            self.users -= 1
            if self.users == 0:
                self._open.pop(self.path.resolve(), None)
                self._file.close()

    def new_session(self) -> int:
        with self._lock:
            self.sessions += 1
            return self.sessions - 1

    def write(self, call: Call) -> None:
        self._write(call.model_dump(mode="json", exclude_none=True))

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(redact(record, self.secrets), ensure_ascii=False)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()


class Cassette:
    """A cassette read whole; every line checked (a bad one is a one-line error naming it)."""

    def __init__(self, path: Path, header: Header, calls: list[Call]) -> None:
        self.path, self.header, self.calls = path, header, calls

    @classmethod
    def load(cls, path: Path) -> Cassette:
        header = read_header(path)
        names = {t.get("name") for t in header.tools}
        calls: list[Call] = []
        with path.open(encoding="utf-8") as f:
            f.readline()
            for number, line in enumerate(f, start=2):
                if not line.strip():
                    continue
                try:
                    call = Call.model_validate(json.loads(line))
                except ValueError as e:
                    why = first_problem(e) if isinstance(e, ValidationError) else "not a JSON line"
                    raise UserError(
                        f"{path}:{number}: {clip(why, 200)}; the cassette is truncated or was edited, record it again"
                    ) from None
                if call.tool not in names:
                    raise UserError(
                        f"{path}:{number}: a call to {call.tool!r}, a tool the recorded server does not "
                        "list; the cassette was edited, record it again"
                    )
                calls.append(call)
        return cls(path, header, calls)


class Lease:
    """What one replayed session has done: calls per tool, writes, the recorded sessions it can be."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.writes = 0
        self.sessions: list[int] | None = None  # recorded sessions consistent with its writes (None: any)


class Player:
    """Matches calls against a cassette (see the module's docstring). Thread-safe enough for one event loop."""

    def __init__(self, cassette: Cassette, read_only: tuple[str, ...] = ()) -> None:
        self.cassette = cassette
        tools = {t["name"]: t for t in cassette.header.tools}
        self.read_only = {n for n, t in tools.items() if (t.get("annotations") or {}).get("readOnlyHint") is True}
        self.read_only |= set(read_only)
        self._by_key: dict[str, list[tuple[Call, int]]] = defaultdict(list)  # key -> (call, writes before it)
        self._states: dict[str, list[tuple[Call, int]]] = defaultdict(list)  # tool -> (call, writes before it)
        self._sequence: dict[int, dict[str, list[Call]]] = defaultdict(lambda: defaultdict(list))
        self._keys: dict[int, str] = {}
        written: Counter[int] = Counter()
        for call in sorted(cassette.calls, key=lambda c: (c.session, c.position)):
            key = call_key(call.tool, call.arguments)
            self._keys[id(call)] = key
            self._by_key[key].append((call, written[call.session]))
            self._states[call.tool].append((call, written[call.session]))
            self._sequence[call.session][call.tool].append(call)
            if self.writes(call.tool):
                written[call.session] += 1
        self.claimed: set[int] = set()
        self.used: set[int] = set()

    def writes(self, tool: str) -> bool:
        return tool not in self.read_only

    def answer(self, lease: Lease, tool: str, arguments: dict[str, Any]) -> Call | None:
        """The recorded call that answers this one, or None."""
        key = call_key(tool, arguments)
        found = self._write(lease, tool, key) if self.writes(tool) else self._read(lease, key)
        if found is not None:
            self.used.add(id(found))
        return found

    def _write(self, lease: Lease, tool: str, key: str) -> Call | None:
        k = lease.counts[tool]
        sessions = lease.sessions if lease.sessions is not None else sorted(self._sequence)
        fits = [s for s in sessions if len(seq := self._sequence[s][tool]) > k and self._keys[id(seq[k])] == key]
        if not fits:
            return None
        current = lease.sessions[0] if lease.sessions else None
        fits.sort(key=lambda s: (s != current, s in self.claimed))  # the session it follows, else an unclaimed one
        lease.sessions, lease.writes = fits, lease.writes + 1
        lease.counts[tool] += 1
        self.claimed.add(fits[0])
        return self._sequence[fits[0]][tool][k]

    def _read(self, lease: Lease, key: str) -> Call | None:
        """A read recorded in the state this session is in: after as many writes, in a recorded session whose
        writes it has matched (any session, before it writes); none recorded in that state is a miss."""
        fits = [c for c, before in self._by_key.get(key, ()) if before == lease.writes and self._follows(lease, c)]
        current = lease.sessions[0] if lease.sessions else None
        return next((c for c in fits if c.session == current), fits[0] if fits else None)

    def _follows(self, lease: Lease, call: Call) -> bool:
        return lease.sessions is None or call.session in lease.sessions

    def nearest(self, lease: Lease, tool: str, arguments: dict[str, Any]) -> Call | None:
        """A read-only tool's recorded call whose arguments differ least from these, in this session's state
        where one was recorded in it (None for a tool that may write)."""
        if self.writes(tool) or not self._states.get(tool):
            return None
        recorded = self._states[tool]
        state = [c for c, before in recorded if before == lease.writes and self._follows(lease, c)]
        found = min(state or [c for c, _ in recorded], key=lambda c: distance(canonical(arguments), c.arguments))
        self.used.add(id(found))
        return found

    def unused(self) -> int:
        return sum(id(c) not in self.used for c in self.cassette.calls)


def distance(a: Any, b: Any) -> float:
    """How far apart two argument values are: 0 alike, 1 unlike; texts by their difference, objects summed per key."""
    if isinstance(a, dict) and isinstance(b, dict):
        return sum(distance(a.get(k), b.get(k)) for k in a.keys() | b.keys())
    if isinstance(a, str) and isinstance(b, str):
        return 1 - difflib.SequenceMatcher(None, a, b).ratio()
    if (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return 0.0 if a == b else min(1.0, abs(a - b) / (abs(a) + abs(b)))
    return 0.0 if a == b else 1.0
