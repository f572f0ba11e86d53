"""Recording, replay and a step's read cache, behind the sessions a `ToolPool` hands out, so every
agent, command and stage that calls tools through a pool gets them (`ServerSpec.cassette`, from
the `[server]` settings `record`, `replay`, `on_miss`, `cache_reads`, `read_only`).

- record: every call that reaches the server is appended to the cassette (mcprl.tools.cassette),
  with its session and position, secrets masked.
- replay: the tool list is the cassette's and calls are answered from it (`Player`); no server is
  started. A miss fails the rollout (`ReplayMiss`, a `ServerGone`: that rollout, not the run), or
  with `on_miss="live"` goes to a live session of the same server (whose tool list must hash as
  the recorded one), or with `"nearest"` gets a read-only tool's closest recorded call (the
  outcome says `replayed="nearest"`). A replayed write never reaches a live server.
- cache_reads: within a training step (`read_cache(pool, step)`), identical calls to read-only
  tools (MCP's `readOnlyHint`, or `read_only`) are made once and their outcome shared by the
  step's rollouts; a session that has written reads its own state, uncached.
"""

from __future__ import annotations

import contextvars
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio

from mcprl.errors import UserError, clip
from mcprl.tools.cassette import Call, Cassette, CassetteWriter, Header, Lease, Player, call_key, canonical
from mcprl.tools.client import ServerGone, ToolOutcome, ToolSession, ToolSet, _parse_arguments, discover
from mcprl.tools.convert import to_openai, tools_hash
from mcprl.tools.redact import redact, secret_values
from mcprl.tools.spec import ServerSpec

LiveSession = Callable[[], AbstractAsyncContextManager[ToolSession]]
_STEP: contextvars.ContextVar[int | None] = contextvars.ContextVar("mcprl_read_cache_step", default=None)


class ReplayMiss(ServerGone):
    """A call the cassette cannot answer (`on_miss="error"`): it fails its rollout, not the run."""

    label = "replay miss"


