"""Grounded scenarios (mcprl.scenarios.grounded) on real servers: tasks checked by value, verified by replay, given
the one call a person would make, rephrased, prepared in the rollout's own session; a run's scenarios grounded by
default, its demonstration a reference call."""

from __future__ import annotations

import collections
import json
import platform
import re
import sys
from pathlib import Path

import pytest

from mcprl.checks import holds_answer
from mcprl.errors import UserError
from mcprl.judges import VerifyJudge
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import explore
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.grounded_task import ANSWER_WORDS
from mcprl.scenarios.replay import gives_answer, reissued, replayed
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import ReferenceCall, Scenario, Trajectory, TrajectoryGroup
from tests.scenarios.explored_servers import (
    ENTRIES,
    MANY_TOOLS,
    NOTES,
    SHOP,
    TASKS,
    THOUGHTS,
    come_back_fresh,
    explore_and_ground,
    shop,
)
from tests.server_fork import shipped

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def shop_grounded():
    """One exploration of the shop over stdio, grounded, shared by the tests that read it."""
    import anyio

    return anyio.run(lambda: explore_and_ground(shop(), calls=40))


async def test_grounded_tasks_on_a_stdio_server_are_checked_by_value_and_replayed(shop_grounded):
    exploration, tasks, report = shop_grounded
    assert len(exploration.calls) <= 40
    assert {"list_products", "get_product", "run_query", "add_to_cart"} <= {c.tool for c in exploration.calls}
    assert all(c.is_error for c in exploration.calls if c.tool == "run_query")
    assert any(c.parents for c in exploration.calls if c.tool == "get_product")  # an id from a listing, fed on
    assert len(tasks) >= 4 and report.kept == len(tasks)
    assert not any("run_query" in t.tools for t in tasks)
    for t in tasks:
        # a question's answer is a sentence around the value, not a pasted result; a write's, the state it reads back
        on = (
            {"max_words": len(str(t.answer).split()) + ANSWER_WORDS}
            if t.read_back is None
            else {"on": "read_back", "max_other_numbers": None}
        )
        # the clock's answers do not reproduce on replay: a task about it is asked live, by the episode's own call
        live = {"live": {"tool": "now", "arguments": {}, "field": ""}} if t.tools == ["now"] else {}
        assert t.check.model_dump() == {"kind": "holds", **on, **live}
        assert t.reference and t.difficulty == len(t.reference)
    assert report.live == sum(t.tools == ["now"] for t in tasks)
    prices = [t for t in tasks if "price" in t.task]
    assert prices and all(isinstance(t.answer, (int, float)) for t in prices)


async def test_writes_stay_inside_a_fresh_session(shop_grounded):
    exploration, tasks, _ = shop_grounded
    assert any(c.tool == "add_to_cart" and not c.is_error for c in exploration.calls)
    async with ToolPool(shop()) as pool:
        async with pool.session() as session:
            assert (await session.call("cart_size", {})).text == "0"  # nothing the exploration added is here
        # a cart size is only kept where a fresh session reproduces it, once the task's prepared writes are made
        for t in tasks:
            if t.tools[-1:] == ["cart_size"] and t.read_back is None:
                async with pool.session() as session:
                    for c in [*t.prepare, *t.reference]:
                        outcome = await session.call(c.tool, c.arguments)
                assert outcome.text == str(t.answer)


async def test_a_write_is_a_task_checked_by_reading_back_the_rollouts_own_session(shop_grounded, tiny_model_dir):
    from mcprl.rollout.loop import rollout
    from tests.scripted_policy import call, scripted_endpoint

    exploration, tasks, _ = shop_grounded
    # exploring repeated the session's earlier reads after the write: the cart's size went 0 -> 1
    assert any(c.reads_back is not None and c.tool == "cart_size" and c.text == "1" for c in exploration.calls)
    task = next(t for t in tasks if t.read_back)
    # (the session's earlier adds, which the environment makes first: `prepare`)
    prepared = sum(c.tool == "add_to_cart" for c in task.prepare)
    assert task.read_back == {"tool": "cart_size", "arguments": {}} and task.answer == 1 + prepared
    product = task.reference[-1].arguments["product_id"]
    assert task.reference[-1].tool == "add_to_cart" and product in task.task
    judge = VerifyJudge()
    async with ToolPool(shop()) as pool:
        with scripted_endpoint(tiny_model_dir, [call("add_to_cart", product_id=product), "Added.", "Done."]) as (
            model,
            _,
        ):
            did, didnt = await rollout(model, task, pool), await rollout(model, task, pool)
    # each its own fresh session
    assert did.metadata["read_back"] == str(1 + prepared) and didnt.metadata["read_back"] == str(prepared)
    group = await judge.score_group(TrajectoryGroup(scenario=task, trajectories=[did, didnt]))
    assert [t.reward for t in group.trajectories] == [1.0, 0.0]  # the answer's words do not matter: the state does


