"""The task-shaped demonstration (mcprl.run.demonstration): built from a real training scenario against
a real MCP server, with the generator (a local HTTP stand-in here) constrained by the tool's schema."""

import json
import sys
from pathlib import Path

import pytest

from mcprl.errors import UserError
from mcprl.run import demonstration
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario
from tests.cli_runner import run_cli
from tests.fake_llm import FakeLLM, Reply

pytestmark = pytest.mark.anyio


def scenarios(n: int, tools: list[str]) -> list[Scenario]:
    return [Scenario(id=f"s{i}", task=f"What is {i} + 40 - 7?", tools=tools) for i in range(n)]


async def test_a_scenario_demonstration_runs_the_call_and_leaves_training():
    train = scenarios(5, ["add"])
    with FakeLLM(handler=lambda body: '{"a": 2, "b": 40}') as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.calculator"), per_rollout=False) as pool:
            demo, rest = await demonstration.build(train, pool, model="openai/gen", api_base=llm.base_url, seed=3)
    assert demo.source.startswith("scenario:")
    used = demo.source.removeprefix("scenario:")
    assert used not in {s.id for s in rest} and len(rest) == 4
    task = next(s.task for s in train if s.id == used)
    ((user, assistant),) = demo.exchanges
    assert user == {"role": "user", "content": task}
    fn = assistant["tool_calls"][0]["function"]
    assert fn["name"] == "add" and json.loads(fn["arguments"]) == {"a": 2, "b": 40}
    # the writer was asked for exactly the tool's input schema, and told the task
    schema_text = json.dumps(pool.toolset.tools[0]["function"]["parameters"], separators=(",", ":"))
    assert (
        schema_text in llm.requests[0]["messages"][0]["content"] and llm.requests[0]["messages"][-1]["content"] == task
    )
    # the same seed picks the same scenario
    with FakeLLM(handler=lambda body: '{"a": 2, "b": 40}') as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.calculator"), per_rollout=False) as pool:
            again, _ = await demonstration.build(train, pool, model="openai/gen", api_base=llm.base_url, seed=3)
    assert again.source == demo.source


async def test_without_a_named_tool_the_generator_picks_one_from_an_enum():
    seen = []

    def handler(body):
        seen.append(body["messages"][0]["content"])
        return '{"tool": "multiply"}' if len(seen) == 1 else '{"a": 6, "b": 7}'

    with FakeLLM(handler=handler) as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.calculator"), per_rollout=False) as pool:
            demo, _ = await demonstration.build(
                scenarios(3, []), pool, model="openai/gen", api_base=llm.base_url, seed=0
            )
    assert '"enum":["add","subtract","multiply","divide","power"]' in seen[0]
    assert demo.exchanges[0][1]["tool_calls"][0]["function"]["name"] == "multiply"


async def test_calls_that_fail_fall_back_to_the_generic_demonstration():
    """Division by zero (a tool error), schema-invalid arguments, and a reply with no JSON: the
    exchange is kept only if the tool answers without error, so none is, and nothing leaves training."""
    replies = ['{"a": 1, "b": 0}', '{"a": "one"}', "no idea"]
    train = scenarios(6, ["divide"])
    said = []
    with FakeLLM(handler=lambda body: replies[len(said) % 3]) as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.calculator"), per_rollout=False) as pool:
            demo, rest = await demonstration.build(
                train, pool, model="openai/gen", api_base=llm.base_url, seed=0, say=said.append
            )
    assert demo.source == "generic" and demo.exchanges is None and rest == train
    # SAMPLES calls for each of the three candidate scenarios; one round each, as `divide` takes
    # no strings (the task's words would constrain nothing)
    assert len(llm.requests) == 3 * demonstration.SAMPLES and "generic" in said[-1]


async def test_of_the_calls_written_the_one_that_runs_is_kept():
    """The first (greedy) call divides by zero; a sampled one runs and is kept."""

    def handler(body):
        return '{"a": 1, "b": 0}' if body["temperature"] == 0 else '{"a": 8, "b": 2}'

    with FakeLLM(handler=handler) as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.calculator"), per_rollout=False) as pool:
            demo, _ = await demonstration.build(
                scenarios(4, ["divide"]), pool, model="openai/gen", api_base=llm.base_url, seed=0
            )
    assert json.loads(demo.exchanges[0][1]["tool_calls"][0]["function"]["arguments"]) == {"a": 8, "b": 2}
    assert {r["temperature"] for r in llm.requests} == {0, 1.0} and len(
        {r["seed"] for r in llm.requests}
    ) == demonstration.SAMPLES


