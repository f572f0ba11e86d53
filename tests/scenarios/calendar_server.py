"""An MCP server of a calendar, over stdio, for tests of answers read off the server's clock: without a date its
tools answer for today, in sentences that state no date ("The number of days in month is 31."); the moons of a
planet hold on any day.

    python tests/scenarios/calendar_server.py
"""

import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

if __name__ == "__main__":
    hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)


from mcp.server.mcpserver import MCPServer  # noqa: E402

mcp = MCPServer("calendar")
MOONS = {"mercury": 0, "venus": 0, "earth": 1, "mars": 2, "neptune": 16}


def day(date: str) -> datetime.date:
    return datetime.date.fromisoformat(date) if date else datetime.date.today()


@mcp.tool()
def days_in_month(date: str = "") -> str:
    """The number of days in the month of a date (YYYY-MM-DD), or of this month if none is given."""
    first = day(date).replace(day=1)
    following = (first + datetime.timedelta(days=32)).replace(day=1)
    return f"The number of days in month is {(following - first).days}."


@mcp.tool()
def week_of_year(date: str = "") -> str:
    """The ISO week of the year of a date (YYYY-MM-DD), or of today if none is given."""
    return f"The week of the year is {day(date).isocalendar().week}."


@mcp.tool()
def moons(planet: str) -> str:
    """How many moons a planet has (Mercury, Venus, Earth, Mars or Neptune)."""
    count = MOONS.get(planet.strip().lower())
    return f"No planet named {planet}." if count is None else f"The number of moons is {count}."


if __name__ == "__main__":
    mcp.run()
