"""The test servers the grounding tests explore (tests/data), and exploring then grounding one."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcprl.checks import holds_answer
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import explore
from mcprl.scenarios.explored import Exploration, ExploredCall
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.replay import gives_answer, reissued
from mcprl.scenarios.source import explore_for, grounded
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import ReferenceCall, Scenario, load_jsonl
from tests.fake_llm import FakeLLM

SHOP = Path(__file__).resolve().parents[1] / "data" / "shop_server.py"
NOTES = Path(__file__).resolve().parents[1] / "data" / "notes_file_server.py"
TASKS = Path(__file__).resolve().parents[1] / "data" / "tasks_server.py"
FOLDER = Path(__file__).resolve().parents[1] / "data" / "folder_server.py"
NOTES_FOLDER = Path(__file__).resolve().parents[1] / "data" / "notes_folder_server.py"
MANY_TOOLS = Path(__file__).resolve().parents[1] / "data" / "many_tools_server.py"
TRACK_GAME = Path(__file__).resolve().parents[1] / "data" / "track_game_server.py"
ORDERS = Path(__file__).resolve().parents[1] / "data" / "orders_server.py"
WORKSPACES = Path(__file__).resolve().parents[1] / "data" / "workspace_server.py"
ENTRIES = Path(__file__).resolve().parents[1] / "data" / "entries_server.py"
THOUGHTS = Path(__file__).resolve().parents[1] / "data" / "thoughts_server.py"
TABLES = Path(__file__).resolve().parents[1] / "data" / "tables_server.py"
SQL_URL = Path(__file__).resolve().parents[1] / "data" / "sql_url_server.py"
PLANS = Path(__file__).resolve().parents[1] / "data" / "plans_server.py"
VAULT = Path(__file__).resolve().parents[1] / "data" / "vault_server.py"
FRAME = Path(__file__).resolve().parents[1] / "data" / "frame_server.py"
PROJECTS = Path(__file__).resolve().parents[1] / "data" / "projects_server.py"
BANK = Path(__file__).resolve().parents[1] / "data" / "bank_server.py"
KEYED_STORE = Path(__file__).resolve().parents[1] / "data" / "keyed_store_server.py"
CALC_SESSIONS = Path(__file__).resolve().parents[1] / "data" / "calc_sessions_server.py"
DB_FILES = Path(__file__).resolve().parents[1] / "data" / "db_files_server.py"
DIGESTS = Path(__file__).resolve().parents[1] / "data" / "digests_server.py"
GEOMETRY = Path(__file__).resolve().parents[1] / "data" / "geometry_server.py"
SUMS = Path(__file__).resolve().parents[1] / "data" / "sums_server.py"
MATRICES = Path(__file__).resolve().parents[1] / "data" / "matrix_server.py"


def shop(*flags: str) -> ServerSpec:
    return ServerSpec.parse(f"{sys.executable} {SHOP} {' '.join(flags)}")


async def explore_and_ground(spec: ServerSpec, calls: int, n: int = 12, **cfg):
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=calls, **cfg), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, n, exploration, seed=0, say=lambda _: None)
    return exploration, tasks, report


async def explored_with_generator(
    spec: ServerSpec, cfg: ExploreConfig, folder: Path, reply: Callable[[dict[str, Any]], str]
) -> tuple[Exploration, list[dict[str, Any]]]:
    """`spec` explored within `cfg` (its record in `folder`), the generator a model behind a local endpoint that
    answers each request with `reply(request)` (set OPENAI_API_KEY): the exploration and the requests it got."""
    async with ToolPool(spec) as pool:
        with FakeLLM(handler=reply) as llm:
            exploration = await explore_for(
                pool,
                cfg,
                folder / "exploration.jsonl",
                seed=0,
                model="openai/fake",
                api_base=llm.base_url,
                say=lambda _: None,
            )
    return exploration, llm.requests


async def grounded_and_replayed(
    spec: ServerSpec, folder: Path, calls: int = 40, say: Callable[[str], None] = lambda _: None
) -> tuple[list[Scenario], list[ExploredCall]]:
    """A run's grounding of `spec` (its record in `folder`), each kept task checked as the issue asks: its wording
    does not state its answer, and its reference, replayed in a fresh session, gives it. The tasks and the calls."""
    async with ToolPool(spec) as pool:
        tasks = await grounded(
            pool, 8, ExploreConfig(calls=calls), folder / "e.jsonl", folder / "g.json", seed=0, fallback=False, say=say
        )
        # (a write task states what it stores: its check reads the server after the episode, not the reply)
        stated = [(t.task, t.answer) for t in tasks if t.read_back is None and holds_answer(t.task, t.answer)]
        assert not stated, stated
        await come_back_fresh(pool, tasks)
    return tasks, load_jsonl(folder / "e.jsonl", ExploredCall)


async def come_back_fresh(pool: ToolPool, tasks: list[Scenario]) -> None:
    """Each task's reference chain, replayed in a fresh session of `pool` after its `prepare`, gives its answer (a
    value it took from an earlier result taken from that result again, as a rollout would: a session's id), or its
    read-back does."""
    for t in tasks:
        made: list = []
        async with pool.session() as session:
            for c in [*t.prepare, *t.reference, *([ReferenceCall(**t.read_back)] if t.read_back else [])]:
                outcome = await session.call(c.tool, reissued(c, made))
                made.append((c, outcome.text))
        assert gives_answer(t, outcome.data_text), t.task
