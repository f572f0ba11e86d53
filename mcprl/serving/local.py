"""Run the policy endpoint inside this process (for training runs, judges and tests)."""

from __future__ import annotations

import atexit
import secrets
import socket
import threading
import time

import uvicorn

from mcprl.errors import UserError
from mcprl.serving.app import create_app
from mcprl.serving.engine import Engine


def check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, port))
        except OSError:
            raise UserError(f"port {port} on {host} is busy; pass a free --port (or stop what holds it)") from None


SHUTDOWN_GRACE_S = 2  # how long closing waits for requests in flight before cancelling them


class LocalEndpoint:
    """uvicorn serving `create_app(engine)` on a background thread. Port 0 picks a free port."""

    def __init__(self, engine: Engine, host: str = "127.0.0.1", port: int = 0, api_key: str | None = None):
        if port:
            check_port_free(host, port)
        self.engine = engine
        self.api_key = api_key
        config = uvicorn.Config(
            create_app(engine, api_key),
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="mcprl-endpoint", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise UserError(f"the policy endpoint failed to start on {host}:{port}; is the port free?")
            time.sleep(0.01)
        sock = self._server.servers[0].sockets[0].getsockname()
        self.host, self.port = host, sock[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


_LOCAL: dict[str, LocalEndpoint] = {}
_LOCAL_LOCK = threading.Lock()


@atexit.register
def _close_local() -> None:
    """Stop in-process endpoints before the interpreter tears down torch's threads."""
    for endpoint in _LOCAL.values():
        endpoint.close()


def local_endpoint(model_spec: str = "smollm2-135m") -> tuple[str, str]:
    """Base URL and API key of an in-process endpoint serving `model_spec` (started once per
    process, with a random key: other users of the machine can reach its loopback port).

    This is what the model name `local` means for scenario generation and judging: the base
    policy model, weak but real, offline."""
    with _LOCAL_LOCK:
        if model_spec not in _LOCAL:
            _LOCAL[model_spec] = LocalEndpoint(Engine(model_spec), api_key=secrets.token_urlsafe(24))
        endpoint = _LOCAL[model_spec]
        return endpoint.base_url, endpoint.api_key
