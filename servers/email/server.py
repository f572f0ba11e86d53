"""The email MCP server: search and read a seeded mailbox."""

from __future__ import annotations

from typing import Any

from mcprl.servers import serve
from mcprl.servers.email.mailbox import Mailbox


def build(seed: int = 0) -> Any:
    mailbox = Mailbox(seed)
    server = serve.new_server(
        "email",
        "Alex Morgan's mailbox for 2024. Search it, then read the emails that look relevant.",
    )
    serve.add_tools(server, [getattr(mailbox, name) for name in Mailbox.TOOL_NAMES])
    return server