async def test_a_rollout_starts_in_the_state_its_task_prepares_in_its_own_session(
    tmp_path, monkeypatch, tiny_model_dir
):
    """A task's `prepare` calls are made in the rollout's own session before its first turn, not by the policy: a
    policy that only reads finds the note they added, once in each rollout (no state piles up across them), and is
    scored right; a prepare call that fails fails that rollout, with the reason, and not the others."""
    from mcprl.rollout.loop import rollout
    from tests.scripted_policy import call, scripted_endpoint

    monkeypatch.setenv("HOME", str(tmp_path))  # each session gets a home of its own below; none writes here
    task = Scenario(
        task="What does my note say?",
        answer="buy milk",
        check={"kind": "holds"},
        prepare=[ReferenceCall(tool="add_note", arguments={"text": "buy milk"}, writes=True)],
        reference=[ReferenceCall(tool="list_notes", result="note 1: buy milk")],
    )
    broken = task.model_copy(update={"prepare": [ReferenceCall(tool="add_note", arguments={}, writes=True)]})
    script = [call("list_notes"), "It says buy milk.", call("list_notes"), "It says buy milk."]
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {NOTES}", private_home=True)) as pool:
        with scripted_endpoint(tiny_model_dir, script) as (model, engine):
            first, failed, second = [await rollout(model, t, pool) for t in (task, broken, task)]
    for t in (first, second):
        assert t.error is None and t.metrics["tool_calls"] == 1  # the policy's one call: the prepare is not its
        assert [m["content"] for m in t.messages if m["role"] == "tool"] == ["note 1: buy milk"]
    assert "preparing the task's state: add_note {}" in failed.error and not failed.generations
    assert len(engine.seen) == 4  # the failed rollout asked the policy nothing
    group = await VerifyJudge().score_group(TrajectoryGroup(scenario=task, trajectories=[first, second]))
    assert [t.reward for t in group.trajectories] == [1.0, 1.0]
    assert not (tmp_path / ".local").exists()


async def test_a_stores_records_are_written_as_a_person_writes_them_and_asked_for_by_a_name_one_write_gave(tmp_path):
    """A store that starts empty (a to-do list, a process each session): what its write is sent as a name, a
    description or tags is never another field's value the server set ("open") nor a word of its stock replies
    ("successfully"), and the names vary; a question that names a record by its name ("the task "Weekly report"")
    names one that only one of the writes preparing it gave, and its answer comes back in a fresh session."""
    from mcprl.scenarios.results import result_values

    async with ToolPool(ServerSpec.parse(f"{sys.executable} {TASKS}")) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=0, say=lambda _: None)
        tasks, _ = await ground(pool, 12, exploration, seed=0, say=lambda _: None)
        adds = [c for c in exploration.calls if c.tool == "add_task" and not c.is_error]
        assert len(adds) >= 4, exploration.summary()
        server_set = {
            str(v)
            for c in exploration.calls
            if not c.writes
            for k, v in result_values(c.data, c.structured)
            if k.rpartition(".")[2] in {"status", "priority"}
        }
        replies = {w.strip(".:") for c in adds for w in c.text.split()}
        assert server_set and "successfully" in replies
        for c in adds:
            texts = [c.arguments["name"], c.arguments.get("desc"), *(c.arguments.get("tags") or [])]
            assert not {str(t) for t in texts if t is not None} & (server_set | replies), c.arguments
        assert len({c.arguments["name"] for c in adds}) >= 4
        named = [t for t in tasks if t.prepare and re.search(r'the task "([^"]+)"', t.task)]
        assert named, [t.task for t in tasks]
        for t in named:
            name = re.search(r'the task "([^"]+)"', t.task)[1]
            assert sum(name in json.dumps(c.arguments) for c in t.prepare) == 1, (t.task, t.prepare)
            async with pool.session() as session:
                for c in [*t.prepare, *t.reference]:
                    outcome = await session.call(c.tool, c.arguments)
            assert gives_answer(t, outcome.data_text)