async def test_when_no_call_of_the_tasks_words_runs_the_call_is_written_freely():
    """A SKU is not among the task's words: the words-only round's calls all fail, the free round's run."""
    from mcprl.servers.inventory.world import Warehouse

    sku = next(iter(Warehouse(0).items))
    scenario = Scenario(id="by-sku", task="Show me the details of our cheapest hammer.", tools=["get_item"])

    def handler(body):
        words_only = "pattern" in json.dumps(body["response_format"]["json_schema"]["schema"])
        return json.dumps({"sku": "cheapest hammer" if words_only else sku})

    with FakeLLM(handler=handler) as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.inventory"), per_rollout=False) as pool:
            demo, _ = await demonstration.build(
                [scenario, scenario.model_copy(update={"id": "again"})],
                pool,
                model="openai/gen",
                api_base=llm.base_url,
                seed=0,
            )
    assert json.loads(demo.exchanges[0][1]["tool_calls"][0]["function"]["arguments"]) == {"sku": sku}
    assert len(llm.requests) == 2 * demonstration.SAMPLES


def _lookup_task(answer_known: bool) -> tuple[Scenario, str]:
    from mcprl.servers.inventory.world import Warehouse

    item = next(i for i in Warehouse(0).items.values() if len(i.name.split()) == 2)
    task = f"What does the {item.name} cost?"
    return Scenario(
        id="lookup", task=task, tools=["search_items"], answer=item.price if answer_known else None
    ), item.name


@pytest.mark.parametrize("answer_known", [True, False])
async def test_the_call_whose_result_tells_most_is_kept(answer_known):
    """Searching with the whole question runs without error but finds nothing ("no items match");
    searching with the item's name finds it. The name is kept: with a known answer because its
    result holds the answer, without one because its result brings new words."""
    scenario, name = _lookup_task(answer_known)

    def handler(body):
        query = scenario.task.rstrip("?") if body["temperature"] == 0 else name
        return json.dumps({"query": query})

    with FakeLLM(handler=handler) as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.inventory"), per_rollout=False) as pool:
            train = [scenario, scenario.model_copy(update={"id": "lookup-too"})]
            demo, rest = await demonstration.build(train, pool, model="openai/gen", api_base=llm.base_url, seed=0)
    # the demonstration's task leaves training whole: its copy too
    assert demo.source.startswith("scenario:lookup") and rest == []
    assert json.loads(demo.exchanges[0][1]["tool_calls"][0]["function"]["arguments"]) == {"query": name}


@pytest.mark.parametrize("answer_known", [True, False])
async def test_a_whole_question_copied_into_a_string_is_narrowed_to_the_name_in_it(answer_known):
    """Every call written searches with the whole question and finds nothing; the same call with a
    shorter run of the question's words finds the item and is kept (with the answer known, without
    asking the writer for free calls: it found the answer)."""
    scenario, name = _lookup_task(answer_known)
    with FakeLLM(handler=lambda body: json.dumps({"query": scenario.task.rstrip("?")})) as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.inventory"), per_rollout=False) as pool:
            train = [scenario, scenario.model_copy(update={"id": "lookup-too"})]
            demo, _ = await demonstration.build(train, pool, model="openai/gen", api_base=llm.base_url, seed=0)
    query = json.loads(demo.exchanges[0][1]["tool_calls"][0]["function"]["arguments"])["query"]
    assert query == name if answer_known else name in query
    assert len(llm.requests) == (1 if answer_known else 2) * demonstration.SAMPLES


def test_a_grounded_demonstration_shows_the_read_most_tasks_begin_with_then_the_fewest_records():
    """Reads before writes and single calls before chains; of those, the tool the most tasks begin
    with (a repository's log, 4 tasks, over a lookup by a hash its own task states, 2: the policy
    copied the lookup's hash into most held-out questions), then the answer in the fewest records."""
    from mcprl.types import ReferenceCall

    def task(i: int, tool: str, records: int, *, writes: bool = False, calls: int = 1, **arguments) -> Scenario:
        chain = [ReferenceCall(tool=tool, arguments=arguments, result="r", writes=writes)] * calls
        return Scenario(
            id=f"{tool}-{i}", task=f"{tool} {i}?", answer="r", reference=chain, metadata={"records": records}
        )

    log = [task(i, "log", records=6) for i in range(3)] + [task(3, "log", records=2)]
    show = [task(i, "show", records=1, revision=f"{i}a7f") for i in range(2)]
    writes = [task(i, "commit", records=1, writes=True) for i in range(6)]
    chains = [task(i, "branch", records=1, calls=2) for i in range(6)]
    grounded = log + show + writes + chains
    for seed in range(4):
        demo, kept = demonstration.from_reference(grounded, grounded, seed=seed)
        assert demo.source == "grounded:log-3" and len(kept) == len(grounded) - 1
        assert demo.exchanges[0][1]["tool_calls"][0]["function"]["name"] == "log"
    # among tools as common, the fewest records: a lookup over a listing
    demo, _ = demonstration.from_reference(show + log[:2], show + log[:2], seed=0)
    assert demo.source.startswith("grounded:show-")


