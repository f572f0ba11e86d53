"""The MCP client and tool layer: server specs, discovery, sessions, conversion, redaction.

spec = ServerSpec.parse("python -m mcprl.servers.inventory")
toolset = await discover(spec)
async with open_session(spec) as session:
    outcome = await session.call("get_item", {"sku": "SKU-1234"})

The names that need the MCP SDK are imported on first use, so that reading a server's settings
(`ServerSpec`, `mcprl.tools.config.ServerConfig`) does not load it. (`redact` is imported
now: a lazy name that is also a submodule's would be shadowed by the submodule once imported.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcprl.loading import exports
from mcprl.tools.redact import redact, redact_model, secret_values
from mcprl.tools.spec import ServerSpec

_EXPORTS = {
    "ServerGone": "mcprl.tools.client",
    "ToolOutcome": "mcprl.tools.client",
    "ToolSession": "mcprl.tools.client",
    "ToolSet": "mcprl.tools.client",
    "discover": "mcprl.tools.client",
    "open_session": "mcprl.tools.client",
    "hash_change_warning": "mcprl.tools.convert",
    "result_text": "mcprl.tools.convert",
    "to_openai": "mcprl.tools.convert",
    "tools_hash": "mcprl.tools.convert",
    "ToolPool": "mcprl.tools.pool",
    "ServerConfig": "mcprl.tools.config",
    "open_tools": "mcprl.tools.discovery",
    "write_tools": "mcprl.tools.discovery",
}

if TYPE_CHECKING:
    from mcprl.tools.client import ServerGone, ToolOutcome, ToolSession, ToolSet, discover, open_session
    from mcprl.tools.config import ServerConfig
    from mcprl.tools.convert import hash_change_warning, result_text, to_openai, tools_hash
    from mcprl.tools.discovery import open_tools, write_tools
    from mcprl.tools.pool import ToolPool

__getattr__ = exports(__name__, _EXPORTS)


__all__ = sorted([*_EXPORTS, "ServerSpec", "redact", "redact_model", "secret_values"])
