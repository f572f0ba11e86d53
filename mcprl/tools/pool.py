"""`ToolPool`: MCP sessions for many concurrent rollouts.

    async with ToolPool(spec) as pool:            # discovers the tools once: pool.toolset
        async with pool.session() as session:    # per rollout
            await session.call(...)

(Per-rollout sessions also work without entering the pool; a shared one needs it, to own it.)

Per-rollout mode (default for stdio) opens a new session (a new server process) for every
rollout, so rollouts cannot see each other's state. Shared mode (default for HTTP/SSE) keeps one
long-lived session for all rollouts (the one that discovered the tools: a stdio server starts once)
and reconnects when it has died.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from types import TracebackType

import anyio
from anyio.abc import TaskGroup, TaskStatus

from mcprl.errors import UserError
from mcprl.tools.client import ServerGone, ToolSession, ToolSet, describe, discover, open_session
from mcprl.tools.spec import ServerSpec
from mcprl.tools.tape import Tape


class ToolPool:
    def __init__(self, spec: ServerSpec, per_rollout: bool | None = None, workdir: Path | None = None) -> None:
        """`per_rollout`: None means `spec.per_rollout`, else True for stdio and False for HTTP/SSE.
        `workdir`: where stdio servers without `spec.cwd` run; default: a fresh temp dir per session,
        so that per-rollout servers writing files cannot see each other's."""
        self.spec = spec
        if per_rollout is None:
            per_rollout = spec.per_rollout if spec.per_rollout is not None else spec.transport == "stdio"
        self.per_rollout = per_rollout
        self.workdir = workdir
        self.toolset: ToolSet | None = None
        self.tape = Tape(spec) if spec.cassette.active else None  # record, replay, read cache (mcprl.tools.tape)
        self._stack: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._shared: ToolSession | None = None
        self._release: anyio.Event | None = None
        self._lock = anyio.Lock()
        # Server processes started at once, per-rollout mode: started together on a small machine
        # (16 rollouts of a step, 2 cores) each one's imports crawl, and all miss the handshake
        # timeout; a few at a time, each starts in its usual second or two.
        self._starting = anyio.CapacityLimiter(max(2, os.cpu_count() or 2))

    async def __aenter__(self) -> ToolPool:
        stack = AsyncExitStack()
        try:
            if self.tape is not None:
                stack.callback(self.tape.close)
                self.toolset = await self.tape.discover(self.workdir)
            elif self.per_rollout:
                self.toolset = await discover(self.spec, workdir=self.workdir)
            if not self.per_rollout:
                self._tg = tg = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(self._release_shared)
                if self.tape is None:  # the session that describes the server is the one the rollouts share
                    self._shared = await tg.start(self._hold)
                    self.toolset = await describe(self._shared)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    def hide(self, names: set[str]) -> None:
        """Stop offering `names` (tools found unsafe to call once the pool was open): sessions opened from
        now on refuse them."""
        assert self.toolset is not None
        self.toolset = self.toolset.hiding(names)
        self.spec = self.toolset.spec

    def give_private_homes(self) -> None:
        """Give every session opened from now on a home folder of its own (`ServerSpec.private_home`: a server
        found to keep its state under the home)."""
        assert self.toolset is not None
        self.spec = self.spec.model_copy(update={"private_home": True})
        self.toolset = self.toolset.model_copy(update={"spec": self.spec})

    @asynccontextmanager
    async def session(self, *, private_home: bool | None = None) -> AsyncIterator[ToolSession]:
        """A session for one rollout. Raises `ServerGone` when the server cannot be (re)connected.
        `private_home`: this per-rollout session's home folder is one of its own, or the user's (None: as the
        spec says)."""
        live = partial(self._live_session, private_home)
        if self.tape is not None:
            async with self.tape.session(live) as session:
                yield session
            return
        async with live() as session:
            yield session

    @asynccontextmanager
    async def _live_session(self, private_home: bool | None = None) -> AsyncIterator[ToolSession]:
        if not self.per_rollout:
            if self._tg is None:
                raise RuntimeError("a shared session lives in the pool: enter it first (async with ToolPool(...))")
            yield await self._shared_session()
            return
        spec = self.spec if private_home is None else self.spec.model_copy(update={"private_home": private_home})
        stack = AsyncExitStack()
        try:
            async with self._starting:
                session = await stack.enter_async_context(open_session(spec, workdir=self.workdir))
        except UserError as e:
            raise ServerGone(f"could not start a session: {e}") from None
        async with stack:
            yield session

    async def _shared_session(self) -> ToolSession:
        async with self._lock:
            if self._shared is None or not self._shared.alive:
                self._release_shared()
                assert self._tg is not None
                try:
                    self._shared = await self._tg.start(self._hold)
                except UserError as e:
                    raise ServerGone(f"could not reconnect: {e}") from None
            return self._shared

    async def _hold(self, *, task_status: TaskStatus[ToolSession]) -> None:
        """Keep one shared session open (in the pool's task group) until it is released."""
        release = self._release = anyio.Event()
        async with open_session(self.spec, workdir=self.workdir) as session:
            task_status.started(session)
            await release.wait()

    def _release_shared(self) -> None:
        if self._release is not None:
            self._release.set()
        self._shared = None
