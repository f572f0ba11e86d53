"""The one way the run keeps a Ray actor (rollout workers, policy replicas, the trainer actor):
start it with its options, wait until it is ready, say in one line where and why one failed, end
it, replace it. Each kind of actor is an `ActorKind`; its class has a `start()` method that
returns `where()` it runs (and what else the driver needs of it), or with `error` what failed
there, and a `close()` that releases what it holds.

The callers live in two concurrency styles, so each step has an awaitable form (the rollout
workers on the run's event loop, the replicas on their own) and a blocking one (`start_blocking`,
`retire_blocking`: the trainer actor, which the Runtime drives from a worker thread). Both read
the outcome the same way (`problem`).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

from mcprl.errors import UserError, clip


def where() -> dict[str, Any]:
    """Inside an actor: the Ray node id, its IP and this process's pid."""
    return {"node": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address(), "pid": os.getpid()}


@dataclass(frozen=True)
class ActorKind:
    """A kind of actor the run starts, and what to say when one does not start."""

    what: str  # "rollout worker", "policy replica", "trainer actor"
    cls: type  # its class: start() -> where() | {"error": ...}, close()
    options: dict[str, Any]  # Ray's options: resources, scheduling (never restarted by Ray: the run replaces it)
    timeout_s: float  # how long start() may take
    needs: str  # what a node that runs one needs, said with a failure there
    remedy: str  # besides raising start_timeout_s, what lets one start in time
    grace_s: float = 10.0  # how long close() may take before the actor is killed

    def create(self, *args: Any) -> Any:
        return ray.remote(self.cls).options(**self.options, max_restarts=0).remote(*args)


@dataclass
class Actor:
    """A started actor: its handle and what its start() said (`node`, `ip`, `pid`, and its own keys)."""

    handle: Any
    info: dict[str, Any]

    @property
    def node(self) -> str:
        return self.info["node"]

    @property
    def pid(self) -> int:
        return self.info["pid"]


def problem(kind: ActorKind, outcome: BaseException | dict[str, Any]) -> UserError:
    """Why an actor of `kind` did not start, in one line: too slow, died, or its start() failed (on which node)."""
    if isinstance(outcome, TimeoutError):
        return UserError(
            f"a {kind.what} did not start within {kind.timeout_s:g} s (`ray status` shows what the cluster is short "
            f"of); raise cluster.start_timeout_s or {kind.remedy}"
        )
    if isinstance(outcome, RayActorError):
        cause = outcome.error_msg.strip().splitlines()[-1] if outcome.error_msg else str(outcome)
        return UserError(clip(f"a {kind.what} died while starting: {cause} ({kind.needs})", 800))
    return UserError(
        clip(
            f"{kind.what} on Ray node {outcome['node'][:8]} ({outcome.get('ip', '?')}) failed: {outcome['error']} "
            f"({kind.needs})",
            800,
        )
    )


def kill(handle: Any) -> None:
    """End the actor now (one already dead included)."""
    try:
        ray.kill(handle)
    except (ValueError, RayActorError):
        pass


# ray.kill can return while the actor's process still runs, before this process has heard it
# died: a call sent right after may still run there (a busy machine widens that window). So
# retiring an actor ends with calling Ray's own no-op method on it until that fails with
# ActorDiedError; the actor is never restarted, so every later call on the handle fails too.
GONE_S = 30.0  # how long that may take
POLL_S = 0.05


def not_gone() -> UserError:
    return UserError(f"a Ray actor still answered {GONE_S:g} s after ray.kill (`ray list actors` shows it)")


async def retire(handle: Any, grace_s: float = 10.0) -> None:
    """End an actor: closed if it answers within `grace_s`, killed either way; once this returns,
    a call on `handle` raises RayActorError."""
    try:
        await asyncio.wait_for(handle.close.remote(), grace_s)
    except (TimeoutError, RayActorError):
        pass
    kill(handle)
    deadline = time.monotonic() + GONE_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            await asyncio.wait_for(handle.__ray_ready__.remote(), left)
        except ActorDiedError:
            return
        except (TimeoutError, ActorUnavailableError):
            pass
        await asyncio.sleep(POLL_S)
    raise not_gone()


def retire_blocking(handle: Any, grace_s: float = 10.0) -> None:
    """`retire`, blocking."""
    try:
        ray.get(handle.close.remote(), timeout=grace_s)
    except (TimeoutError, RayActorError):
        pass
    kill(handle)
    deadline = time.monotonic() + GONE_S
    while (left := deadline - time.monotonic()) > 0:
        try:
            ray.get(handle.__ray_ready__.remote(), timeout=left)
        except ActorDiedError:
            return
        except (TimeoutError, ActorUnavailableError):
            pass
        time.sleep(POLL_S)
    raise not_gone()


async def start(kind: ActorKind, *args: Any) -> Actor:
    """An actor of `kind` built from `args`, ready (its start() answered within the kind's timeout),
    or a one-line UserError, the actor ended."""
    handle = kind.create(*args)
    try:
        info = await asyncio.wait_for(handle.start.remote(), kind.timeout_s)
    except (TimeoutError, RayActorError) as e:
        kill(handle)
        raise problem(kind, e) from None
    if "error" in info:
        await retire(handle, kind.grace_s)
        raise problem(kind, info)
    return Actor(handle, info)


def start_blocking(kind: ActorKind, *args: Any) -> Actor:
    """`start`, blocking."""
    handle = kind.create(*args)
    try:
        info = ray.get(handle.start.remote(), timeout=kind.timeout_s)
    except (TimeoutError, RayActorError) as e:
        kill(handle)
        raise problem(kind, e) from None
    if "error" in info:
        retire_blocking(handle, kind.grace_s)
        raise problem(kind, info)
    return Actor(handle, info)


async def replace(kind: ActorKind, dead: Any, *args: Any) -> Actor:
    """A new actor of `kind` in place of the actor `dead` (a handle), which is ended first: one that
    lingers (a hung process, or a server it started) would hold the resources its replacement needs."""
    await retire(dead, kind.grace_s)
    return await start(kind, *args)


def replace_blocking(kind: ActorKind, dead: Any, *args: Any) -> Actor:
    """`replace`, blocking."""
    retire_blocking(dead, kind.grace_s)
    return start_blocking(kind, *args)