def test_a_grounded_demonstration_shows_a_task_that_states_no_value_where_its_tool_has_one():
    """Of one tool's one-call reads, one whose task states no value before any that states some,
    whatever the records: the policy copies what the shown task states (a date it was about went
    into other questions' calls and answers), and a task that states nothing gives it nothing to copy."""
    from mcprl.types import ReferenceCall

    def task(i: int, given: list[str], records: int) -> Scenario:
        call = ReferenceCall(tool="log", arguments={"repo_path": "/r"}, result="r", writes=False)
        question = f"What is the message of the commit dated {given[0]}?" if given else f"Who made commit {i}?"
        metadata = {"records": records, "given": given}
        return Scenario(id=f"log-{i}", task=question, answer="r", reference=[call], metadata=metadata)

    stating = [task(i, [f"2024-03-0{i}"], records=1) for i in range(4)]
    plain = [task(4, [], records=6), task(5, [], records=6)]
    for seed in range(4):
        demo, _ = demonstration.from_reference(stating + plain, stating + plain, seed=seed)
        assert demo.source in ("grounded:log-4", "grounded:log-5")
        assert not any(g in demo.exchanges[0][0]["content"] for s in stating for g in s.metadata["given"])
    # where every task states values, the fewest records decide as before
    demo, _ = demonstration.from_reference(stating, stating, seed=0)
    assert demo.source.startswith("grounded:log-")


def test_narrowed_cuts_one_string_at_a_time_longest_runs_first():
    variants = demonstration.narrowed({"query": "red steel hammer", "where": "a b", "limit": 3})
    assert [n for n, _ in variants] == sorted((n for n, _ in variants), reverse=True)
    assert (2, {"query": "steel hammer", "where": "a b", "limit": 3}) in variants
    assert (1, {"query": "red steel hammer", "where": "b", "limit": 3}) in variants
    assert len(variants) == 3 + 2 + 2 and demonstration.narrowed({"limit": 3, "q": "one"}) == []


def test_usefulness_prefers_the_answer_then_the_fewest_other_words_then_new_words():
    scenario = Scenario(task="What does the steel hammer cost?", answer="12.99")
    found = demonstration.usefulness(scenario, {"query": "steel hammer"}, "SKU-1 | steel hammer | price: $12.99")
    dump = demonstration.usefulness(
        scenario, {"query": ""}, "SKU-1 | steel hammer | price: $12.99\nSKU-2 | brass saw | price: $3.10"
    )
    missed = demonstration.usefulness(scenario, {"query": "cost"}, "no items match 'cost'")
    other = demonstration.usefulness(
        scenario, {"query": "hammer"}, "SKU-9 | pro hammer | tools | stock: 3 | price: $8.00"
    )
    assert found > dump > other > missed
    # without a known answer, new words decide
    blind = scenario.model_copy(update={"answer": None})
    assert demonstration.usefulness(
        blind, {"query": "hammer"}, "SKU-9 | pro hammer | price: $8.00"
    ) > demonstration.usefulness(blind, {"query": "cost"}, "no items match 'cost'")


