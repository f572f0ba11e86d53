"""Structured outputs on the real SmolLM2-135M with real MCP tools' inputSchemas (tests/data/
mcp_tool_schemas.json, dumped from the servers by tests/data/dump_mcp_tool_schemas.py): every
schema there compiles, and the model's arguments for a sample of them (nested objects, arrays,
enums, optional fields, $defs/$ref, anyOf, oneOf, formats, bounds) validate against the tool's
inputSchema. Batched through the engine, bounded tokens."""

import json
from pathlib import Path

import anyio
import jsonschema
import pytest

from mcprl.serving.engine import Engine
from mcprl.serving.protocol import ChatRequest, ResponseFormat

pytestmark = pytest.mark.integration

SCHEMAS = json.loads((Path(__file__).resolve().parents[1] / "data" / "mcp_tool_schemas.json").read_text())["schemas"]
REPO_SERVERS = ("calculator/", "inventory/", "email/")
SYNTHETIC = "pydantic-nested/"  # a tool made up for the file (its schema is still the SDK's)
# One batch (the engine's 32 rows) of tools of all 23 servers: all 230 would take ~8x as long.
SAMPLE = (
    "calculator/add",
    "inventory/update_stock",
    "email/search_emails",
    "filesystem/edit_file",  # array of objects, optional boolean with a default
    "filesystem/read_multiple_files",  # minItems
    "filesystem/list_directory_with_sizes",  # enum, optional
    "memory/create_entities",
    "memory/create_relations",  # arrays of objects holding arrays
    "everything/get-annotated-message",  # enum
    "sequential-thinking/sequentialthinking",  # "$ref": "#/properties/...", a type list, minimum
    "github/create_pull_request_review",  # anyOf of two objects inside an array, enum
    "github/push_files",
    "github/list_issues",
    "gitlab/create_merge_request",
    "slack/slack_get_channel_history",
    "puppeteer/puppeteer_screenshot",
    "brave-search/brave_web_search",
    "google-maps/maps_distance_matrix",  # arrays, enum
    "notion/API-move-page",  # $defs, $ref, anyOf, oneOf, const, format: uuid
    "notion/API-create-a-comment",  # anyOf of objects and strings, additionalProperties: true
    "playwright/browser_fill_form",  # draft 2020-12, array of objects with enums
    "playwright/browser_emulate_media",  # anyOf [enum, null]
    "context7/query-docs",
    "fetch/fetch",  # format: uri, bounds
    "git/git_log",
    "git/git_create_branch",  # Optional (anyOf null) with a default
    "time/convert_time",
    "excel/sort_range",  # pydantic $defs/$ref, min/maxItems
    "excel/write_range",  # arrays of arrays of anyOf scalars and null
    "duckduckgo/fetch_content",
    "sqlite/create_table",
    "pydantic-nested/schedule_meeting",  # format: email and date-time, Optional, nested models
)


@pytest.fixture(scope="module")
def engine(smollm2_dir):
    return Engine(str(smollm2_dir), served_name="smol", max_batch_rows=32, batch_window_s=0.5)


def call_request(tool: str, schema: dict) -> ChatRequest:
    name = tool.split("/")[1]
    return ChatRequest.model_validate(
        {
            "model": "smol",
            "max_tokens": 256,
            "temperature": 0.7,
            "seed": 0,
            "messages": [
                {"role": "system", "content": "Write the arguments of a tool call as JSON."},
                {"role": "user", "content": f"Call the tool {name} with plausible arguments."},
            ],
            "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}},
        }
    )


def chat_all(engine, requests: dict[str, ChatRequest]) -> dict[str, dict]:
    """The engine's answers to `requests`, sent at once so that they share batches."""
    results: dict[str, dict] = {}

    async def ask_all():
        async with anyio.create_task_group() as tg:
            tg.start_soon(engine.run_batcher)
            async with anyio.create_task_group() as pending:
                for key, req in requests.items():

                    async def one(key=key, req=req):
                        results[key] = await engine.chat(req)

                    pending.start_soon(one)
            tg.cancel_scope.cancel()

    anyio.run(ask_all)
    return results


def test_every_dumped_schema_compiles(engine):
    """No real tool's schema is a 400: each passes the meta-schema check and compiles to a grammar."""
    for tool, schema in SCHEMAS.items():
        assert (
            engine.grammars.compile(
                ResponseFormat.model_validate(
                    {"type": "json_schema", "json_schema": {"name": tool.split("/")[1], "schema": schema}}
                )
            )
            is not None
        ), tool


