"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1 for tests: no paid API, real HTTP.

    with FakeLLM(["first reply", Reply(status=500), Reply(delay_s=30)]) as llm:
        await complete("openai/fake", msgs, api_base=llm.base_url, api_key="x")
        llm.requests  # the JSON bodies received, in order

Replies are served in order; `handler=` computes one from each request body instead (and may
return a plain string). `response_format=False` plays a server without structured outputs: a
request carrying `response_format` gets HTTP 400 naming it (and uses up no scripted reply). A request past the end of
the script gets HTTP 500 naming the count, so a test that makes more calls than it scripted fails loudly.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer. `delay_s` longer than the client's timeout simulates a hang;
    `body` replaces the whole response body (e.g. broken JSON from the server itself)."""

    content: str | None = ""
    status: int = 200
    delay_s: float = 0.0
    finish_reason: str = "stop"
    body: str | None = None
    prompt_tokens: int = 11
    completion_tokens: int = 7


Handler = Callable[[dict[str, Any]], "Reply | str"]


class FakeLLM:
    def __init__(
        self, replies: Sequence[Reply | str] = (), *, handler: Handler | None = None, response_format: bool = True
    ):
        self._response_format = response_format
        self._script = [Reply(r) if isinstance(r, str) else r for r in replies]
        self._handler = handler
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use FakeLLM as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if "response_format" in body and not self._response_format:
                return Reply(
                    status=400,
                    body=json.dumps({"error": {"message": "Unrecognized request argument supplied: response_format"}}),
                )
            index = sum("response_format" not in r or self._response_format for r in self.requests) - 1
        if self._handler is not None:
            reply = self._handler(body)
            return Reply(reply) if isinstance(reply, str) else reply
        if index < len(self._script):
            return self._script[index]
        return Reply(
            status=500, body=json.dumps({"error": {"message": f"FakeLLM: no reply scripted for request {index + 1}"}})
        )

    def __enter__(self) -> FakeLLM:
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = fake._next_reply(body)
                if reply.delay_s and fake._closing.wait(reply.delay_s):
                    return
                if reply.body is not None:
                    payload = reply.body
                elif reply.status != 200:
                    payload = json.dumps(
                        {"error": {"message": f"FakeLLM scripted HTTP {reply.status}", "type": "server_error"}}
                    )
                else:
                    payload = json.dumps(_completion(body, reply))
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _completion(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def message_text(request: dict[str, Any], role: str) -> str:
    """All `role` message contents of a request, joined (for handlers that answer by content)."""
    return "\n".join(str(m.get("content") or "") for m in request.get("messages", []) if m.get("role") == role)


_TRAJECTORY_BLOCK = re.compile(r'<trajectory id="(\w+)">\n(.*?)\n</trajectory>', re.DOTALL)


def shown_trajectories(request: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, rendered messages) of each trajectory a RULER request shows the judge, in order."""
    return _TRAJECTORY_BLOCK.findall(message_text(request, "user"))


def ruler_handler(score_of: Callable[[str], float]) -> Handler:
    """A RULER judge that scores each shown trajectory by `score_of(its rendered messages)`, so
    a test can check every trajectory got its own score back through the shuffle."""

    def handler(request: dict[str, Any]) -> str:
        scores = [
            {"trajectory_id": tid, "explanation": f"scored {score_of(body)}", "score": score_of(body)}
            for tid, body in shown_trajectories(request)
        ]
        return "Here is my verdict:\n" + json.dumps({"scores": scores})

    return handler