def test_a_demonstration_call_is_short_and_made_of_the_tasks_words():
    """Every unbounded string and array of the constraint gets a bound (nested, $defs and anyOf
    included); strings with their own bound, enum, format or pattern keep theirs; the words
    pattern admits the task's words and nothing else."""
    import re

    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "when": {"type": "string", "format": "date"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "ids": {"type": "array", "minItems": 6, "items": {"$ref": "#/$defs/Id"}},
            "n": {"type": "integer"},
        },
        "$defs": {"Id": {"type": ["string", "null"], "maxLength": 8}},
        "required": ["query"],
    }
    task_words = demonstration.task_words("How many heavy-duty nail box (SKU-1000) units are in stock?")
    out = demonstration.short_call_schema(schema, task_words)
    words = demonstration.words_pattern(task_words)
    props = out["properties"]
    assert props["query"] == {"type": "string", "maxLength": demonstration.MAX_STRING, "pattern": words}
    assert props["mode"] == schema["properties"]["mode"] and props["when"] == schema["properties"]["when"]
    assert props["tags"]["maxItems"] == demonstration.MAX_ITEMS and props["tags"]["items"]["pattern"] == words
    assert props["note"]["anyOf"][0]["pattern"] == words and props["ids"]["maxItems"] == 6
    assert (
        out["$defs"]["Id"] == schema["$defs"]["Id"]
        and props["n"] == {"type": "integer"}
        and out["required"] == ["query"]
    )
    assert re.fullmatch(words, "heavy-duty nail box") and re.fullmatch(words, "SKU-1000")
    assert (
        not re.fullmatch(words, "drill") and not re.fullmatch(words, "heavy-duty  box") and not re.fullmatch(words, "")
    )
    assert "pattern" not in demonstration.short_call_schema(schema)["properties"]["query"]


def _unsatisfiable(schema) -> list[str]:
    """What llguidance (the endpoint's grammar compiler) says is unsatisfiable in `schema`."""
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults={"lenient": True})
    is_error, warnings = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    return [w for w in warnings if "nsatisfiable" in w] + (["error"] if is_error else [])


LONG_TASK = "Schedule task 12 at https://calendar.example.com/teams/platform/boards/q3-planning?view=week now"


@pytest.mark.parametrize(
    "due",
    [
        {"type": "string"},  # a task word longer than MAX_STRING (the URL) left the words pattern nothing to match
        {"type": "string", "minLength": 60},  # a minimum above MAX_STRING
        {"type": "string", "minLength": 20},  # no single task word this long, and none of these words fits alone
        {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        {"type": "string", "format": "date-time"},
        {"type": "string", "enum": ["today", "tomorrow"]},
        {"type": "array", "items": {"type": "string", "minLength": 3}, "minItems": 9},
        {"anyOf": [{"type": "string", "minLength": 50}, {"type": "null"}]},
    ],
)
def test_a_demonstration_constraint_is_satisfiable_wherever_the_tools_schema_is(due):
    """schedule_task(id: integer, due: ..., both required): the words-first and the free
    constraints the writer is asked for compile as satisfiable grammars (issue 28.1: the endpoint
    answered 400 "required property 'due' is unsatisfiable" and the run died)."""
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "due": due}, "required": ["id", "due"]}
    assert _unsatisfiable(schema) == []
    words = demonstration.task_words(LONG_TASK) + demonstration.task_words("a bb")
    for constraint in (demonstration.short_call_schema(schema, words), demonstration.short_call_schema(schema)):
        assert _unsatisfiable(constraint) == [], constraint


async def test_a_constraint_the_endpoint_refuses_falls_back_with_one_line():
    """Every words-first call is refused with a 400 (as an endpoint refuses a schema it finds
    unsatisfiable): the run goes on with the free constraint, saying why, instead of an
    ExceptionGroup ending it."""

    def handler(body):
        if "pattern" in json.dumps(body["response_format"]["json_schema"]["schema"]):
            return Reply(status=400, content="Unsatisfiable schema: required property 'city' is unsatisfiable")
        return '{"city": "Oslo"}'

    train = [Scenario(id=f"s{i}", task=f"Weather in Oslo, day {i}?", tools=["get_forecast"]) for i in range(2)]
    said = []
    with FakeLLM(handler=handler) as llm:
        async with ToolPool(
            ServerSpec.parse(f"{sys.executable} {Path(__file__).resolve().parents[1] / 'one_tool_server.py'}")
        ) as pool:
            demo, _ = await demonstration.build(
                train, pool, model="openai/gen", api_base=llm.base_url, seed=0, say=said.append
            )
    assert demo.source.startswith("scenario:"), said
    assert any("wrote no call to `get_forecast`" in line and "looser constraint" in line for line in said)
    assert all("\n" not in line for line in said)


async def test_a_generator_that_always_fails_gives_the_generic_demonstration():

    said = []
    with FakeLLM(handler=lambda body: Reply(status=400, content="bad request")) as llm:
        async with ToolPool(ServerSpec.parse("python -m mcprl.servers.inventory"), per_rollout=False) as pool:
            demo, rest = await demonstration.build(
                scenarios(4, ["get_item"]), pool, model="openai/gen", api_base=llm.base_url, seed=0, say=said.append
            )
    assert demo.source == "generic" and len(rest) == 4 and "generic" in said[-1]