def test_real_mcp_tool_arguments_validate(engine):
    assert len([t for t in SAMPLE if not t.startswith((*REPO_SERVERS, SYNTHETIC))]) >= 20
    for keyword in ("$defs", "$ref", "anyOf", "oneOf", "enum", "items", "format", "minimum"):
        assert any(f'"{keyword}"' in json.dumps(SCHEMAS[t]) for t in SAMPLE), keyword
    results = chat_all(engine, {tool: call_request(tool, SCHEMAS[tool]) for tool in SAMPLE})
    assert set(results) == set(SAMPLE)
    # The grammar guarantees the syntax, not that the model ever stops: a 135M model at
    # temperature 0.7 sometimes repeats inside a string or an unbounded array until the budget
    # ends ("length"). Every answer that ended must validate, and at least 20 real tools (public
    # servers' or this repo's) must get one.
    ran_on = {
        tool: b["choices"][0]["message"]["content"][-80:]
        for tool, b in results.items()
        if b["choices"][0]["finish_reason"] == "length"
    }
    for tool, body in results.items():
        if tool not in ran_on:
            jsonschema.validate(json.loads(body["choices"][0]["message"]["content"]), SCHEMAS[tool])
    print(f"{len(results) - len(ran_on)} of {len(results)} answers ended, all valid; ran to the budget: {ran_on}")
    assert len([t for t in results if t not in ran_on and not t.startswith(SYNTHETIC)]) >= 20, ran_on


def test_json_object_is_a_json_object(engine):
    req = ChatRequest.model_validate(
        {
            "model": "smol",
            "max_tokens": 96,
            "seed": 1,
            "n": 2,
            "messages": [{"role": "user", "content": "Describe a cat as a JSON object with name and age."}],
            "response_format": {"type": "json_object"},
        }
    )

    for choice in chat_all(engine, {"cat": req})["cat"]["choices"]:
        assert choice["finish_reason"] == "stop"
        assert isinstance(json.loads(choice["message"]["content"]), dict)


def test_every_dumped_server_compiles_as_a_tool_call_grammar(engine):
    from mcprl.model.chat_format import tool_call_format

    servers: dict[str, list[dict]] = {}
    for tool, schema in SCHEMAS.items():
        server, name = tool.split("/")
        servers.setdefault(server, []).append({"type": "function", "function": {"name": name, "parameters": schema}})
    for server, tools in servers.items():
        assert engine.grammars.compile(ResponseFormat.model_validate(tool_call_format(tools))) is not None, server


def test_constrained_tool_calls_of_real_servers_validate(engine):
    """The real model, offered all of a real server's tools under `tool_call_format` (after a one-shot
    demonstration, as in a rollout): every call it completes names an offered tool and its arguments
    validate against that tool's inputSchema."""
    from mcprl.model.chat_format import tool_call_format
    from mcprl.rollout.loop import example_arguments

    servers = ("filesystem", "memory", "github", "notion")  # arrays of objects, enums, anyOf, $defs/$ref

    def request(server: str) -> ChatRequest:
        tools = [
            {"type": "function", "function": {"name": t.split("/")[1], "parameters": s}}
            for t, s in SCHEMAS.items()
            if t.startswith(server + "/")
        ]
        first = tools[0]["function"]
        demo_call = {
            "id": "call_demo",
            "type": "function",
            "function": {"name": first["name"], "arguments": json.dumps(example_arguments(first["parameters"]))},
        }
        return ChatRequest.model_validate(
            {
                "model": "smol",
                "max_tokens": 128,
                "temperature": 0.7,
                "seed": 3,
                "n": 2,
                "tools": tools,
                "response_format": tool_call_format(tools),
                "messages": [
                    {"role": "user", "content": f"Use the {server} tools."},
                    {"role": "assistant", "content": "", "tool_calls": [demo_call]},
                    {"role": "user", "content": f"Now do something else with the {server} tools."},
                ],
            }
        )

    results = chat_all(engine, {server: request(server) for server in servers})
    calls = 0
    for server, body in results.items():
        for choice in body["choices"]:
            assert "tool_call_error" not in choice or choice["finish_reason"] == "length", (
                choice
            )  # only a cut-off call fails to parse
            for tc in choice["message"].get("tool_calls") or []:
                tool = f"{server}/{tc['function']['name']}"
                assert tool in SCHEMAS, tool
                jsonschema.validate(json.loads(tc["function"]["arguments"]), SCHEMAS[tool])
                calls += 1
    print(f"{calls} tool calls in {sum(len(b['choices']) for b in results.values())} replies, all valid")
    assert calls >= 3
