"""Never a dead end while a tool answered (mcprl.scenarios.fallback): grounding that kept too few tasks is
topped up with synthesized ones whose reference call ran on the live server, judged by RULER."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from mcprl.errors import UserError
from mcprl.scenarios.config import ExploreConfig, ScenarioConfig
from mcprl.scenarios.results import found_nothing
from mcprl.scenarios.source import run_scenarios
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario, Trajectory, TrajectoryGroup
from tests.fake_llm import FakeLLM, ruler_handler
from tests.server_fork import shipped

pytestmark = pytest.mark.anyio
INVENTORY = shipped("inventory")  # `python -m mcprl.servers.inventory`, forked under pytest
QUERIES = ["drill", "zzzz", "steel", "hammer", "qqqq", "brass"]  # two find nothing: those tasks are not kept


def generator(body: dict) -> str:
    """A generator model: tasks for the tools offered, each naming a query from QUERIES in turn (some of which find
    nothing) and two small numbers, and a call's arguments under the tool's schema, the values its task names."""
    schema = body["response_format"]["json_schema"]["schema"]
    props = schema.get("properties", {})
    seed = body.get("seed") or 0
    if "scenarios" in props:
        tool = props["scenarios"]["items"]["properties"]["tools"]["items"]["enum"][0]
        n = 2 + seed % 7
        task = f"Could you {tool.replace('_', ' ')} {QUERIES[seed % len(QUERIES)]} with {n} and {n + 1}?"
        return json.dumps({"scenarios": [{"tools": [tool], "task": task, "difficulty": 1}]})
    task = re.search(r"Task: (.*)", body["messages"][-1]["content"])[1]
    if "query" in props:
        return json.dumps({"query": next(q for q in QUERIES if q in task)})
    named = iter(int(x) for x in re.findall(r"\d+", task))
    numbers = {k: next(named, 1) for k, v in props.items() if v.get("type") in ("number", "integer")}
    return json.dumps({k: numbers[k] for k in schema.get("required", []) if k in numbers})


async def starved(
    tmp_path: Path,
    llm: FakeLLM,
    lines: list[str],
    spec: ServerSpec | None = None,
    calls: int = 3,
    n: int = 4,
    **scenarios,
) -> list[Scenario]:
    """`n` scenarios for a server (the inventory with one tool allowed) explored in a few calls (three): too few to
    ground."""
    spec = spec or ServerSpec.parse(INVENTORY, allow=["search_items"])
    async with ToolPool(spec) as pool:
        train, val = await run_scenarios(
            ScenarioConfig(n=n, **scenarios),
            tmp_path,
            seed=0,
            resume=False,
            pool=pool,
            generate=None,
            model="openai/fake",
            api_base=llm.base_url,
            explore=ExploreConfig(calls=calls, generated=0, phrase=False),
            say=lines.append,
        )
    return train + val


async def test_grounding_that_keeps_too_few_tasks_is_topped_up_with_synthesized_tasks_whose_call_ran(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    lines: list[str] = []
    with FakeLLM(handler=generator) as llm:
        tasks = await starved(tmp_path, llm, lines)
    synthesized = [s for s in tasks if s.metadata.get("source") == "synthesized"]
    grounded = [s for s in tasks if s.metadata.get("source") == "grounded"]
    assert synthesized and len(tasks) >= 2
    # the run says how many of each
    counts = [(int(m[1]), int(m[2])) for line in lines if (m := re.search(r"(\d+) grounded\D+(\d+) synthesized", line))]
    assert (len(grounded), len(synthesized)) in counts
    # every synthesized task has no check (RULER judges it) and a reference call that runs on the live server
    assert all(s.check is None and len(s.reference) == 1 for s in synthesized)
    async with ToolPool(ServerSpec.parse(INVENTORY)) as pool:
        for s in synthesized:
            call = s.reference[0]
            async with pool.session() as session:
                outcome = await session.call(call.tool, call.arguments)
            assert not outcome.is_error and outcome.text == call.result and not found_nothing(call.result)
    # calls that found nothing were made (QUERIES) and their tasks dropped
    report = json.loads((tmp_path / "grounding.json").read_text())["fallback"]
    assert report["kept"] == len(synthesized) and sum(report["dropped"].values()) > 0


async def test_a_synthesized_task_is_kept_only_as_a_request_stating_what_its_call_is_given(tmp_path, monkeypatch):
    # drafts as the offline 135M generator writes them (no words, a tool's name, the prompt echoed, a request
    # whose call is given a value it does not state) beside requests that state theirs
    drafts = [
        "9:10:198ABBA",
        "Find me the steel items",
        "search_items",
        "Which items match brass?",
        "here, add two tasks.",
        "Find the items a customer asked about",
        "search_items is not available, please make a new task",
    ]

    def llm(body: dict) -> str:
        props = body["response_format"]["json_schema"]["schema"].get("properties", {})
        if "scenarios" in props:
            return json.dumps({"scenarios": [{"tools": ["search_items"], "task": t, "difficulty": 1} for t in drafts]})
        task = re.search(r"Task: (.*)", body["messages"][-1]["content"])[1]
        return json.dumps({"query": next((q for q in QUERIES if q in task), "drill")})  # else one made up

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeLLM(handler=llm) as fake:
        tasks = await starved(tmp_path, fake, [])
    synthesized = [s for s in tasks if s.metadata.get("source") == "synthesized"]
    assert synthesized
    for s in synthesized:
        assert len(re.findall(r"[A-Za-z]{2,}", s.task)) >= 3 and "search items" not in s.task.lower().replace("_", " ")
        assert s.reference[0].arguments["query"] in s.task  # the value its call is given, stated
    report = json.loads((tmp_path / "grounding.json").read_text())["fallback"]
    assert report["dropped"].get("does not state its call's values") and report["dropped"].get("no words")
    # nor a tool's name written out as words
    from mcprl.scenarios.fallback import unfit

    distance = {"name": "calculate_time_distance", "description": "Time between two dates"}
    assert unfit("Calculate Time Distance", distance, {}, ["calculate_time_distance"]) is not None
    # nor an identifier of many words, or a draft that opens with code (mcp-obsidian's fallback kept both)
    assert unfit("parse_notes_to_json", distance, None, []) == "no words"
    assert unfit("])); Skip missing missing details of the dates.", distance, None, []) == "no words"
    # nor words strewn among code (the offline generator's draft for tree-sitter's `configure`)
    strewn = "Configure directories & list all keys when. {es} />}]}; {#13;}]; {#2;}]; {#5;}]; {#8;}} {#9}}]}];"
    assert unfit(strewn, distance, None, []) == "no words"
    # ... or a program's names (the offline generator's draft for mcp-simple-timeserver's `get_local_time`), and names
    # run together more than a request holds
    program = (
        "return {project.dataMapper.GridDataMapper: {immuneImmutable: false, autoResizeDatagraphicalData: true, "
        "dataTypeMap: [DataMapperImmutable.MIMETABLE, DataMapperImmutable.JSONParser], keysToIndex: False}}"
    )
    assert unfit(program, distance, None, []) == "no words"
    assert unfit("Template to Create a TimeListed by DateTimeTime Span to List by DateTimeTime", distance, None, [])
    # ... or one that trails off unfinished (the offline generator's draft for mcp-text-editor)
    assert unfit("Calling to get text containing multiple lines from multiple files...", distance, None, [])
    assert unfit("What is the iPhone's price in the shop on Main Street?", distance, None, []) is None
    assert unfit('Add the note {"title": "Plan"} and list notes [a, b].', distance, None, []) is None
    assert unfit("What do I get for (2 + 3) * 4 - 5 / 2?", distance, None, []) is None
    assert unfit('"Weekly" notes: how many days between them?', distance, None, []) is None
    dates = {"from_date": "2025-01-01", "to_date": "2025-03-01"}
    assert unfit("How long is it from 2025-01-01 to 2025-03-01?", distance, dates, ["calculate_time_distance"]) is None


async def test_without_the_fallback_or_an_answering_tool_it_stops_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    with FakeLLM(handler=generator) as llm:
        with pytest.raises(UserError, match="--scenarios FILE"):
            await starved(tmp_path, llm, [], fallback=False)
        assert llm.requests == []
    # no tool ever answered: the generator is not asked, the error names the fixes
    shop = Path(__file__).resolve().parents[1] / "data" / "shop_server.py"
    lines: list[str] = []
    with FakeLLM(handler=generator) as llm:
        async with ToolPool(ServerSpec.parse(f"{sys.executable} {shop}", allow=["run_query"])) as pool:
            with pytest.raises(UserError, match="every call it answered was an error"):
                await run_scenarios(
                    ScenarioConfig(n=8),
                    tmp_path,
                    seed=0,
                    resume=False,
                    pool=pool,
                    generate=None,
                    model="openai/fake",
                    api_base=llm.base_url,
                    explore=ExploreConfig(calls=6, generated=0),
                    say=lines.append,
                )
        assert llm.requests == []
    assert any("run_query" in line and "errors" in line for line in lines)  # which errors each tool gave


async def test_a_mixed_set_is_judged_by_checks_where_it_has_them_and_by_ruler_elsewhere(monkeypatch):
    from mcprl.judges import JudgeConfig, score_groups

    monkeypatch.setenv("OPENAI_API_KEY", "x")

    def group(check: dict | None, *finals: str) -> TrajectoryGroup:
        scenario = Scenario(task="What is 3 + 4?", answer=7, check=check)
        return TrajectoryGroup(
            scenario=scenario,
            trajectories=[
                Trajectory(messages=[{"role": "user", "content": scenario.task}, {"role": "assistant", "content": f}])
                for f in finals
            ],
        )

    quality = ruler_handler(lambda body: float(re.search(r"quality=([\d.]+)", body).group(1)))
    with FakeLLM(handler=quality) as llm:
        cfg = JudgeConfig(mode="verify", model="openai/judge", api_base=llm.base_url)
        checked, unchecked = group({"kind": "holds"}, "7", "8"), group(None, "quality=0.25", "quality=1")
        await score_groups(cfg.build(unchecked=True), [checked, unchecked])
        assert len(llm.requests) == 1  # RULER saw the group without a check only
        assert [t.reward for t in checked.trajectories] == [1.0, 0.0]
        assert [t.reward for t in unchecked.trajectories] == [0.25, 1.0] and not unchecked.skipped
        # without `unchecked` the group without a check is skipped, as before
        alone = group(None, "quality=0.25", "quality=1")
        await score_groups(cfg.build(), [alone])
        assert alone.skipped and len(llm.requests) == 1
        # held out, a mixed set is judged the same way
        held = group(None, "quality=0.5", "quality=1")
        await score_groups(cfg.held_out(False), [held, group({"kind": "holds"}, "7", "9")])
        assert [t.reward for t in held.trajectories] == [0.5, 1.0]


def test_a_synthesized_tasks_written_reference_answers_with_what_its_call_found():
    from mcprl.checks import holds_answer
    from mcprl.run.references import reference_trajectory
    from mcprl.types import Generation, ReferenceCall

    found = "SKU-6462 | steel level | tools | stock: 12 | price: $53.63"
    scenario = Scenario(
        task="Find me a steel level",
        reference=[ReferenceCall(tool="search_items", arguments={"query": "steel level"}, result=found)],
    )
    prompt = [{"role": "system", "content": "You call tools."}, {"role": "user", "content": scenario.task}]
    sampled = Trajectory(
        messages=[*prompt, {"role": "assistant", "content": "I do not know."}],
        generations=[Generation(prompt_token_ids=[1], completion_token_ids=[2], logprobs=[0.0], message_index=2)],
    )
    for finish in ("text", "tool"):
        written = reference_trajectory(TrajectoryGroup(scenario=scenario, trajectories=[sampled]), finish)
        assert written is not None and written.messages[:2] == prompt
        assert all(holds_answer(written.final_answer(), v) for v in ("steel level", 53.63, "SKU-6462"))


async def test_scenario_sources_are_registered_and_mixed_tops_up_what_grounded_keeps(tmp_path, monkeypatch):
    from mcprl.scenarios.source import SOURCES, source_name

    assert {"file", "tasks", "grounded", "synthesized", "mixed"} <= set(SOURCES)
    assert source_name(ScenarioConfig(file="x.jsonl"), None) == "file"
    assert source_name(ScenarioConfig(source="mixed"), lambda *a, **k: []) == "tasks"
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    made = {}
    with FakeLLM(handler=generator) as llm:
        async with ToolPool(ServerSpec.parse(shipped("calculator"))) as pool:
            for source in ("grounded", "mixed"):  # two grounded tasks are enough for `grounded` here
                train, val = await run_scenarios(
                    ScenarioConfig(n=6, source=source, min_grounded=2),
                    tmp_path / source,
                    seed=0,
                    resume=False,
                    pool=pool,
                    generate=None,
                    model="openai/fake",
                    api_base=llm.base_url,
                    explore=ExploreConfig(calls=4, generated=0, phrase=False),
                    say=lambda _: None,
                )
                made[source] = train + val
    grounded_only = made["grounded"]
    assert 2 <= len(grounded_only) < 6 and all(s.check is not None for s in grounded_only)
    mixed = made["mixed"]
    assert {s.id for s in grounded_only} < {s.id for s in mixed}
    assert all(s.check is None and s.reference for s in mixed if s.id not in {g.id for g in grounded_only})


async def test_a_synthesized_tasks_call_that_failed_for_some_of_its_items_is_no_reference(tmp_path, monkeypatch):
    """mcp-obsidian's fallback kept a task whose reference read eleven notes, most of them not there ("Error -
    ENOENT" for each, the call answering for the rest). A call of a list that its result says failed for some items
    is no reference: every kept task's reference answers for all it was sent."""
    from mcprl.scenarios.results import failed_items
    from tests.scenarios.explored_servers import ENTRIES

    files = ["soup.md", "q1.csv", "bread.md"]

    def llm(body: dict) -> str:
        props = body["response_format"]["json_schema"]["schema"].get("properties", {})
        seed = body.get("seed") or 0
        if "scenarios" in props:
            task = f"How big are the files {files[seed % 3]} and notes{seed}.md?"
            return json.dumps({"scenarios": [{"tools": ["read_files"], "task": task, "difficulty": 1}]})
        task = re.search(r"Task: (.*)", body["messages"][-1]["content"])[1]
        return json.dumps({"names": re.findall(r"\w+\.\w+", task)[: 1 if "notes1" in task else 2]})

    monkeypatch.setenv("OPENAI_API_KEY", "x")
    spec = ServerSpec.parse(f"{sys.executable} {ENTRIES}", allow=["recent_files", "read_files"])
    with FakeLLM(handler=llm) as fake:
        tasks = await starved(tmp_path, fake, [], spec=spec, calls=5, n=16)
    report = json.loads((tmp_path / "grounding.json").read_text())["fallback"]
    assert report["dropped"].get("its call failed for some of what it was sent"), report
    synthesized = [s for s in tasks if s.metadata.get("source") == "synthesized"]
    assert synthesized
    for s in synthesized:
        assert not failed_items(s.reference[0].result, s.reference[0].arguments), s.reference[0]


