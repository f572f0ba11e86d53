"""The echo_env tools. Not a training environment: it exists for mcprl's own tests."""

from __future__ import annotations

import base64
import json
import os
from typing import Annotated, Any

import anyio
from pydantic import Field

from mcprl.servers import serve

# A 1x1 transparent PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
MAX_CHARS = 20_000_000


def environment() -> str:
    """Return the server process's environment variables as a JSON object."""
    return json.dumps(dict(sorted(os.environ.items())))


def process_id() -> str:
    """Return the server process's id."""
    return str(os.getpid())


def working_directory() -> str:
    """Return the server process's current working directory."""
    return os.getcwd()


async def sleep(seconds: Annotated[float, Field(description="how long to sleep, in seconds")]) -> str:
    """Sleep, then say how long; for testing call timeouts."""
    await anyio.sleep(seconds)
    return f"slept {seconds} s"


def huge(n_chars: Annotated[int, Field(description=f"length of the result, at most {MAX_CHARS}")]) -> str:
    """Return a text result of n_chars characters; for testing truncation."""
    if not 0 <= n_chars <= MAX_CHARS:
        raise ValueError(f"n_chars must be between 0 and {MAX_CHARS}")
    return "x" * n_chars


def fail(message: Annotated[str, Field(description="the error message to raise")]) -> str:
    """Fail with the given message; for testing tool errors."""
    raise ValueError(message)


def picture() -> serve.Image:
    """Return a 1x1 PNG image; for testing binary results."""
    return serve.Image(data=PIXEL, format="png")


def crash() -> str:
    """Kill the server process at once; for testing a server that dies mid-session."""
    os._exit(3)


TOOLS = (environment, process_id, working_directory, sleep, huge, fail, picture, crash)


def build(seed: int = 0) -> Any:
    server = serve.new_server("echo_env", "Test tools: environment, sleeping, huge results, failures and crashes.")
    serve.add_tools(server, TOOLS)
    return server
