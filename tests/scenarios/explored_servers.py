"""The test servers the grounding tests explore (tests/data), and exploring then grounding one."""

from __future__ import annotations

import sys
from pathlib import Path

from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import explore
from mcprl.scenarios.grounded import ground
from mcprl.tools import ServerSpec, ToolPool

SHOP = Path(__file__).resolve().parents[1] / "data" / "shop_server.py"
NOTES = Path(__file__).resolve().parents[1] / "data" / "notes_file_server.py"
TASKS = Path(__file__).resolve().parents[1] / "data" / "tasks_server.py"
FOLDER = Path(__file__).resolve().parents[1] / "data" / "folder_server.py"
NOTES_FOLDER = Path(__file__).resolve().parents[1] / "data" / "notes_folder_server.py"


def shop(*flags: str) -> ServerSpec:
    return ServerSpec.parse(f"{sys.executable} {SHOP} {' '.join(flags)}")


async def explore_and_ground(spec: ServerSpec, calls: int, n: int = 12, **cfg):
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=calls, **cfg), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, n, exploration, seed=0, say=lambda _: None)
    return exploration, tasks, report
