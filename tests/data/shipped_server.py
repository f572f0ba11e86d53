"""A shipped server, `python -m mcprl.servers.NAME ARGS...`, run as `python tests/data/shipped_server.py NAME
ARGS...`: the same module run as `__main__` with the same arguments, by a fork of a process that has imported the
MCP SDK under pytest (tests/server_fork.py). For the tests that open many sessions of a shipped server and are not
about how its command is spelled.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import runpy  # noqa: E402

if __name__ == "__main__":
    name = sys.argv.pop(1)
    runpy.run_module(f"mcprl.servers.{name}", run_name="__main__", alter_sys=True)
