"""The fork server the test servers start from (tests/server_fork.py): each session's server is a process of its
own, forked by the fork server rather than a new interpreter, with the environment and working directory the
session gave its command, answering over the session's own stdio; a server that dies ends its session as one
started anew does."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mcprl.tools import ServerSpec, ToolPool
from mcprl.tools.client import ServerGone, open_session
from tests.server_fork import shipped

pytestmark = pytest.mark.anyio


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def test_each_session_is_a_forked_process_with_the_sessions_environment_and_folder(fork_server, tmp_path):
    spec = ServerSpec.parse(shipped("echo_env"), env=["MARK=forked"], cwd=str(tmp_path))
    pids = []
    async with ToolPool(spec) as pool:
        for _ in range(2):
            async with pool.session() as session:
                environment = json.loads((await session.call("environment", {})).text)
                folder = (await session.call("working_directory", {})).text
                pid = int((await session.call("process_id", {})).text)
                assert parent_of(pid) == fork_server.pid  # forked, not an interpreter of its own
            assert environment["MARK"] == "forked" and folder == str(tmp_path)
            pids.append(pid)
        assert pids[0] != pids[1]  # a process per session
    # a crash ends the session promptly, as a server started anew ends it
    async with open_session(spec) as session:
        started = time.monotonic()
        with pytest.raises(ServerGone, match="the server process exited"):
            await session.call("crash")
        assert time.monotonic() - started < 3