class Tape:
    """A pool's record/replay/cache settings at work (see the module's docstring)."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec, self.settings = spec, spec.cassette
        self.secrets = secret_values(spec)
        self.player: Player | None = None
        self.writer: CassetteWriter | None = None
        self.read_only: set[str] = set(self.settings.read_only)
        self.slots: dict[tuple[int, str], _Slot] = {}
        self.steps: dict[int, Counter[str]] = {}
        self.replayed: Counter[str] = Counter()  # answers by how (exact, nearest, live), and misses
        s = self.settings
        if s.record and s.replay and Path(s.record).resolve() == Path(s.replay).resolve():
            raise UserError(f"--record and --replay name the same file ({s.record}); record into another one")

    async def discover(self, workdir: Path | None) -> ToolSet:
        """The tools: the cassette's when replaying (checked against the live server's with on_miss=live),
        else the server's; opens the cassette to record into."""
        live_spec = self.spec.model_copy(update={"cassette": type(self.settings)()})
        if self.settings.replay:
            toolset = self._replayed_tools(Cassette.load(Path(self.settings.replay)))
            if self.settings.on_miss == "live":
                live = await discover(live_spec, workdir=workdir)
                if live.hash != toolset.hash:
                    raise UserError(
                        f"{self.settings.replay} was recorded from a server whose tools hash {toolset.hash}; "
                        f"{redact(self.spec.target, self.secrets)} lists tools that hash {live.hash} now: "
                        "record the cassette again, or replay without --on-miss live"
                    )
        else:
            toolset = await discover(live_spec, workdir=workdir)
        self.read_only |= {
            t["name"] for t in toolset.mcp_tools if (t.get("annotations") or {}).get("readOnlyHint") is True
        }
        if self.settings.record:
            header = Header(
                server=redact(self.spec.target, self.secrets),
                transport=self.spec.transport,
                env={k: v for k, v in self.spec.env.items() if v not in self.secrets},
                cwd=self.spec.cwd,
                server_info=toolset.server_info,
                tools_hash=toolset.hash,
                tools=toolset.mcp_tools,
                resources=toolset.resources,
                resource_templates=toolset.resource_templates,
                prompts=toolset.prompts,
            )
            self.writer = CassetteWriter.acquire(Path(self.settings.record), header, self.secrets)
        return toolset

    def _replayed_tools(self, cassette: Cassette) -> ToolSet:
        header = cassette.header
        shown = redact(self.spec.target, self.secrets)
        if header.server != shown:
            raise UserError(
                f"{cassette.path} was recorded from {header.server}, not {shown}; "
                "replay it without --server, or give the server it was recorded from"
            )
        if (found := tools_hash([to_openai(t) for t in header.tools])) != header.tools_hash:
            raise UserError(
                f"{cassette.path}: its tools hash {found}, not the {header.tools_hash} its header says; "
                "the cassette was edited, record it again"
            )
        mcp_tools = [t for t in header.tools if self.spec.allows(t["name"])]
        if not mcp_tools:
            raise UserError(f"{cassette.path}: --allow/--deny hide all of its recorded tools; loosen the filter")
        tools = [to_openai(t) for t in mcp_tools]
        self.player = Player(cassette, self.settings.read_only)
        # what the recorded server was given, as exploring reads it (mcprl.scenarios.value_sources.context_values)
        return ToolSet(
            spec=self.spec.model_copy(
                update={"env": {**header.env, **self.spec.env}, "cwd": self.spec.cwd or header.cwd}
            ),
            tools=tools,
            mcp_tools=mcp_tools,
            resources=header.resources,
            resource_templates=header.resource_templates,
            prompts=header.prompts,
            server_info=header.server_info,
            hash=tools_hash(tools),
        )

    def summary(self) -> str | None:
        """What a replay answered, and how many recorded calls nobody asked for (None when not replaying)."""
        if self.player is None:
            return None
        r = self.replayed
        return (
            f"replayed {self.player.cassette.path}: {r['exact'] + r['nearest'] + r['live']} calls answered "
            f"({r['nearest']} by the nearest recorded call, {r['live']} live), {r['miss']} misses; "
            f"{self.player.unused()} of its {len(self.player.cassette.calls)} recorded calls were never asked for"
        )

    def close(self) -> None:
        if self.writer is not None:
            self.writer.release()
            self.writer = None

    @asynccontextmanager
    async def session(self, live: LiveSession) -> AsyncIterator[Any]:
        """A rollout's session: replayed or live, then behind the step's read cache, then recorded."""
        async with AsyncExitStack() as stack:
            if self.player is not None:
                session: Any = ReplaySession(self, live, stack)
            else:
                session = await stack.enter_async_context(live())
            if self.settings.cache_reads:
                session = CachingSession(session, self)
            if self.writer is not None:
                session = RecordingSession(session, self.writer)
            yield session

    def writes(self, tool: str) -> bool:
        return tool not in self.read_only


def _arguments(name: str, arguments: dict[str, Any] | str | None) -> dict[str, Any] | None:
    args = _parse_arguments(name, arguments, None)
    return args if isinstance(args, dict) else None


class ReplaySession(ToolSession):
    """A session answered from the cassette: the recorded tool list, the client's own argument checks."""

    def __init__(self, tape: Tape, live: LiveSession, stack: AsyncExitStack) -> None:
        assert tape.player is not None
        self._conn = None  # type: ignore[assignment]
        self.paths = None  # (recorded as the user's paths: a live session on copies maps its own)
        self._offer(tape.spec, tape.player.cassette.header.tools)
        self.gone = None
        self.tape, self.player, self.lease = tape, tape.player, Lease()
        self._live_factory, self._stack, self._live_session = live, stack, None

    @property
    def alive(self) -> bool:
        return self.gone is None

    async def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolOutcome:
        started = time.perf_counter()
        args = self._checked(name, arguments, started)
        if isinstance(args, ToolOutcome):
            return args
        masked = redact(args, self.tape.secrets)  # the cassette holds the masked values
        found, how = self.player.answer(self.lease, name, masked), "exact"
        on_miss = self.tape.settings.on_miss
        if found is None and on_miss == "live":
            if self._live_session is None:
                self._live_session = await self._stack.enter_async_context(self._live_factory())
            outcome = await self._live_session.call(name, args)
            self.tape.replayed["live"] += 1
            return outcome.model_copy(update={"replayed": "live"})
        if found is None and on_miss == "nearest":
            found, how = self.player.nearest(self.lease, name, masked), "nearest"
        self.tape.replayed["miss" if found is None else how] += 1
        if found is None:
            shown = clip(json.dumps(canonical(masked), ensure_ascii=False), 200)
            kind = "a tool that may write, called out of its recorded order" if self.player.writes(name) else "a read"
            raise ReplayMiss(f"{name} {shown} ({kind}) is not in {self.player.cassette.path} (--on-miss {on_miss})")
        if found.result is None:
            return ToolOutcome(
                text=found.error or "Error: no answer",
                is_error=True,
                error_kind=found.error_kind,
                latency_s=time.perf_counter() - started,
                replayed=how,
            )  # type: ignore[arg-type]
        return self.outcome(found.result.wire(), started, replayed=how)


