"""A test server speaking MCP's JSON-RPC over stdio by hand, without the SDK.

It does what SDK servers make hard to provoke: it paginates `tools/list` (`--page-size`), can
serve no tools at all (`--tools 0`), tools `mcprl validate` must reject (`--broken`) or a listing
that is not valid MCP (`--malformed`), and answers calls to `explode` (with `--explode`) or to an
unknown tool with a JSON-RPC error instead of an `isError` result.

    python -m mcprl.servers.bare_jsonrpc --tools 25 --page-size 10 --explode --broken
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32601, -32602, -32603


def tool_list(count: int, explode: bool, broken: bool, malformed: bool) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"x": {"type": "integer", "description": "any integer"}}}
    tools = [
        {"name": f"tool_{i}", "description": f"Return the number {i}.", "inputSchema": schema} for i in range(count)
    ]
    if explode:
        tools.append({"name": "explode", "description": "Fail with a JSON-RPC error.", "inputSchema": schema})
    if broken:
        tools += [
            {"name": "has space", "description": "An illegal name.", "inputSchema": schema},
            {"name": "undescribed", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
            {
                "name": "invalid",
                "description": "Not JSON Schema.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"n": {"type": "integer", "minimum": "zero", "description": "n"}},
                },
            },
        ]
    if malformed:
        tools.append({"name": "listy", "description": "An array schema.", "inputSchema": {"type": "array"}})
    return tools


def answer(request: dict[str, Any], tools: list[dict[str, Any]], page_size: int) -> dict[str, Any]:
    """The result (or error) member of the response to one request."""
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {
            "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bare_jsonrpc", "version": "1"},
            }
        }
    if method == "ping":
        return {"result": {}}
    if method == "tools/list":
        start = int(params.get("cursor") or 0)
        page: dict[str, Any] = {"tools": tools[start : start + page_size]}
        if start + page_size < len(tools):
            page["nextCursor"] = str(start + page_size)
        return {"result": page}
    if method == "tools/call":
        name = params.get("name")
        if name == "explode":
            return {"error": {"code": INTERNAL_ERROR, "message": "the tool exploded"}}
        if not any(t["name"] == name for t in tools):
            return {"error": {"code": INVALID_PARAMS, "message": f"Unknown tool: {name}"}}
        return {"result": {"content": [{"type": "text", "text": str(name).removeprefix("tool_")}]}}
    return {"error": {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=3, help="how many numbered tools to serve")
    parser.add_argument("--page-size", type=int, default=100, help="tools per tools/list page")
    parser.add_argument("--explode", action="store_true", help="also serve `explode`, which answers with an error")
    parser.add_argument("--broken", action="store_true", help="also serve tools with invalid names and schemas")
    parser.add_argument(
        "--malformed", action="store_true", help="also serve a tool whose input schema is not an object"
    )
    args = parser.parse_args()
    tools = tool_list(args.tools, args.explode, args.broken, args.malformed)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification, or a response to nothing we sent
        response = {"jsonrpc": "2.0", "id": message["id"], **answer(message, tools, args.page_size)}
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
