"""An MCP server with one tool written for mcp_tool_schemas.json (entry `pydantic-nested/*`): a
tool taking nested pydantic models and an Optional argument, so the file has the
`$defs`/`$ref`/`anyOf`-null shape the Python SDK's high-level server emits for such signatures,
with `format: email` and `date-time`, which no public server dumped there uses. The tool is
made up, its schema is the SDK's. Run by dump_mcp_tool_schemas.py (needs `email-validator`).
"""

from datetime import datetime
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, EmailStr, Field


class Attendee(BaseModel):
    email: EmailStr
    role: Literal["required", "optional"]


class Slot(BaseModel):
    start: datetime
    minutes: Annotated[int, Field(ge=15, le=480)]


server = MCPServer("pydantic-nested")


@server.tool()
def schedule_meeting(
    title: Annotated[str, Field(max_length=80)],
    attendees: Annotated[list[Attendee], Field(max_length=5)],
    slot: Slot,
    room: str | None = None,
) -> str:
    """Schedule a meeting."""
    return f"scheduled {title}"


if __name__ == "__main__":
    server.run()
