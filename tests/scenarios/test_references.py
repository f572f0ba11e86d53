"""Reference calls found for a user's own tasks with known answers (mcprl.scenarios.answers): a call chain
from the exploration, or a few calls more, whose replay holds the answer."""

from __future__ import annotations

import json
import re

import pytest

from mcprl.checks import holds_answer
from mcprl.judges import VerifyJudge
from mcprl.run.references import reference_trajectory
from mcprl.scenarios.config import ExploreConfig, ScenarioConfig
from mcprl.scenarios.source import run_scenarios
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Generation, Scenario, Trajectory, TrajectoryGroup, dump_jsonl
from tests.server_fork import shipped

pytestmark = pytest.mark.anyio
INVENTORY = shipped("inventory")  # `python -m mcprl.servers.inventory`, forked under pytest


INVENTORY_TASKS = [
    # answered by a lookup by name, by SKU, and by a search then a lookup (the location is in get_item only)
    Scenario(id="price", task="What is the price of the steel level?", answer=53.63, check={"kind": "holds"}),
    Scenario(id="stock", task="How many units of SKU-3486 are in stock?", answer=107, check={"kind": "holds"}),
    Scenario(id="where", task="Where is the premium hammer kept?", check={"kind": "holds", "value": "aisle 10"}),
    # no call holds this answer
    Scenario(id="founder", task="Who founded the warehouse?", answer="Zanzibar Quell", check={"kind": "holds"}),
    # a wrong answer for a named item: held by another item's record only, which is no reference for it
    Scenario(id="wrong", task="What is the price of the basic saw?", answer=53.63, check={"kind": "holds"}),
]


async def test_a_users_tasks_with_answers_get_references_whose_replay_holds_the_answer(tmp_path):
    file = dump_jsonl(INVENTORY_TASKS, tmp_path / "mine.jsonl")
    lines: list[str] = []
    async with ToolPool(ServerSpec.parse(INVENTORY)) as pool:
        train, val = await run_scenarios(
            ScenarioConfig(file=str(file), val_fraction=0.2),
            tmp_path / "run",
            seed=0,
            resume=False,
            pool=pool,
            generate=None,
            model="local",
            api_base=None,
            explore=ExploreConfig(calls=30, generated=0),
            say=lines.append,
        )
        tasks = {s.id: s for s in train + val}
        answers = {s.id: s.check.get("value", s.answer) for s in INVENTORY_TASKS}
        for s in tasks.values():
            if not s.reference:
                continue
            assert not any(c.writes for c in s.reference)
            async with pool.session() as session:  # replayed in a fresh session, the chain holds the answer
                for call in s.reference:
                    outcome = await session.call(call.tool, call.arguments)
                    assert not outcome.is_error
            assert holds_answer(outcome.text, answers[s.id])
    assert {"price", "stock", "where"} <= {i for i, s in tasks.items() if s.reference}
    assert not tasks["founder"].reference and not tasks["wrong"].reference
    # the task that names its item is answered by a call about that item, not a listing of every item
    assert all(
        any(holds_answer(tasks[i].task, v) for c in tasks[i].reference for v in c.arguments.values())
        for i in ("price", "stock", "where")
    )
    # `--unsolved reference` writes the chain into a group no rollout solved: the task's own check passes it
    for s in tasks.values():
        if s.reference:
            sampled = Trajectory(
                messages=[{"role": "user", "content": s.task}, {"role": "assistant", "content": "No idea."}],
                generations=[
                    Generation(prompt_token_ids=[1], completion_token_ids=[2], logprobs=[0.0], message_index=1)
                ],
            )
            written = reference_trajectory(TrajectoryGroup(scenario=s, trajectories=[sampled]))
            group = await VerifyJudge().score_group(TrajectoryGroup(scenario=s, trajectories=[written]))
            assert written.reward == 1.0 and not group.skipped
    written = json.loads((tmp_path / "run" / "references.json").read_text())
    assert set(written["references"]) == {i for i, s in tasks.items() if s.reference}
    found = [(int(m[1]), int(m[2])) for line in lines if (m := re.search(r"(\d+) of (\d+) tasks", line))]
    assert found == [(sum(bool(s.reference) for s in tasks.values()), len(INVENTORY_TASKS))]

    # off: no exploration, no reference
    async with ToolPool(ServerSpec.parse(INVENTORY)) as pool:
        train, val = await run_scenarios(
            ScenarioConfig(file=str(file), val_fraction=0.2, find_references=False),
            tmp_path / "off",
            seed=0,
            resume=False,
            pool=pool,
            generate=None,
            model="local",
            api_base=None,
            explore=ExploreConfig(calls=30, generated=0),
            say=lambda _: None,
        )
    assert not any(s.reference for s in train + val) and not (tmp_path / "off" / "exploration.jsonl").exists()
