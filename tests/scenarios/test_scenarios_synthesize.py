import json

import pytest

from mcprl.scenarios.synthesize import TASK_CHARS, synthesize, target_difficulties
from mcprl.types import content_hash
from tests.fake_llm import FakeLLM, Reply, message_text

pytestmark = pytest.mark.unit

TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "description": f"{name} two numbers", "parameters": {"type": "object"}},
    }
    for name in ("add", "multiply", "divide")
]


def batch(*items: dict) -> str:
    return json.dumps({"scenarios": list(items)})


def item(task: str, difficulty: int = 1, tools: list[str] | None = None) -> dict:
    return {"task": task, "difficulty": difficulty, "tools": tools or ["add"]}


async def run(llm: FakeLLM, n: int, **kw):
    return await synthesize(TOOLS, n, "openai/gen", api_base=llm.base_url, api_key="k", retry_backoff_s=0, **kw)


@pytest.mark.anyio
async def test_prose_wrapped_json_with_duplicates_and_invalid_items():
    reply = (
        "Sure! Here are some tasks:\n```json\n"
        + batch(
            item("Please work out what 17 plus 25 is.", 1),
            item("Please work out what 17 plus 25 is, thanks!", 2),  # near-duplicate of the first
            item("please work out what 17 PLUS 25 is", 3),  # exact duplicate once normalised
            {"task": "Compute 3 times 9 then divide by 3.", "difficulty": 9, "tools": ["multiply"]},  # bad difficulty
            {"difficulty": 2, "tools": ["add"]},  # no task
            item("Multiply 12 by 4, then divide the result by 6.", "3", ["multiply", "divide", "frobnicate"]),
        )
        + "\n```\nLet me know if you need more."
    )
    with FakeLLM([reply]) as llm:
        result = await run(llm, 2)
    tasks = [s.task for s in result.scenarios]
    assert tasks == ["Please work out what 17 plus 25 is.", "Multiply 12 by 4, then divide the result by 6."]
    assert [s.difficulty for s in result.scenarios] == [1, 3]
    assert result.scenarios[1].tools == ["multiply", "divide"]
    report = result.report
    assert (report.produced, report.shortfall, report.duplicates, report.invalid_items, report.unknown_tool_names) == (
        2,
        0,
        2,
        2,
        1,
    )
    assert report.tool_coverage == {"add": 1, "multiply": 1, "divide": 1}
    assert report.difficulty_histogram == {1: 1, 2: 0, 3: 1, 4: 0, 5: 0}


@pytest.mark.anyio
async def test_a_draft_cut_off_at_the_schemas_length_bound_is_no_task():
    # the grammar ends a rambling draft at the schema's maxLength, mid-sentence; one shorter is a whole request
    rambling = ("Add 3 and 4, then think about how sums of numbers can be written in many bases and " * 10)[
        : TASK_CHARS[1]
    ]
    whole = "Add 3 and 4, then tell me the sum in base 2."
    with FakeLLM([batch(item(rambling)), batch(item(whole))]) as llm:
        result = await run(llm, 1)
    assert [s.task for s in result.scenarios] == [whole]
    assert result.report.invalid_items == 1


@pytest.mark.anyio
async def test_batches_target_difficulties_uncovered_tools_and_avoid_repeats():
    replies = [
        batch(item("Add 3 and 4 for me.", 1), item("What is 10 plus 32?", 2)),
        batch(item("Multiply 6 by 7.", 3, ["multiply"]), item("Divide 84 by 2.", 4, ["divide"])),
    ]
    with FakeLLM(replies) as llm:
        result = await run(llm, 4, batch_size=2, seed=1)
    assert len(result.scenarios) == 4 and len(llm.requests) == 2
    first, second = (message_text(r, "user") for r in llm.requests)
    assert "Write 2 new tasks" in first and "No task uses these tools yet" in first
    # the second call asks for the two tools the first batch left unused
    named = second.split("No task uses these tools yet; make some of the new ones need them: ")[1].split(".")[0]
    assert sorted(named.split(", ")) == ["divide", "multiply"]
    assert "- Add 3 and 4 for me." in second and "- What is 10 plus 32?" in second
    # the second batch asks for two of the three difficulties nothing has yet
    difficulties = json.loads(second.split("in order: ")[1].split(".")[0])
    assert len(difficulties) == 2 and set(difficulties) <= {3, 4, 5}


