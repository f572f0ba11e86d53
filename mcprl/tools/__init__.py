"""The MCP client and tool layer: server specs, discovery, sessions, conversion, redaction.

spec = ServerSpec.parse("python -m servers.inventory")
toolset = await discover(spec)
async with open_session(spec) as session:
    outcome = await session.call("get_item", {"sku": "SKU-1234"})
"""

from mcprl.tools.client import ServerGone, ToolOutcome, ToolSession, ToolSet, discover, open_session
from mcprl.tools.convert import hash_change_warning, result_text, to_openai, tools_hash
from mcprl.tools.pool import ToolPool
from mcprl.tools.redact import redact, secret_values
from mcprl.tools.spec import ServerSpec

__all__ = [
    "ServerGone",
    "ServerSpec",
    "ToolOutcome",
    "ToolPool",
    "ToolSession",
    "ToolSet",
    "discover",
    "hash_change_warning",
    "open_session",
    "redact",
    "result_text",
    "secret_values",
    "to_openai",
    "tools_hash",
]
