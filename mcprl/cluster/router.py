"""The policy's one endpoint in front of its replicas (`[cluster] policy_replicas`): an
OpenAI-compatible reverse proxy that sends each request to the replica with the fewest requests
outstanding, and says in the reply's `x-mcprl-replica` header which one answered (the recording
client keeps it on the Generation). Every agent keeps talking to one base URL through the
recording client; the proxy is the only thing that knows there are several replicas.

A request whose replica cannot be reached, or drops the connection mid-answer (its process died),
is sent again to another replica: a sampling request has no side effect, and the recording client
records only the reply that came back, so the rollout goes on with nothing lost and nothing twice.
The pool (mcprl.cluster.replicas) meanwhile checks the replica and replaces it if it is dead.

Nothing here imports Ray: the pool does."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcprl.serving.app import RequireKey

REPLICA_HEADER = "x-mcprl-replica"
MAX_TRIES = 4  # replicas one request is sent to before the proxy answers 502


@dataclass(eq=False)
class Replica:
    name: str  # r0, r1, ... (a replacement gets the next name)
    url: str  # its OpenAI base URL (ending in /v1)
    key: str  # its API key
    actor: Any = None  # the Ray actor handle
    node: str = ""
    pid: int = 0
    dir: str = ""  # its working directory on its node (the adapters it was sent)
    outstanding: int = 0  # requests sent to it and not yet answered
    chosen: int = 0  # when it was last chosen (a count of choices): ties go to the least recent
    adapters: set[str] = field(default_factory=set)  # the adapter names it serves


_choices = itertools.count(1)


def least_outstanding(replicas: Sequence[Replica]) -> Replica:
    """The replica with the fewest requests outstanding; on a tie, the one chosen least recently
    (so short requests that never overlap still take turns)."""
    replica = min(replicas, key=lambda r: (r.outstanding, r.chosen))
    replica.chosen = next(_choices)
    return replica


class Pool(Protocol):
    """The replicas the proxy may use; its methods run on the proxy's event loop."""

    async def acquire(self) -> Replica:
        """A serving replica, chosen by `least_outstanding` (waits while none serves)."""
        ...

    async def failed(self, replica: Replica) -> None:
        """`replica` could not answer: take it out of service, check it, replace it if dead."""
        ...


def proxy_app(pool: Pool, api_key: str) -> Starlette:
    """The proxy: every path under /v1 forwarded to a replica, with that replica's key."""
    client = httpx.AsyncClient(timeout=600)

    async def forward(request: Request) -> Response:
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("content-type", "accept")}
        path = request.url.path.removeprefix("/v1")
        for _ in range(MAX_TRIES):
            replica = await pool.acquire()
            replica.outstanding += 1
            try:
                reply = await client.request(
                    request.method,
                    replica.url + path,
                    content=body,
                    params=request.query_params,
                    headers={**headers, "authorization": f"Bearer {replica.key}"},
                )
            except httpx.TransportError:  # refused, or dropped mid-answer: the replica may be dead
                await pool.failed(replica)
                continue
            finally:
                replica.outstanding -= 1
            keep = {k: v for k, v in reply.headers.items() if k.lower() == "content-type"}
            return Response(
                reply.content, status_code=reply.status_code, headers={**keep, REPLICA_HEADER: replica.name}
            )
        error = {"message": f"no policy replica answered after {MAX_TRIES} tries", "type": "server_error", "code": None}
        return JSONResponse({"error": error}, status_code=502)

    app = Starlette(routes=[Route("/v1/{path:path}", forward, methods=["GET", "POST"])])
    app.add_middleware(RequireKey, key=api_key)
    return app