def test_a_synthesized_task_states_the_values_nested_in_its_call():
    """mcp-text-editor's `get_text_file_contents` takes a list of requests, each a file and its ranges: the offline
    generator's "divide file contents into text of lengths" was kept for a call reading stock.csv's lines 15 to 34,
    the values nested in a list never compared with the task. Every value a call is given, however deep, is stated
    (but a flag, a choice its schema lists or its default)."""
    from mcprl.scenarios.fallback import unfit

    reader = {
        "name": "get_text_file_contents",
        "description": "Read text file contents from multiple files and line ranges.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "files": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "file_path": {"type": "string"},
                            "encoding": {"type": "string", "default": "utf-8"},
                            "ranges": {
                                "type": "array",
                                "items": {"type": "object", "properties": {"start": {"type": "integer"}}},
                            },
                        },
                    },
                }
            },
        },
    }
    args = {"files": [{"file_path": "/srv/docs/stock.csv", "encoding": "utf-8", "ranges": [{"start": 15, "end": 34}]}]}
    names = [reader["name"]]
    assert unfit("divide file contents into text of lengths", reader, args, names) == "does not state its call's values"
    assert unfit("Read lines 15 to 34 of the file contents", reader, args, names) == "does not state its call's values"
    assert unfit("Read lines 15 to 34 of /srv/docs/stock.csv.", reader, args, names) is None