class _Passing:
    """A session wrapper: everything but `call` is the wrapped session's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RecordingSession(_Passing):
    """Appends every call that reached the server (or the cassette, or the cache) to the cassette."""

    def __init__(self, inner: Any, writer: CassetteWriter) -> None:
        super().__init__(inner)
        self._writer, self.number, self._position = writer, writer.new_session(), 0

    async def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolOutcome:
        outcome = await self._inner.call(name, arguments)
        answered = (
            outcome.result is not None
            or outcome.error_kind == "timeout"
            or outcome.error_kind == "protocol"
            and name not in getattr(self._inner, "_unusable", {})
        )
        args = _arguments(name, arguments)
        if answered and args is not None:
            error = None if outcome.result is not None else outcome.text
            self._writer.write(
                Call(
                    session=self.number,
                    position=self._position,
                    tool=name,
                    arguments=canonical(args),
                    result=outcome.result,
                    error=error,
                    error_kind=outcome.error_kind if error else None,
                    latency_s=round(outcome.latency_s, 6),
                )
            )
            self._position += 1
        return outcome


class _Slot:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.outcome: ToolOutcome | None = None


class CachingSession(_Passing):
    """Answers a read-only call made before in this step from the outcome of the first one."""

    def __init__(self, inner: Any, tape: Tape) -> None:
        super().__init__(inner)
        self._tape, self._wrote = tape, False

    async def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolOutcome:
        tape, step = self._tape, _STEP.get()
        args = _arguments(name, arguments)
        if tape.writes(name):
            self._wrote = True
        if step is None or step not in tape.steps or self._wrote or args is None:
            return await self._inner.call(name, arguments)
        stats, key = tape.steps[step], (step, call_key(name, args))
        slot = tape.slots.get(key)
        if slot is None:
            slot = tape.slots[key] = _Slot()
            try:
                slot.outcome = await self._inner.call(name, arguments)
            finally:
                if slot.outcome is None or slot.outcome.error_kind in ("timeout", "protocol"):
                    tape.slots.pop(key, None)  # not an answer to share: the next call asks again
                slot.done.set()
            stats["calls"] += 1
            return slot.outcome
        await slot.done.wait()
        if slot.outcome is None or slot.outcome.error_kind in ("timeout", "protocol"):
            return await self._inner.call(name, arguments)
        stats["calls_saved"] += 1
        stats["server_seconds_saved"] += slot.outcome.latency_s
        return slot.outcome.model_copy(update={"replayed": "cached", "latency_s": 0.0})


@contextmanager
def read_cache(pool: Any, step: int) -> Iterator[dict[str, float]]:
    """Within it (a training step's rollouts), `pool`'s sessions share read-only answers when the pool's
    spec has `cache_reads`; the dict it yields holds the step's figures once it ends (empty without a cache)."""
    tape: Tape | None = getattr(pool, "tape", None)
    figures: dict[str, float] = {}
    if tape is None or not tape.settings.cache_reads:
        yield figures
        return
    tape.steps[step] = Counter()
    token = _STEP.set(step)
    try:
        yield figures
    finally:
        _STEP.reset(token)
        stats = tape.steps.pop(step)
        for key in [k for k in tape.slots if k[0] == step]:
            del tape.slots[key]
        figures.update({f"read_cache/{k}": float(stats[k]) for k in ("calls", "calls_saved", "server_seconds_saved")})
