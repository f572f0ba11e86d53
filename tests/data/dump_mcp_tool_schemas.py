"""Regenerates tests/data/mcp_tool_schemas.json: the inputSchemas of real MCP servers' tools,
dumped over stdio through mcprl's own client (`mcprl.tools.discover`, what
`mcprl tools --server CMD` runs). Each schema is the tool's `inputSchema` exactly as the server's
tools/list sent it (`ToolSet.mcp_tools`; `mcprl tools --json` prints the same after `to_openai`,
which only drops string `title`s).

Install the servers outside the repo (the versions of the committed file; none needs a network
or a real credential to list its tools, the API keys below are dummies):

    npm install --prefix /tmp/mcpnpm @modelcontextprotocol/server-filesystem@2026.8.31 \\
        @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-everything@2026.8.31 \\
        @modelcontextprotocol/server-sequential-thinking@2026.8.31 @modelcontextprotocol/server-github@2025.4.8 \\
        @modelcontextprotocol/server-gitlab@2025.4.25 @modelcontextprotocol/server-slack@2025.4.25 \\
        @modelcontextprotocol/server-puppeteer@2025.5.12 @modelcontextprotocol/server-brave-search@0.6.2 \\
        @modelcontextprotocol/server-google-maps@0.6.2 @notionhq/notion-mcp-server@2.5.2 \\
        @playwright/mcp@0.0.83 @upstash/context7-mcp@4.1.1
    python3 -m venv /tmp/mcpservers && /tmp/mcpservers/bin/pip install mcp-server-fetch==2026.10.24 \\
        mcp-server-git==2026.10.19 mcp-server-time==2026.10.19 excel-mcp-server==2.2.2 duckduckgo-mcp-server==0.7.0 \\
        mcp==2.3.0 pydantic==2.14.3 email-validator==2.4.0   # the last three: pydantic_nested_server.py
    # mcp-server-sqlite 2025.4.25 fails to start on mcp 2 ('Server' object has no attribute 'list_resources')
    python3 -m venv /tmp/mcpsqlite && /tmp/mcpsqlite/bin/pip install mcp-server-sqlite==2025.4.25 'mcp<2'

(`PUPPETEER_SKIP_DOWNLOAD=true` skips puppeteer's browser download: listing tools needs no browser.)
Then, from the repo root, with the project's Python (mcprl installed):

    python tests/data/dump_mcp_tool_schemas.py [--npm /tmp/mcpnpm] [--venv /tmp/mcpservers] \\
        [--sqlite-venv /tmp/mcpsqlite]

The `_source` it writes names each server's package and installed version and the dump date.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

import anyio

from mcprl.tools import ServerSpec, discover

REPO = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "mcp_tool_schemas.json"


class Server(NamedTuple):
    key: str  # the "server" in "server/tool"
    registry: str  # "npm", "pypi", "sqlite" (PyPI, in its own venv) or "repo" (servers/ here)
    package: str  # PyPI: one or more, space-separated
    command: str  # {bin}: the install's bin folder; {tmp}: a scratch folder; {here}: this folder
    env: tuple[str, ...] = ()
    note: str = ""


SERVERS = [
    Server("calculator", "repo", "mcprl.servers.calculator", "python -m mcprl.servers.calculator"),
    Server("inventory", "repo", "mcprl.servers.inventory", "python -m mcprl.servers.inventory"),
    Server("email", "repo", "mcprl.servers.email", "python -m mcprl.servers.email"),
    Server("filesystem", "npm", "@modelcontextprotocol/server-filesystem", "{bin}/mcp-server-filesystem {tmp}"),
    Server(
        "memory",
        "npm",
        "@modelcontextprotocol/server-memory",
        "{bin}/mcp-server-memory",
        ("MEMORY_FILE_PATH={tmp}/memory.jsonl",),
    ),
    Server("everything", "npm", "@modelcontextprotocol/server-everything", "{bin}/mcp-server-everything"),
    Server(
        "sequential-thinking",
        "npm",
        "@modelcontextprotocol/server-sequential-thinking",
        "{bin}/mcp-server-sequential-thinking",
    ),
    Server("github", "npm", "@modelcontextprotocol/server-github", "{bin}/mcp-server-github"),
    Server(
        "gitlab",
        "npm",
        "@modelcontextprotocol/server-gitlab",
        "{bin}/mcp-server-gitlab",
        ("GITLAB_PERSONAL_ACCESS_TOKEN=dummy",),
    ),
    Server(
        "slack",
        "npm",
        "@modelcontextprotocol/server-slack",
        "{bin}/mcp-server-slack",
        ("SLACK_BOT_TOKEN=xoxb-dummy", "SLACK_TEAM_ID=T0"),
    ),
    Server("puppeteer", "npm", "@modelcontextprotocol/server-puppeteer", "{bin}/mcp-server-puppeteer"),
    Server(
        "brave-search",
        "npm",
        "@modelcontextprotocol/server-brave-search",
        "{bin}/mcp-server-brave-search",
        ("BRAVE_API_KEY=dummy",),
    ),
    Server(
        "google-maps",
        "npm",
        "@modelcontextprotocol/server-google-maps",
        "{bin}/mcp-server-google-maps",
        ("GOOGLE_MAPS_API_KEY=dummy",),
    ),
    Server("notion", "npm", "@notionhq/notion-mcp-server", "{bin}/notion-mcp-server"),
    Server("playwright", "npm", "@playwright/mcp", "{bin}/playwright-mcp"),
    Server("context7", "npm", "@upstash/context7-mcp", "{bin}/context7-mcp"),
    Server("fetch", "pypi", "mcp-server-fetch", "{bin}/mcp-server-fetch"),
    Server("git", "pypi", "mcp-server-git", "{bin}/mcp-server-git"),
    Server("time", "pypi", "mcp-server-time", "{bin}/mcp-server-time --local-timezone UTC"),
    Server("excel", "pypi", "excel-mcp-server", "{bin}/excel-mcp-server stdio"),
    Server("duckduckgo", "pypi", "duckduckgo-mcp-server", "{bin}/duckduckgo-mcp-server"),
    Server("sqlite", "sqlite", "mcp-server-sqlite", "{bin}/mcp-server-sqlite --db-path {tmp}/test.db"),
    Server(
        "pydantic-nested",
        "pypi",
        "mcp pydantic",
        "{bin}/python {here}/pydantic_nested_server.py",
        note="SYNTHETIC: a tool made up in tests/data/pydantic_nested_server.py, its schema as the SDK emits it",
    ),
]

SOURCE = (
    "inputSchemas of real MCP tools, keyed server/tool, dumped on {date} by tests/data/dump_mcp_tool_schemas.py: "
    "each server run over stdio and listed through mcprl's own client, each schema exactly as its tools/list "
    "sent it. Servers: {servers}."
)


def version(server: Server, bins: dict[str, Path]) -> str:
    if server.registry == "repo":
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        return f"this repo's servers/ at {commit.stdout.strip()}"
    if server.registry == "npm":
        package_json = bins["npm"].parent / server.package / "package.json"
        return f"npm {server.package}@{json.loads(package_json.read_text())['version']}"
    packages = server.package.split()
    code = f"import importlib.metadata as m; print(*map(m.version, {packages!r}))"
    found = subprocess.run([bins[server.registry] / "python", "-c", code], capture_output=True, text=True, check=True)
    return "PyPI " + " ".join(f"{p}=={v}" for p, v in zip(packages, found.stdout.split()))


async def dump(server: Server, bins: dict[str, Path]) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="mcp-dump-") as tmp:
        fill = {"bin": bins.get(server.registry, ""), "tmp": tmp, "here": OUT.parent}
        spec = ServerSpec.parse(
            server.command.format(**fill),
            env=[e.format(**fill) for e in server.env],
            cwd=str(REPO) if server.registry == "repo" else tmp,
            connect_timeout=60,
        )
        return (await discover(spec)).mcp_tools


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npm", type=Path, default=Path("/tmp/mcpnpm"), help="the npm --prefix the servers went to")
    ap.add_argument("--venv", type=Path, default=Path("/tmp/mcpservers"), help="the PyPI servers' venv")
    ap.add_argument("--sqlite-venv", type=Path, default=Path("/tmp/mcpsqlite"), help="mcp-server-sqlite's venv")
    args = ap.parse_args()
    bins = {"npm": args.npm / "node_modules" / ".bin", "pypi": args.venv / "bin", "sqlite": args.sqlite_venv / "bin"}

    schemas: dict[str, dict] = {}
    sources = []
    for server in SERVERS:
        tools = anyio.run(dump, server, bins)
        note = f", {server.note}" if server.note else ""
        sources.append(f"{server.key}: {version(server, bins)} ({len(tools)} tools{note})")
        for tool in tools:
            schemas[f"{server.key}/{tool['name']}"] = tool["inputSchema"]
        print(sources[-1])
    source = SOURCE.format(date=datetime.date.today().isoformat(), servers="; ".join(sources))
    # One schema per line: diffs of a re-dump show which tools changed.
    lines = ",\n".join(
        f"    {json.dumps(key)}: {json.dumps(schema, ensure_ascii=False)}" for key, schema in schemas.items()
    )
    OUT.write_text(f'{{\n  "_source": {json.dumps(source)},\n  "schemas": {{\n{lines}\n  }}\n}}\n')
    print(f"{len(schemas)} schemas -> {OUT}")


if __name__ == "__main__":
    main()
