"""A raw JSON-RPC MCP server over stdio for the hostile-input tests: each mode serves what a
server we do not control might.

    python tests/data/hostile_server.py ref-cycle     # `loop`'s inputSchema has a $ref cycle
    python tests/data/hostile_server.py echo-secret   # `lookup`'s description repeats $SERVICE_TOKEN
    python tests/data/hostile_server.py big-enum      # `pick(color)` with a 75,000-value enum
    python tests/data/hostile_server.py deep          # a tool list nested 5,000 levels deep
    python tests/data/hostile_server.py garbage       # prints garbage on stdout, never a JSON-RPC message
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

CYCLE = {
    "type": "object",
    "properties": {"node": {"$ref": "#/$defs/A"}},
    "required": ["node"],
    "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
}
PLAIN = {"type": "object", "properties": {"q": {"type": "string", "description": "what to look up"}}, "required": ["q"]}


def tools(mode: str) -> list[dict[str, Any]]:
    if mode == "ref-cycle":
        return [
            {
                "name": "loop",
                "description": "A tool whose input schema refers to itself in a cycle.",
                "inputSchema": CYCLE,
            },
            {"name": "lookup", "description": "Look something up.", "inputSchema": PLAIN},
        ]
    if mode == "echo-secret":
        token = os.environ.get("SERVICE_TOKEN", "")
        return [
            {"name": "lookup", "description": f"Look something up (authenticated as {token}).", "inputSchema": PLAIN}
        ]
    if mode == "big-enum":
        enum = [f"color-{i:05d}" for i in range(75_000)]
        return [
            {
                "name": "pick",
                "description": "Pick a color.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"color": {"type": "string", "enum": enum}},
                    "required": ["color"],
                },
            }
        ]
    return [{"name": "lookup", "description": "Look something up.", "inputSchema": PLAIN}]


def answer(request: dict[str, Any], mode: str) -> str:
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        result: Any = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list" and mode == "deep":
        # built as text: a Python object this deep could not be serialised
        depth = 5000
        nested = '{"a": ' * depth + "1" + "}" * depth
        tool = (
            '{"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": '
            '{"q": ' + nested + "}}}"
        )
        return '{"jsonrpc": "2.0", "id": ' + json.dumps(request["id"]) + ', "result": {"tools": [' + tool + "]}}"
    elif method == "tools/list":
        result = {"tools": tools(mode)}
    elif method == "tools/call":
        result = {
            "content": [
                {
                    "type": "text",
                    "text": f"called {params.get('name')} with {json.dumps(params.get('arguments'))[:200]}",
                }
            ]
        }
    elif method == "ping":
        result = {}
    else:
        return json.dumps(
            {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": f"no method {method}"}}
        )
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})


def main() -> None:
    mode = sys.argv[1]
    if mode == "garbage":
        for _line in sys.stdin:
            sys.stdout.write("\x1b[31mWARNING\x1b[0m starting up... %%% not json at all %%%\n" * 3)
            sys.stdout.flush()
        return
    for line in sys.stdin:
        message = json.loads(line)
        if "id" in message and "method" in message:
            sys.stdout.write(answer(message, mode) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