@pytest.mark.parametrize(
    "content,problem",
    [
        ("{not json", "not valid JSON"),
        ('{"role": "user"}', "expected a non-empty JSON list"),
        ('[{"role": "robot", "content": "hi"}]', "message 0.role"),
    ],
)
def test_a_bad_demonstration_file_is_a_one_line_error(tmp_path, content, problem):
    f = tmp_path / "ex.json"
    f.write_text(content)
    with pytest.raises(UserError, match=problem) as e:
        demonstration.load_file(f)
    assert "\n" not in str(e.value) and "fix:" in str(e.value)


def test_a_good_demonstration_file_loads(tmp_path):
    msgs = [
        {"role": "user", "content": "What is 2 + 2?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
        },
    ]
    (tmp_path / "ex.json").write_text(json.dumps(msgs))
    assert demonstration.load_file(tmp_path / "ex.json") == msgs


GIVEN = [[{"role": "user", "content": "What is 2 + 2?"}]]
SHIPPED = [{"role": "user", "content": "What is 3 + 3?"}]
GROUNDED = [Scenario(id="g", task="What is 2 + 3?", reference=[{"tool": "add", "arguments": {"a": 2, "b": 3}}])]


async def settled(sources=demonstration.SOURCES, **given) -> demonstration.Demonstration:
    """The demonstration `sources` settle on, without a server, for the settings `given`."""
    settings = {"enabled": True, "given": None, "file": None, "shipped": None, "train": GROUNDED, "per_tool": False}
    context = demonstration.Context(pool=None, model="openai/gen", api_base=None, seed=0, **{**settings, **given})
    demo, _ = await demonstration.settle(context, sources)
    return demo


@pytest.mark.parametrize(
    ("given", "source"),
    [
        ({"enabled": False, "given": GIVEN, "shipped": SHIPPED}, "none"),
        ({"given": GIVEN, "file": "no-such-file.json", "shipped": SHIPPED}, "file"),
        ({"shipped": SHIPPED}, "task-module"),
        ({}, "generic"),  # no server: neither a reference call nor a written one
    ],
)
async def test_the_first_registered_source_that_answers_gives_the_demonstration(given, source):
    assert [s.__name__ for s in demonstration.SOURCES] == ["off", "given", "task_module", "grounded", "generated"]
    assert (await settled(**given)).source == source


async def test_a_new_source_is_one_function_used_in_its_place_in_the_order():
    asked = []

    async def passes(c):
        asked.append(c.shipped)
        return None

    async def mine(c):
        return demonstration.Demonstration(exchanges=GIVEN, source="mine"), c.train

    sources = [*demonstration.SOURCES[:2], passes, mine, *demonstration.SOURCES[2:]]
    assert (await settled(sources, shipped=SHIPPED)).source == "mine"  # before the task set's
    assert (await settled(sources, given=GIVEN)).source == "file" and asked == [SHIPPED]  # after the user's
    assert (await settled([passes])).source == "generic"  # none answers


def test_bad_demonstration_file_and_unbuildable_checks_stop_train_with_one_line(tmp_path, monkeypatch, capsys):
    def train(*args: str) -> tuple[int, str]:
        """`mcprl train` on the calculator, in this process (an interpreter of its own costs ~10 s of imports)."""
        code, _, err = run_cli(monkeypatch, capsys, "train", "--server", "python -m mcprl.servers.calculator", *args)
        return code, err

    monkeypatch.setenv("MCPRL_HOME", str(tmp_path / "home"))
    (tmp_path / "ex.json").write_text('{"role": "user", "content": "hi"}')
    code, err = train("--tasks", "calculator", "-n", "6", "--demonstration-file", str(tmp_path / "ex.json"))
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert "--demonstration-file" in err and "expected a non-empty JSON list" in err

    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "\n".join(
            json.dumps({"id": f"q{i}", "task": f"What is {i} + 1?", "check": check})
            for i, check in enumerate(
                [
                    {"kind": "normalized", "value": "1"},
                    {"kind": "python", "function": "no_such_module:check"},
                    {"kind": "exact", "value": "3"},
                ]
            )
        )
    )
    code, err = train("--scenarios", str(bad), "--name", "bad")
    assert code == 2 and "Traceback" not in err, err[-2000:]
    assert str(bad) in err and "scenario q1" in err and "cannot load check function" in err