@pytest.mark.anyio
async def test_the_prompt_carries_tools_resources_prompts_hint_and_schema():
    resources = [{"uri": "file:///prices.csv", "name": "prices"}]
    prompts = [{"name": "summarize", "description": "summarize a sheet"}]
    with FakeLLM([batch(item("Add 1 and 2 please."))]) as llm:
        await run(llm, 1, resources=resources, prompts=prompts, task_hint="grocery arithmetic")
    system = message_text(llm.requests[0], "system")
    for needle in (
        '"name": "divide"',
        "file:///prices.csv",
        "summarize a sheet",
        "Focus on: grocery arithmetic",
        '"difficulty":{"enum":[',
    ):
        assert needle in system


@pytest.mark.anyio
async def test_provenance_and_stable_ids():
    with FakeLLM([batch(item("Add 1 and 2 please."))]) as llm:
        result = await run(llm, 1, seed=5)
    s = result.scenarios[0]
    assert s.id == content_hash("Add 1 and 2 please.")[:12]
    meta = s.metadata
    assert meta["generator_model"] == "openai/gen" and meta["seed"] == 5
    assert meta["tools_hash"] == content_hash(TOOLS)
    assert meta["prompt_hash"] == content_hash(
        message_text(llm.requests[0], "system").split("\n\nReply with only a JSON")[0]
    )
    assert meta["created_at"].endswith("+00:00")


@pytest.mark.anyio
async def test_a_generator_that_runs_dry_gives_what_it_has_and_reports_the_shortfall():
    good = batch(item("Add 3 and 4 for me."))
    replies = [good, "I'd rather not.", batch(item("add 3 and 4 for me")), batch({"task": "x"})]
    with FakeLLM(replies) as llm:
        result = await run(llm, 5, max_attempts=3)
    assert [s.task for s in result.scenarios] == ["Add 3 and 4 for me."]
    report = result.report
    assert (report.calls, report.failed_calls, report.shortfall) == (4, 3, 4)
    assert "no complete JSON" in report.problems[0]
    assert "SHORT by 4" in report.summary() and "no scenario uses: multiply, divide" in report.summary()


@pytest.mark.anyio
async def test_http_errors_count_as_failed_calls_and_synthesis_goes_on():
    with FakeLLM(
        [Reply(status=500), batch(item("Add 3 and 4 for me."), item("Multiply 5 by 6.", 2, ["multiply"]))]
    ) as llm:
        result = await run(llm, 2, num_retries=0)
    assert len(result.scenarios) == 2
    assert result.report.failed_calls == 1 and "InternalServerError" in result.report.problems[0]


@pytest.mark.anyio
async def test_total_calls_are_bounded():
    def one_new_task_per_call(request: dict) -> str:
        return batch(item(f"Add {len(request['messages'][1]['content'])} and 7919 for me."))

    with FakeLLM(handler=one_new_task_per_call) as llm:
        result = await run(llm, 10, batch_size=5, max_calls=3)
    assert len(llm.requests) == 3 and result.report.shortfall == 7


@pytest.mark.anyio
async def test_same_seed_same_requests():
    replies = [batch(item("Add 3 and 4 for me.")), batch(item("Multiply 5 by 6.", 2, ["multiply"]))]
    runs = []
    for _ in range(2):
        with FakeLLM(replies) as llm:
            await run(llm, 2, batch_size=1, seed=4)
        runs.append(llm.requests)
    assert runs[0] == runs[1]


def test_target_difficulties_even_out_the_histogram():
    import random

    assert target_difficulties({}, 5, random.Random(0)) == [1, 2, 3, 4, 5]
    assert target_difficulties({1: 3, 2: 3, 3: 1, 4: 2, 5: 3}, 3, random.Random(0)) == [3, 3, 4]


