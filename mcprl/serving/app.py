"""The OpenAI-compatible HTTP surface over an `Engine`.

Nothing that grows with a request runs on the event loop: the body is read up to
`ServeLimits.max_body_bytes` (refused from its Content-Length when that says more), parsed and
validated on a worker thread, and the engine renders, tokenizes, compiles and decodes on worker
threads too, so `/health` answers while hostile requests are in flight. A client that disconnects
has its generation cancelled.
"""

from __future__ import annotations

import gc
import hmac
import time
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from mcprl.errors import first_problem
from mcprl.model import memory
from mcprl.serving.engine import BadRequest, Engine, UnknownModel
from mcprl.serving.protocol import ChatRequest, error_body


class RequireKey:
    """ASGI middleware: every path but `/health` (docs, OpenAPI schema and metrics included) needs
    `Authorization: Bearer KEY`."""

    def __init__(self, app, key: str):
        self.app, self.key = app, key.encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] != "/health":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not (given.startswith(b"Bearer ") and hmac.compare_digest(given[7:].strip(), self.key)):
                body = error_body(
                    "missing or wrong API key; send 'Authorization: Bearer <key>'",
                    "authentication_error",
                    code="invalid_api_key",
                )
                await JSONResponse(body, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def bad_request(message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, param=param), status_code=400)


def give_back_memory() -> None:
    """Free what a refused request took (a sampled batch frees its own): what parsing it left in
    reference cycles (a validation error made on a worker thread, holding the body's values) is
    collected, and the allocator returns the pages. (An engine refusal clears its own frames,
    `Engine.chat`, so its rendered prompt's tokens are already gone.)"""
    gc.collect(1)
    memory.release()


def create_app(engine: Engine, api_key: str | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with anyio.create_task_group() as tg:
            tg.start_soon(engine.run_batcher)
            yield
            engine.close()  # stop what is still sampling, so the batcher's thread returns at once
            tg.cancel_scope.cancel()

    app = FastAPI(title="mcprl policy endpoint", lifespan=lifespan)
    if api_key is not None:
        app.add_middleware(RequireKey, key=api_key)
    limits = engine.limits

    async def read_body(request: Request) -> bytes | None:
        """The body, or None when it is over `max_body_bytes` (stopped reading there)."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limits.max_body_bytes:
            return None
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limits.max_body_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    async def answer(request: Request, req: ChatRequest) -> Response:
        """The engine's answer to `req`, unless the client goes away first (then its work is cancelled)."""
        reply: Response | None = None
        async with anyio.create_task_group() as tg:

            async def cancel_when_gone() -> None:
                # With the body read, the next message the server gives is the client's disconnect.
                while (await request.receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(cancel_when_gone)
            try:
                reply = JSONResponse(await engine.chat(req))
            except UnknownModel as e:
                reply = JSONResponse(error_body(str(e), param="model", code="model_not_found"), status_code=404)
            except BadRequest as e:
                reply = bad_request(str(e))
            tg.cancel_scope.cancel()
        return reply if reply is not None else Response(status_code=499)  # nobody is left to read it

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models():
        now = int(time.time())
        return {
            "object": "list",
            "data": [{"id": m, "object": "model", "created": now, "owned_by": "mcprl"} for m in engine.served_models()],
        }

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await read_body(request)
        if body is None:
            return bad_request(limits.refuse("max_body_bytes", "the request body"))
        try:
            req = await anyio.to_thread.run_sync(ChatRequest.model_validate_json, body)
        except ValidationError as e:
            param = ".".join(str(p) for p in e.errors()[0].get("loc", ())) or None
            reply = bad_request(first_problem(e, whole="the request body"), param)
        else:
            reply = await answer(request, req)
        if reply.status_code >= 400:  # give back what parsing, rendering and tokenizing it took
            await anyio.to_thread.run_sync(give_back_memory)
        return reply

    @app.get("/metrics")
    async def metrics():
        return engine.metrics

    return app
