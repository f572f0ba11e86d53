"""The OpenAI-compatible HTTP surface over an `Engine`."""

from __future__ import annotations

import hmac
import time

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from mcprl.errors import first_problem
from mcprl.serving.engine import BadRequest, Engine, UnknownModel
from mcprl.serving.protocol import ChatRequest, error_body


def create_app(engine: Engine, api_key: str | None = None) -> FastAPI:
    from contextlib import asynccontextmanager

    import anyio

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with anyio.create_task_group() as tg:
            tg.start_soon(engine.run_batcher)
            yield
            tg.cancel_scope.cancel()

    app = FastAPI(title="mcprl policy endpoint", lifespan=lifespan)

    @app.middleware("http")
    async def check_key(request: Request, call_next):
        if api_key is not None and request.url.path.startswith("/v1"):
            given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            if not hmac.compare_digest(given.encode(), api_key.encode()):
                return JSONResponse(error_body("missing or wrong API key; send 'Authorization: Bearer <key>'", "authentication_error", code="invalid_api_key"), status_code=401)
        return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError):
        param = ".".join(str(p) for p in exc.errors()[0].get("loc", ()) if p != "body") or None
        return JSONResponse(error_body(first_problem(exc), param=param), status_code=400)

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models():
        now = int(time.time())
        return {"object": "list", "data": [{"id": m, "object": "model", "created": now, "owned_by": "mcprl"} for m in engine.served_models()]}

    @app.post("/v1/chat/completions")
    async def chat(req: ChatRequest):
        try:
            return await engine.chat(req)
        except UnknownModel as e:
            return JSONResponse(error_body(str(e), param="model", code="model_not_found"), status_code=404)
        except BadRequest as e:
            return JSONResponse(error_body(str(e)), status_code=400)

    @app.get("/metrics")
    async def metrics():
        return engine.metrics

    return app