@pytest.fixture
def local_is_fake(monkeypatch):
    """`local` resolved to a FakeLLM (our endpoint's stand-in) instead of the embedded model."""
    import sys
    import types

    def use(llm: FakeLLM) -> None:
        module = types.ModuleType("mcprl.serving.local")
        module.local_endpoint = lambda spec="smollm2-135m": (llm.base_url, "key")
        monkeypatch.setitem(sys.modules, "mcprl.serving.local", module)

    return use


@pytest.mark.anyio
async def test_the_schema_goes_as_response_format_with_the_tools_as_an_enum():
    with FakeLLM([batch(item("Add 3 and 4 for me."), item("Multiply 5 by 6.", 2, ["multiply"]))]) as llm:
        await run(llm, 2, batch_size=2)
    schema = llm.requests[0]["response_format"]["json_schema"]["schema"]
    scenarios = schema["properties"]["scenarios"]
    assert scenarios["maxItems"] == 2
    item_schema = scenarios["items"]
    assert item_schema["properties"]["tools"]["items"] == {"enum": ["add", "multiply", "divide"]}
    asked = json.loads(message_text(llm.requests[0], "user").split("in order: ")[1].split(".")[0])
    assert item_schema["properties"]["difficulty"] == {
        "enum": sorted(set(asked))
    }  # the grammar picks among those asked for
    assert item_schema["properties"]["task"]["maxLength"] > item_schema["properties"]["task"]["minLength"] >= 8


@pytest.mark.anyio
async def test_local_asks_one_task_per_call_each_for_other_tools_and_difficulties(local_is_fake):
    def one_task(request: dict) -> str:
        user = message_text(request, "user")
        tool = (
            user.split("need them: ")[1].split(".")[0]
            if "need them: " in user
            else user.split("these tools: ")[1].split(".")[0]
        )
        difficulty = json.loads(user.split("in order: ")[1].split(".")[0])[0]
        return batch(item(f"Please use {tool} on {len(llm.requests)} and 7.", difficulty, [tool]))

    lines: list[str] = []
    with FakeLLM(handler=one_task) as llm:
        local_is_fake(llm)
        result = await synthesize(TOOLS, 4, "local", seed=3, say=lines.append)
    assert len(result.scenarios) == 4 and len(llm.requests) == 4
    for request in llm.requests:
        assert request["response_format"]["json_schema"]["strict"] is True
        assert request["response_format"]["json_schema"]["schema"]["properties"]["scenarios"]["maxItems"] == 1
        assert "Reply with only a JSON" not in message_text(request, "system")  # the grammar holds the schema
    assert {s.tools[0] for s in result.scenarios[:3]} == {"add", "multiply", "divide"}  # each tool before any twice
    assert len({s.difficulty for s in result.scenarios}) == 4  # each call asked for a difficulty not seen yet
    assert [line.split(",")[0] for line in lines] == [f"generator call {i}: +1" for i in range(1, 5)]
    assert lines[-1].startswith("generator call 4: +1, 4/4 scenarios, ")


@pytest.mark.anyio
async def test_a_generator_giving_nothing_usable_stops_after_max_attempts_with_the_fix():
    replies = [batch(item("Add 3 and 4 for me.")), "nope", batch(item("Add 3 and 4 for me.")), "{}", "no"]
    with FakeLLM(replies) as llm:
        result = await run(llm, 5, max_attempts=4)
    report = result.report
    assert report.gave_up and len(llm.requests) == 5 and report.produced == 1
    message = report.failure("openai/gen", "--model")
    assert "\n" not in message
    assert message.startswith(
        "openai/gen wrote 1 of the 5 scenarios asked for: 4 of 5 generator calls in a row added no new valid task"
    )
    assert "(last problem: call 5: no complete JSON" in message
    assert message.endswith(
        "use a stronger model (--model openai/gpt-4.1 with OPENAI_API_KEY set, or --model NAME --api-base URL of a "
        "vLLM server)"
    )
