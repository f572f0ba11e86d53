"""Opening the server a run trains against (its settings: `mcprl.tools.config.ServerConfig`), which
discovers its tools and records them in the run directory's tools.json.

    async with open_tools(ServerConfig(target="python -m mcprl.servers.calculator"), run_dir) as pool:
        ...  # pool.toolset: the tools the model sees; None when the run has no server
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from mcprl.errors import UserError
from mcprl.tools.config import ServerConfig
from mcprl.tools.convert import hash_change_warning
from mcprl.tools.pool import ToolPool
from mcprl.tools.redact import redact, secret_values


def write_tools(pool: ToolPool, run_dir: Path) -> None:
    """The run's tools.json: the tools it offers and their hash, secrets masked (a server can repeat a
    secret it was given, an --env token, in a tool's description)."""
    assert pool.toolset is not None
    record = {"server": pool.spec.target, "hash": pool.toolset.hash, "tools": pool.toolset.tools}
    (run_dir / "tools.json").write_text(json.dumps(redact(record, secret_values(pool.spec)), indent=2))


@asynccontextmanager
async def open_tools(
    server: ServerConfig, run_dir: Path, *, say: Callable[[str], None] = print
) -> AsyncIterator[ToolPool | None]:
    """The run's tool pool (None without a server): discovered once, with tools.json written (the tool
    list and its hash, secrets masked) and a warning when the tools changed since the run began.
    A stdio server without a `cwd` runs in the run's own `server-workdir/`."""
    if not server.connects:
        yield None
        return
    if server.record is None and server.replay is None:  # a run records its calls into its own directory
        server = server.model_copy(update={"record": str(run_dir / "cassette.jsonl")})
    spec = server.spec()
    secrets = secret_values(spec)
    shown = redact(spec.target, secrets)  # the URL may hold a key (?api_key=...)
    workdir = None
    if spec.transport == "stdio" and spec.cwd is None:
        workdir = run_dir / "server-workdir"
        workdir.mkdir(parents=True, exist_ok=True)
    say(f"discovering tools of {shown} ...")
    async with ToolPool(spec, workdir=workdir) as pool:
        toolset = pool.toolset
        if not toolset.tools:
            raise UserError(f"{shown} offers no tools (after --allow/--deny); nothing to train on")
        tools_file = run_dir / "tools.json"
        previous = json.loads(tools_file.read_text())["hash"] if tools_file.exists() else None
        if warning := hash_change_warning(previous, toolset.hash, shown):
            say(f"warning: {warning}")
        write_tools(pool, run_dir)
        say(f"{len(toolset.tools)} tools: {', '.join(t['function']['name'] for t in toolset.tools)}")
        yield pool
        if pool.tape is not None and (summary := pool.tape.summary()):
            say(summary)