@pytest.mark.parametrize("seed", [0, 1])
async def test_no_task_states_an_optional_value_its_call_answers_the_same_without(seed):
    """A folder listed with an exclusion that matched nothing, or a flag that changed nothing, said what it says
    without them: every task asks of a call whose optional values each change its result (made again here without
    each), and states none that does not."""
    spec = ServerSpec.parse(f"{sys.executable} {ENTRIES}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=seed, say=lambda _: None)
        tasks, _ = await ground(pool, 12, exploration, seed=seed, say=lambda _: None)
        assert len(tasks) >= 4, [t.task for t in tasks]
        async with pool.session() as session:
            for t in tasks:
                call = t.reference[-1]
                for k in set(call.arguments) - {"folder"} if call.tool == "list_files" else ():
                    without = {n: v for n, v in call.arguments.items() if n != k}
                    outcome = await session.call(call.tool, without)
                    assert outcome.text != call.result, (t.task, call.arguments, k)


@pytest.mark.parametrize("seed", [0, 1])
async def test_files_read_at_once_are_each_their_own_record_and_no_task_states_one_that_failed(seed):
    """`read_files` reads several files at once, a part each ("q1.csv:\nsize: 120\n---\nq2.csv: ..."), a file that
    is not there failing alone ("test: Error - no such file"): a task that names a file is answered by that file's
    part (read alone here), no task states a file the server said it lacks, and no value a part said failed
    (nor a rule between parts) is sent as a file's name."""
    spec = ServerSpec.parse(f"{sys.executable} {ENTRIES}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=seed, say=lambda _: None)
        tasks, _ = await ground(pool, 16, exploration, seed=seed, say=lambda _: None)
        reads = [t for t in tasks if t.reference[-1].tool == "read_files"]
        assert reads, [t.task for t in tasks]
        async with pool.session() as session:
            for t in reads:
                for name in t.reference[-1].arguments["names"]:
                    alone = await session.call("read_files", {"names": [name]})
                    assert not alone.is_error, (t.task, name)
                    if name in t.task:
                        assert holds_answer(alone.text, t.answer), (t.task, t.answer, alone.text)
    sent = [n for c in exploration.calls if c.tool == "read_files" for n in c.arguments["names"]]
    assert not [n for n in sent if "Error" in n or not re.search(r"\w", n)], sent


async def test_an_answer_the_calls_before_it_made_is_no_task_and_not_asked_live():
    """A scratchpad's count of the thoughts kept so far (`think`, a read each session's calls add to): a fresh
    session answers it otherwise than exploring's did, and alike each time, so it is no answer that comes anew
    (dice, the clock) to ask live; every task kept comes back in a fresh session as recorded."""
    from mcprl.checks import live_of

    spec = ServerSpec.parse(f"{sys.executable} {THOUGHTS}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=30), seed=0, say=lambda _: None)
        assert any(json.loads(c.text)["history_length"] > 2 for c in exploration.calls if not c.is_error)
        tasks, _ = await ground(pool, 8, exploration, seed=0, say=lambda _: None)
        assert not [t.task for t in tasks if live_of(t.check) is not None]
        await come_back_fresh(pool, tasks)


async def test_grounded_tasks_on_the_shipped_servers():
    _, inventory, _ = await explore_and_ground(ServerSpec.parse(shipped("inventory")), calls=18, n=6)
    assert any(re.search(r"\b(price|stock)\b", t.task) and t.metadata["kind"] == "field" for t in inventory)
    # one calculator server for each exploring: it keeps no state, so its sessions need no process each
    calc = ServerSpec.parse(shipped("calculator"), per_rollout=False)
    async with ToolPool(calc) as pool:
        exploration = await explore(pool, ExploreConfig(calls=18), seed=0, say=lambda _: None)
        calculator, report = await ground(pool, 6, exploration, seed=0, max_calls=1, say=lambda _: None)
    assert len(calculator) == 6 and all(isinstance(t.answer, (int, float)) for t in calculator)
    assert any(
        re.fullmatch(r"(What is |Compute |Work out )?[-+*/() .\d]+( = )?[?.]", t.task) for t in calculator
    )  # "What is 8.5 * 19?"
    assert len(report.covered) >= 3  # spread over the tools
    # chains the exploration made, but longer than an episode of 2 turns allows (a call, then the answer)
    assert all(t.difficulty == 1 for t in calculator) and report.dropped["more calls than an episode's 1"] >= 1
    async with ToolPool(calc) as pool:  # the same seed grounds the same tasks, ids and all
        again, _ = await ground(
            pool,
            6,
            await explore(pool, ExploreConfig(calls=18), seed=0, say=lambda _: None),
            seed=0,
            max_calls=1,
            say=lambda _: None,
        )
    assert [(t.id, t.task) for t in again] == [(t.id, t.task) for t in calculator]


async def test_a_server_with_nothing_to_ground_stops_with_the_fix(tmp_path):
    from mcprl.scenarios.config import ScenarioConfig
    from mcprl.scenarios.source import run_scenarios

    spec = ServerSpec.parse(f"{sys.executable} {SHOP}", allow=["run_query"])
    async with ToolPool(spec) as pool:
        with pytest.raises(UserError, match="every call it answered was an error.*--scenarios FILE"):
            await run_scenarios(
                ScenarioConfig(n=8),
                tmp_path,
                seed=0,
                resume=False,
                pool=pool,
                generate=None,
                model="local",
                api_base=None,
                explore=ExploreConfig(calls=6),
                say=lambda _: None,
            )
    assert (tmp_path / "exploration.jsonl").exists()


async def test_run_scenarios_grounds_by_default_and_the_demonstration_is_a_reference_call(tmp_path):
    from mcprl.run.demonstration import Context, settle
    from mcprl.scenarios.config import ScenarioConfig
    from mcprl.scenarios.source import run_scenarios

    async with ToolPool(ServerSpec.parse(shipped("calculator"))) as pool:
        train, val = await run_scenarios(
            ScenarioConfig(n=8),
            tmp_path,
            seed=0,
            resume=False,
            pool=pool,
            generate=None,
            model="local",
            api_base=None,
            explore=ExploreConfig(calls=16),
            say=lambda _: None,
        )
        context = Context(
            train=train,
            pool=pool,
            enabled=True,
            given=None,
            file=None,
            shipped=None,
            model="local",
            api_base=None,
            seed=0,
            per_tool=False,
            say=lambda _: None,
        )
        demo, kept = await settle(context)
    assert all(s.metadata["source"] == "grounded" for s in train + val)
    assert (tmp_path / "grounding.json").exists() and (tmp_path / "exploration.jsonl").exists()
    assert demo.source.startswith("grounded:") and len(kept) == len(train) - 1
    shown = next(s for s in train if s.id == demo.source.split(":")[1])
    assert len(demo.exchanges) == 1
    call = demo.exchanges[0][1]["tool_calls"][0]["function"]
    assert call["name"] == shown.reference[0].tool
    assert [m["role"] for m in demo.exchanges[0]] == ["user", "assistant"]  # ends at the call
    assert holds_answer(shown.reference[0].result, shown.answer)  # the reference keeps what it returned

    # --demonstration-per-tool: one reference call per tool a chain starts with, each scenario shown one
    from mcprl.rollout.config import RolloutConfig
    from mcprl.rollout.loop import initial_messages
    from mcprl.run.demonstration import from_reference

    per, kept = from_reference(train, train, seed=0, per_tool=True)
    first_tools = {s.reference[0].tool for s in train}
    shown_tools = [e[1]["tool_calls"][0]["function"]["name"] for e in per.exchanges]
    assert sorted(shown_tools) == sorted(first_tools) and len(first_tools) >= 2
    assert len(kept) == len(train) - len(first_tools) and per.source.count(",") == len(first_tools) - 1
    config = RolloutConfig(demonstrations=per.exchanges)
    seen = {
        initial_messages(s, [{"type": "function", "function": {"name": "x"}}], config)[1]["content"]
        for s in train + val
    }
    assert len(seen) >= 2  # scenarios see different tools' exchanges ...
    assert initial_messages(val[0], [{}], config) == initial_messages(
        val[0].model_copy(), [{}], config
    )  # ... a scenario always the same


async def test_the_holds_check_reads_numbers_by_value_and_refuses_a_recital():
    scenario = Scenario(task="What is the price of the blue mug?", answer=12.5, check={"kind": "holds"})

    def answered(text: str) -> Trajectory:
        return Trajectory(messages=[{"role": "assistant", "content": text}])

    texts = [
        "The blue mug costs $12.50.",
        "It costs 13.",
        "P-101 | blue mug | price: 12.5 | stock: 4 | aisle 3, bin 9, row 2",
    ]
    group = await VerifyJudge().score_group(
        TrajectoryGroup(trajectories=[answered(t) for t in texts], scenario=scenario)
    )
    assert [t.reward for t in group.trajectories] == [1.0, 0.0, 0.0]
    names = Scenario(task="Name a unit of mass.", answer=["kg", "lb"], check={"kind": "holds", "any_of": True})
    group = await VerifyJudge().score_group(
        TrajectoryGroup(trajectories=[answered("lb"), answered("metre")], scenario=names)
    )
    assert [t.reward for t in group.trajectories] == [1.0, 0.0]
    # a grounded text field: a pasted result holds it too, with few numbers (what a run's policy learnt to do)
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall

    text = (
        "From: Aisha Bello <aisha.bello@work.example>\nTo: Alex Morgan <alex.morgan@example.com>\n"
        "Subject: Lunch on Tuesday?"
    )
    call = ExploredCall(index=0, session=0, tool="read_email", arguments={"email_id": "msg-0143"}, text=text)
    sender = next(
        t
        for seed in range(8)
        for t in candidates(Exploration(calls=[call]), {}, seed=seed)
        if t.answer.startswith("Aisha")
    )
    replies = [
        "The sender is Aisha Bello <aisha.bello@work.example>.",
        f"<tool_response>\n{text} Hi Alex, are you free for lunch?",
    ]
    group = await VerifyJudge().score_group(
        TrajectoryGroup(trajectories=[answered(r) for r in replies], scenario=sender)
    )
    assert [t.reward for t in group.trajectories] == [1.0, 0.0]


async def test_a_generator_rephrases_a_task_only_where_the_rewrite_keeps_it():
    import json

    from mcprl.scenarios.phrasing import keeps, phrase
    from tests.fake_llm import FakeLLM

    template = 'What is the price of the item "steel level"?'
    assert keeps(template, 53.63, "How much does the steel level cost?")
    assert not keeps(template, 53.63, "How much does a level cost?")  # the item is gone
    assert not keeps(template, 53.63, "Is the steel level 53.63?")  # the answer is given away
    assert not keeps(
        "List the categories. What is the result?", "tools", "What are the categories?"
    )  # nothing to check
    # a name the task states bare is kept as a quoted one is
    assert not keeps("What is the price of the steel level?", 53.63, "How much does a level cost?", ["steel level"])

    rewrites = {
        template: "How much does the steel level cost?",
        "Add two numbers and return a + b (a 2, b 3). What is the result?": "What is two plus three?",
    }

    def reply(request: dict) -> str:
        return json.dumps({"question": rewrites[request["messages"][-1]["content"]]})

    tasks = [
        Scenario(task=t, answer=a, check={"kind": "holds"}) for t, a in ((template, 53.63), (list(rewrites)[1], 5))
    ]
    with FakeLLM(handler=reply) as llm:
        assert await phrase(tasks, "openai/gen", api_base=llm.base_url, seed=0) == 1
    assert tasks[0].task == "How much does the steel level cost?" and tasks[0].metadata["template"] == template
    assert (
        tasks[1].task == list(rewrites)[1] and "template" not in tasks[1].metadata
    )  # "two plus three" dropped 2 and 3


async def test_a_task_follows_its_most_focused_chain_and_exploring_draws_from_every_record():
    """A warehouse's listing names 36 items: exploring draws its lookups' ids from every record of
    it (drawn from the latest few values, every lookup took one of the last records' ids: 4 SKUs
    in 120 calls), and its searches' words from names. Of the chains that answer one task, the kept
    one has its answer in the fewest records (a lookup, not a listing's line), and the
    demonstration a read of the tool the most tasks begin with, never a write."""
    from mcprl.run.demonstration import from_reference
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.results import result_records
    from mcprl.scenarios.selection import select

    async with ToolPool(ServerSpec.parse(shipped("inventory"))) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
    looked_up = {c.arguments.get("sku") for c in exploration.calls if c.tool == "get_item" and not c.is_error}
    assert len(looked_up) >= 6, looked_up
    # a search takes words of a name (one item found), not a category's one word, which has the shape of its example
    # ('drill')
    searched = {
        c.arguments["query"]
        for c in exploration.calls
        if c.tool == "search_items" and not c.is_error and len(result_records(c.text, None)) == 1
    }
    assert len(searched) >= 2, searched

    listing = ExploredCall(
        index=0,
        session=0,
        tool="list_items",
        arguments={},
        text="\n".join(f"SKU-{3000 + i} | item {chr(97 + i) * 3} | stock: {40 + i} | price: ${i}.75" for i in range(8)),
    )
    item = ExploredCall(
        index=1,
        session=0,
        tool="get_item",
        arguments={"sku": "SKU-3002"},
        sources={"sku": "result:0"},
        parents=[0],
        text="SKU-3002 | item ccc | stock: 42 | price: $2.75 | location: aisle 3",
    )
    write = ExploredCall(
        index=2, session=0, tool="update_stock", arguments={"sku": "SKU-3002", "change": 5}, writes=True, text="47"
    )
    found = [t for seed in range(8) for t in candidates(Exploration(calls=[listing, item, write]), {}, seed=seed)]
    asked = [t for t in found if t.metadata.get("given") == ["item ccc"] and t.metadata["field"] == "stock"]
    assert {t.reference[-1].tool for t in asked} == {"list_items", "get_item"}
    assert len({t.task for t in asked}) == 1  # one question, one wording: whichever call grounds it, a duplicate
    # names are asked for quoted and bare, as people write them ('What is the stock of the item ccc?')
    by_name = [t for t in found if t.metadata.get("given") and t.metadata["given"][0].startswith("item ")]
    assert {'"' in t.task for t in by_name} == {True, False}
    for order in (asked, asked[::-1]):
        kept, _ = select(order, 10, seed=0)
        assert [t.reference[-1].tool for t in kept if t.task == asked[0].task] == ["get_item"]
    one_call = [t for t in found if len(t.reference) == 1]
    assert {t.reference[0].tool for t in one_call} >= {"list_items", "update_stock"}
    reads = [t for t in one_call if not t.reference[0].writes]
    begun = collections.Counter(t.reference[0].tool for t in reads)
    for seed in range(6):
        demo, _ = from_reference(one_call, one_call, seed=seed)
        shown = next(t for t in one_call if t.id == demo.source.split(":")[1])
        # a read of the tool the most tasks begin with, its answer in as few records as that tool's allow
        assert not shown.reference[0].writes and begun[shown.reference[0].tool] == max(begun.values()), shown.task
        assert shown.metadata["records"] == min(
            t.metadata["records"] for t in reads if t.reference[0].tool == shown.reference[0].tool
        )


async def test_a_task_that_names_its_record_is_shown_the_one_call_a_person_would_make():
    """A task about one line of a 36-item listing, asked by the item's name: its chain becomes a
    search for that name (one record), the call a person makes, not the listing; a task whose
    answer no one-call result holds keeps its chain."""
    from mcprl.scenarios.candidates import candidates
    from mcprl.scenarios.explored import Exploration, ExploredCall
    from mcprl.scenarios.grounded import shortcut

    async with ToolPool(ServerSpec.parse(shipped("inventory"))) as pool:
        async with pool.session() as session:
            listing = await session.call("list_items", {})
        call = ExploredCall(index=0, session=0, tool="list_items", arguments={}, text=listing.text)
        named = [t for t in candidates(Exploration(calls=[call]), {}, seed=0) if t.metadata.get("given")]
        assert named and all(t.metadata["records"] == 36 for t in named)
        unheld = named[0].model_copy(deep=True, update={"answer": 123456.5})
        assert await shortcut([*named, unheld], pool) == len(named)
    for t in named:
        assert t.reference[0].tool == "search_items" and t.metadata["records"] == 1, t.task
        assert t.reference[0].arguments == {"query": t.metadata["given"][0]}
        assert str(t.answer) in t.reference[0].result.replace("$", "")
    assert unheld.reference[0].tool == "list_items"


def test_a_replayed_answer_counts_only_where_it_came_back_in_its_own_field():
    """A time difference of 0 hours is not given back by a date's "+00:00" beside a difference of 1 hour, nor by
    another tool's date; a sentence gives its number back where it states it again."""
    from mcprl.scenarios.replay import comes_back

    def converted(offset: str, difference: str) -> str:
        return json.dumps({"target": {"datetime": f"2027-05-30T10:30:00{offset}"}, "time_difference": difference})

    assert comes_back(converted("+00:00", "+0.0h"), converted("+00:00", "+0.0h"), 0)
    assert not comes_back(converted("+00:00", "+0.0h"), converted("+01:00", "+1.0h"), 0)
    assert not comes_back(converted("+00:00", "+0.0h"), json.dumps({"datetime": "2026-11-28T02:34:09+00:00"}), 0)
    assert comes_back("The meeting is in room 4.", "The meeting is in room 4.", 4)
    assert not comes_back("The meeting is in room 4.", "The meeting moved to room 5.", 4)


async def test_chains_that_write_nothing_are_replayed_in_one_server_process(tmp_path):
    """Where each session is a server process of its own, the tasks whose chains only read are verified one after
    another in one session: one process started, not one a chain, and every one kept, as a fresh session gives
    each its answer back."""
    starts = tmp_path / "starts"
    starts.mkdir()
    # (the folder the server marks its starts in is the test's: no copy of it a session)
    spec = ServerSpec.parse(f"{sys.executable} {MANY_TOOLS}", env=[f"STARTS_DIR={starts}"], private_copy=False)
    async with ToolPool(spec.model_copy(update={"per_rollout": False})) as shared:
        exploration = await explore(shared, ExploreConfig(calls=40), seed=0, say=lambda _: None)
        tasks, _ = await ground(shared, 4, exploration, seed=0, say=lambda _: None)
    assert len(tasks) == 4 and not any(c.writes for t in tasks for c in [*t.prepare, *t.reference])
    async with ToolPool(spec) as pool:
        before = len(list(starts.iterdir()))
        kept, dropped = await replayed(tasks, pool, say=lambda _: None)
        assert len(list(starts.iterdir())) == before + 1
        assert [t.id for t in kept] == [t.id for t in tasks], dropped
        await come_back_fresh(pool, tasks)


def test_a_unix_time_of_about_now_is_the_servers_clock():
    """mcp-server-tree-sitter's `last_scan_time` (Unix seconds of the call) grounded "Register project R and tell
    me the last scan time.", which no later call gives: a number of seconds or milliseconds within a day and a half
    of now is the server's clock, like an ISO date; a number of that form long ago is not (an id, a past time)."""
    import datetime

    from mcprl.scenarios.replay import clock_bound

    now = datetime.datetime(2026, 12, 1, 17, 0, tzinfo=datetime.UTC)
    seconds = int(now.timestamp()) - 40
    scan = json.dumps({"name": "effrepo", "last_scan_time": seconds, "languages": {"python": 1}})
    assert clock_bound(scan, seconds, now) and clock_bound(scan, 1, now)  # (the other number: replayed with it moved)
    assert not clock_bound(scan, "effrepo", now)
    assert clock_bound(json.dumps({"at": seconds * 1000 + 512}), seconds * 1000 + 512, now)
    assert clock_bound(f"scanned at {seconds}.25", seconds, now)
    assert not clock_bound(json.dumps({"id": 1700000000, "count": 3}), 3, now)
    # a month's name read off the clock (mcp-simple-timeserver's Hijri calendar): checked with the clock moved where
    # it can be, like any answer of a result that states now; not where every such answer would be dropped
    hijri = json.dumps({"gregorian": now.isoformat(), "month": "Jumada al-Akhirah", "day": 10})
    assert clock_bound(hijri, "Jumada al-Akhirah", now, any_answer=True) and clock_bound(
        scan, "effrepo", now, any_answer=True
    )
    assert not clock_bound(json.dumps({"id": 1700000000, "name": "Ann"}), "Ann", now, any_answer=True)


def test_a_time_said_as_how_long_ago_or_from_now_is_the_servers_clock():
    """@yokingma/time-mcp's `relative_time("2027-02-26 13:15:00")` said "in 3 months" on 2026-12-06: "What is the
    relative time ...?" -> 3 holds until the month turns. A time said as how long before or after now is read off the
    clock as a date of now is; a duration that is not (a plan's "3 months") is not. Replayed with the clock moved, it
    must say the same time again, not only hold the number."""
    from mcprl.scenarios.replay import clock_bound, comes_back

    for said in ("in 3 months", "2 years ago", "a month ago", "Due in 5 days.", "yesterday", "10 minutes from now"):
        assert clock_bound(said, 3), said
    for said in ("3 months", "The plan lasts 3 months.", "Stored in 3 files", "Agora"):
        assert not clock_bound(said, 3), said
    # replayed with the clock half a year on, "in 3 months" is "3 months ago": the 3 is there, the time it says is not
    assert not comes_back("in 3 months", "3 months ago", 3) and comes_back("239 years ago", "239 years ago", 239)


def test_an_answer_that_came_back_in_fields_given_anew_each_session_is_not_fixed():
    """A die rolled in two fresh sessions gave a 3 each time, among other rolls: the 3 is no fixed answer. A record
    read again beside a time that moved is: the fields that held its answer gave the same values each time."""
    from mcprl.scenarios.replay import answered_anew

    def task(result: dict, answer) -> Scenario:
        call = ReferenceCall(tool="t", arguments={}, result=json.dumps(result))
        return Scenario(task="What is it?", answer=answer, check={"kind": "holds"}, reference=[call])

    rolled = task({"notation": "2d4", "rolls": [3, 1], "total": 4}, 3)
    again = [json.dumps({"notation": "2d4", "rolls": r, "total": sum(r)}) for r in ([3, 2], [1, 3])]
    assert answered_anew(rolled, again)
    assert not answered_anew(rolled, [again[0], again[0]])  # alike twice: read as fixed where the answer is there
    read = task({"name": "Ann", "at": "17:00:01"}, "Ann")
    assert not answered_anew(read, [json.dumps({"name": "Ann", "at": t}) for t in ("17:00:05", "17:00:06")])
    # (a time that holds the answer in its text is not where the answer is: a difference of 9 hours beside it)
    shifted = task({"time": "2026-12-06T09:00:01+09:00", "difference_hours": 9}, 9)
    again = [json.dumps({"time": f"2026-12-06T09:00:0{s}+09:00", "difference_hours": 9}) for s in (5, 6)]
    assert not answered_anew(shifted, again)


def test_a_value_a_chain_took_from_a_result_is_taken_from_that_result_again_on_replay():
    """A session's id a load issued, another in every process: a replayed step that took it from the load's result
    is sent the one the load gives now, at the same field; a value stated, or given back alike, is sent as it was."""
    load = ReferenceCall(tool="load", arguments={"file": "a.csv"}, result='{"session_id": "s-1", "rows": 3}')
    rows = ReferenceCall(
        tool="rows", arguments={"session_id": "s-1", "file": "a.csv"}, sources={"session_id": "result:4"}
    )
    assert reissued(rows, [(load, '{"session_id": "s-2", "rows": 3}')]) == {"session_id": "s-2", "file": "a.csv"}
    assert reissued(rows, [(load, '{"session_id": "s-1", "rows": 3}')])["session_id"] == "s-1"
    stated = rows.model_copy(update={"sources": {"session_id": "worked"}})
    assert reissued(stated, [(load, '{"session_id": "s-2", "rows": 3}')])["session_id"] == "s-1"


def test_a_clock_library_that_does_not_move_the_clock_is_never_preloaded(tmp_path):
    """A library the loader will not preload (another machine's build) leaves the server's clock today's, and every
    answer read off it would seem to hold on another day: it is not used. On Linux, the one the libfaketime
    dependency ships moves it."""
    from mcprl.scenarios.replay import SO, clock_library, moves_clock

    other = tmp_path / SO
    other.write_bytes(b"\x7fELF not a library of this machine")
    assert not moves_clock(other) and not moves_clock(tmp_path / "absent" / SO)
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert clock_library() is not None


async def test_a_server_started_with_its_clock_moved_reads_it_moved_where_a_killed_one_left_its_semaphore():
    """The clock is moved by preloading libfaketime, not by its `faketime` program, which makes a semaphore named by
    its process id and leaves it when killed: a later server given that id could not start, and grounding replayed
    nothing with the clock moved (a suite run failed so, with 274 left in /dev/shm). Here the next process ids all
    have one left."""
    import time
    from pathlib import Path

    from mcprl.scenarios.replay import CLOCK_MOVE, clock_moved
    from tests.scenarios.explored_servers import SHOP

    later = clock_moved(ServerSpec.parse(f"{sys.executable} {SHOP}"))
    shm, last_pid = Path("/dev/shm"), Path("/proc/sys/kernel/ns_last_pid")
    if later is None or not shm.is_dir() or not last_pid.exists():
        pytest.skip("no libfaketime moves the clock here (pip install libfaketime, on Linux), or no /dev/shm")
    after = int(last_pid.read_text())
    left = [shm / f"sem.faketime_sem_{pid}" for pid in range(after + 1, after + 400)]
    left = [p for p in left if not p.exists()]
    for p in left:
        p.write_bytes(b"\0" * 32)
    try:
        async with ToolPool(later).session() as session:
            then = float((await session.call("now", {})).text)
    finally:
        for p in left:
            p.unlink(missing_ok=True)
    assert abs(then - time.time() - float(CLOCK_MOVE.strip("+h")) * 3600) < 600


async def test_an_answer_read_off_the_clock_in_a_result_that_states_no_date_is_not_kept_as_it_holds_today():
    """time-mcp's `days_in_month` and `get_week_year`, sent no date, answer for today in sentences that state no
    date ("The number of days in month is 31."): "What is the week of the week year?" was kept with today's week.
    Replayed with the server's clock moved, such an answer is another: every task kept as it is gives its answer
    back with the clock moved too, and the moons of a planet, which hold on any day, are still asked."""
    from mcprl.checks import live_of
    from mcprl.scenarios.replay import clock_moved

    spec = ServerSpec.parse(f"{sys.executable} {Path(__file__).with_name('calendar_server.py')}")
    later = clock_moved(spec)
    if later is None:
        pytest.skip("no libfaketime moves the clock here (pip install libfaketime, on Linux)")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=40), seed=0, say=lambda _: None)
        undated = [c for c in exploration.calls if c.tool == "week_of_year" and not c.arguments and not c.is_error]
        assert undated, "exploring never asked for this week"
        tasks, report = await ground(pool, 12, exploration, seed=0, say=lambda _: None)
    assert any(t.tools == ["moons"] for t in tasks), report.summary()
    for t in [t for t in tasks if live_of(t.check) is None]:
        async with ToolPool(later).session() as session:
            for step in t.reference:
                text = (await session.call(step.tool, step.arguments)).text
        assert gives_answer(t, text), (t.task, t.answer, text)


def test_a_clock_answer_in_lines_of_text_is_asked_live_by_its_label():
    """mcp-simple-timeserver answers in `label: value` lines, no JSON: its weekday, another with the clock moved,
    was dropped as holding only today, so that the server grounded 2 tasks. It is asked live, read from the
    episode's own result on the line so labelled, where one line holds it and every replay has that line."""
    import datetime

    from mcprl.checks import HoldsCheck, value_at
    from mcprl.scenarios.replay import live_task

    now = datetime.datetime.now(datetime.UTC)
    text = f"Current Time: {now:%Y-%m-%d %H:%M:%S}\nDay: {now:%A}\nTimezone: UTC"
    call = ReferenceCall(tool="get_local_time", arguments={}, result=text)
    task = Scenario(
        id="t", task="What day is it?", answer=f"{now:%A}", check=HoldsCheck(), reference=[call], tools=[call.tool]
    )
    later = "Current Time: 2027-06-04 12:00:01\nDay: Friday\nTimezone: UTC"
    live = live_task(task, [later, later])
    assert live is not None and live.check.live.field == "Day" and value_at(later, live.check.live.field) == "Friday"
    assert live_task(task, [later.replace("Day:", "Weekday:")]) is None  # a replay without that line
    twice = task.model_copy(update={"reference": [call.model_copy(update={"result": f"{text}\nDay: {now:%A}"})]})
    assert live_task(twice, [later]) is None  # two lines hold it: which one the task asks for is not known


PRICES = '''
import sys
sys.path.insert(0, {root!r})
from tests.server_fork import hand_over
hand_over()
from mcprl.servers import serve

STOCK = {{"mug": 12, "bowl": 30, "cup": 7, "plate": 19}}


def price(item: str, size: str) -> str:
    """The price of an item in a size."""
    if size == "huge":
        raise ValueError("no huge ones left")
    return "4"


def stock(item: str) -> str:
    """How many of an item are in stock."""
    return str(STOCK[item])


def build(seed: int = 0):
    server = serve.new_server("prices", "Prices.")
    serve.add_tools(server, [price, stock], writes=[])
    return server


if __name__ == "__main__":
    serve.main(build, "Prices.")
'''


async def test_tasks_are_verified_until_as_many_as_asked_for_ask_different_things(tmp_path):
    """A mug's price was 4 small and 4 large, and something else huge: the size changed the answer, so the small and
    the large price were two questions. The huge one is sold out when replayed; without it the size changed
    nothing, and the two are one question. Grounding verified tasks until it had as many as asked for, then
    counted them again, one fewer, with unverified ones left: it verifies on until the count holds."""
    from mcprl.scenarios.explored import Exploration, ExploredCall

    server = tmp_path / "prices.py"
    server.write_text(PRICES.format(root=str(Path(__file__).resolve().parents[2])))
    made = [("price", {"item": "mug", "size": s}, t) for s, t in [("small", "4"), ("large", "4"), ("huge", "913")]]
    made += [("stock", {"item": i}, str(n)) for i, n in [("mug", 12), ("bowl", 30), ("cup", 7), ("plate", 19)]]
    calls = [ExploredCall(index=i, session=i, tool=t, arguments=a, text=x) for i, (t, a, x) in enumerate(made)]
    async with ToolPool(ServerSpec.parse(f"{sys.executable} {server}")) as pool:
        tasks, report = await ground(pool, 5, Exploration(calls=calls), seed=0, say=lambda _: None)
    assert len(tasks) == 5, (report.dropped, [t.task for t in tasks])
    assert report.dropped["chain failed on replay"] == 1 and report.dropped["duplicate"] == 1, report.dropped


async def test_a_runner_of_code_is_sent_programs_in_the_language_it_has():
    """mcp-server-code-runner takes a snippet and one of forty languages, few installed: it was sent "snippet",
    "test" and error texts as code, and each program once, with a language that is not there ("kitc: not found"),
    then retired (0 tasks); mcp-python-interpreter answered failures as successes whose text holds a traceback, and
    its frames' paths were sent as code. A program is sent again beside another language while no error blamed it,
    the language that ran it is sent again with other programs, a traceback names nothing to send, and what the
    program printed under its headings is the answer: tasks over the runner, each answered again as it was, none
    stating its answer, no failed call made twice."""
    from mcprl.tools.convert import reports_error

    spec = ServerSpec.parse(f"{sys.executable} {Path(__file__).with_name('runner_server.py')}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, 6, exploration, seed=0, say=lambda _: None)
        failed = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in exploration.calls if c.is_error]
        assert len(failed) == len(set(failed))
        assert all(reports_error(c.text) for c in exploration.calls if "Traceback" in c.text)
        assert not any("/srv/runner" in str(c.arguments) for c in exploration.calls)
        assert len(tasks) >= 4, report.summary()
        for t in tasks:
            assert not holds_answer(t.task, str(t.answer)), (t.task, t.answer)
            async with pool.session() as session:
                for step in t.reference:
                    text = (await session.call(step.tool, step.arguments)).text
            assert gives_answer(t, text), (t.task, t.answer, text)
