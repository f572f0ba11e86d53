import sys
import time
import types

import pytest
from pydantic import BaseModel, Field

from mcprl.errors import UserError
from mcprl.llm import GenerationFailed, LLMError, complete, complete_json, extract_json
from tests.fake_llm import FakeLLM, Reply

pytestmark = pytest.mark.unit

MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


@pytest.mark.anyio
async def test_reply_carries_text_usage_and_zero_cost_for_unpriced_models():
    with FakeLLM([Reply("hello", prompt_tokens=30, completion_tokens=4)]) as llm:
        reply = await complete("openai/my-model", MSGS, api_base=llm.base_url, api_key="k")
    assert reply.text == "hello"
    assert (reply.prompt_tokens, reply.completion_tokens, reply.cost_usd, reply.attempts) == (30, 4, 0.0, 1)
    assert reply.latency_s > 0
    assert llm.requests[0]["model"] == "my-model"
    assert llm.requests[0]["messages"] == MSGS


@pytest.mark.anyio
async def test_bare_model_name_with_api_base_is_sent_as_openai_compatible():
    with FakeLLM(["ok"]) as llm:
        await complete("Qwen/Qwen2.5-0.5B-Instruct", MSGS, api_base=llm.base_url)
    assert llm.requests[0]["model"] == "Qwen/Qwen2.5-0.5B-Instruct"


SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


@pytest.mark.anyio
async def test_an_api_base_server_gets_response_format_and_the_schema_in_the_prompt():
    with FakeLLM(['{"x": 1}']) as llm:
        await complete("openai/m", MSGS, api_base=llm.base_url, api_key="k", json_schema=SCHEMA)
    (request,) = llm.requests
    assert request["response_format"] == {"type": "json_schema", "json_schema": {"name": "reply", "schema": SCHEMA}}
    system = request["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("be brief")
    assert '"x":{"type":"integer"}' in system["content"]


@pytest.mark.anyio
async def test_a_server_that_rejects_response_format_is_asked_again_without_it_and_remembered():
    with FakeLLM(['{"x": 1}', '{"x": 2}', "plain"], response_format=False) as llm:
        first = await complete(
            "openai/no-structured", MSGS, api_base=llm.base_url, api_key="k", json_schema=SCHEMA, num_retries=0
        )
        second = await complete(
            "openai/no-structured", MSGS, api_base=llm.base_url, api_key="k", json_schema=SCHEMA, num_retries=0
        )
        await complete("openai/no-structured", MSGS, api_base=llm.base_url, api_key="k", num_retries=0)
    assert (first.text, first.attempts, second.text) == ('{"x": 1}', 1, '{"x": 2}')
    assert ["response_format" in r for r in llm.requests] == [True, False, False, False]
    assert all('"x":{"type":"integer"}' in r["messages"][0]["content"] for r in llm.requests[:3])
    assert llm.requests[3]["messages"] == MSGS


@pytest.mark.anyio
async def test_a_provider_without_schema_support_gets_no_response_format(monkeypatch):
    # no api_base: litellm's own OpenAI route, pointed at the fake by the SDK's environment
    with FakeLLM(['{"x": 1}', '{"x": 1}']) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        await complete("openai/gpt-4", MSGS, json_schema=SCHEMA)  # litellm: no response schema support
        await complete("openai/gpt-4.1", MSGS, json_schema=SCHEMA)  # litellm: supported
    assert ["response_format" in r for r in llm.requests] == [False, True]


@pytest.mark.anyio
async def test_http_500_is_retried_then_succeeds():
    with FakeLLM([Reply(status=500), "recovered"]) as llm:
        reply = await complete("openai/m", MSGS, api_base=llm.base_url, api_key="k", num_retries=1, retry_backoff_s=0)
    assert reply.text == "recovered" and reply.attempts == 2
    assert len(llm.requests) == 2


@pytest.mark.anyio
async def test_http_500_after_all_retries_is_an_llm_error():
    with FakeLLM([Reply(status=500)] * 3) as llm, pytest.raises(LLMError, match="after 3 attempt"):
        await complete("openai/m", MSGS, api_base=llm.base_url, api_key="k", num_retries=2, retry_backoff_s=0)
    assert len(llm.requests) == 3


@pytest.mark.anyio
async def test_a_hanging_server_times_out():
    with FakeLLM([Reply("late", delay_s=30)]) as llm:
        start = time.monotonic()
        with pytest.raises(LLMError, match="Timeout"):
            await complete("openai/m", MSGS, api_base=llm.base_url, api_key="k", timeout=0.5, num_retries=0)
    assert time.monotonic() - start < 5


@pytest.mark.anyio
async def test_unknown_model_is_a_user_error_without_retries():
    with FakeLLM([Reply(status=404)] * 3) as llm, pytest.raises(UserError, match="check the model name"):
        await complete("openai/nope", MSGS, api_base=llm.base_url, api_key="k", num_retries=2, retry_backoff_s=0)
    assert len(llm.requests) == 1


@pytest.mark.anyio
async def test_local_model_resolves_to_our_endpoint(monkeypatch):
    with FakeLLM(["from local", "from spec"]) as llm:
        asked: list[str] = []

        def local_endpoint(model_spec: str = "smollm2-135m") -> tuple[str, str]:
            asked.append(model_spec)
            return llm.base_url, "key"

        fake_module = types.ModuleType("mcprl.serving.local")
        fake_module.local_endpoint = local_endpoint
        monkeypatch.setitem(sys.modules, "mcprl.serving.local", fake_module)
        reply = await complete("local", MSGS)
        await complete("local/qwen2.5-0.5b", MSGS, json_schema=SCHEMA)
    assert reply.text == "from local"
    assert asked == ["smollm2-135m", "qwen2.5-0.5b"]
    assert [r["model"] for r in llm.requests] == ["smollm2-135m", "qwen2.5-0.5b"]
    assert "response_format" not in llm.requests[0]
    # our endpoint enforces the schema by grammar: strict, and no copy of it in the prompt
    assert llm.requests[1]["response_format"]["json_schema"] == {"name": "reply", "schema": SCHEMA, "strict": True}
    assert llm.requests[1]["messages"] == MSGS


def test_extract_json_finds_the_value_inside_prose_and_fences():
    assert extract_json('Sure! Here it is:\n```json\n{"a": [1, 2]}\n```\nHope that helps.') == {"a": [1, 2]}
    assert extract_json('items: [1, 2] and {"b": 1}') == [1, 2]
    assert extract_json('{bad} then {"ok": true}') == {"ok": True}


def test_extract_json_rejects_truncated_output():
    with pytest.raises(ValueError, match="no complete JSON"):
        extract_json('{"scores": [{"trajectory_id": "1", "score": 0.')


@pytest.mark.anyio
async def test_known_models_get_response_format_and_a_cost():
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    with FakeLLM([Reply('{"x": 1}', prompt_tokens=1_000_000, completion_tokens=0)]) as llm:
        reply = await complete("openai/gpt-4.1", MSGS, api_base=llm.base_url, api_key="k", json_schema=schema)
    assert llm.requests[0]["response_format"]["json_schema"]["schema"] == schema
    assert '"x":{"type":"integer"}' in llm.requests[0]["messages"][0]["content"], "the prompt carries it too"
    assert reply.cost_usd > 0, "litellm prices gpt-4.1 input tokens"


@pytest.mark.anyio
async def test_a_missing_provider_key_is_a_user_error_before_any_request(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="no API key; set OPENAI_API_KEY"):
        await complete("openai/gpt-4.1", MSGS, num_retries=0)


class Point(BaseModel):
    x: int = Field(ge=0)


@pytest.mark.anyio
async def test_complete_json_repairs_and_retries_where_response_format_is_not_supported():
    replies = ["Sure! x is 3", '{"x": -1}', 'Here: {"x": 3}']
    seen: list[str | None] = []
    with FakeLLM(replies, response_format=False) as llm:
        point = await complete_json(
            "openai/m",
            MSGS,
            Point,
            api_base=llm.base_url,
            api_key="k",
            attempts=3,
            seed=7,
            on_reply=lambda reply, problem: seen.append(problem),
        )
    assert point == Point(x=3)
    assert (
        seen[0].startswith("no complete JSON")
        and seen[1] == "x: Input should be greater than or equal to 0"
        and seen[2] is None
    )
    asked = [r for r in llm.requests if "response_format" not in r]
    assert [r["seed"] for r in asked] == [7, 8, 9]
    assert asked[2]["messages"][-2:] == [
        {"role": "assistant", "content": '{"x": -1}'},
        {
            "role": "user",
            "content": (
                "That reply is not usable: x: Input should be greater than or equal to 0. "
                "Answer again with only the JSON."
            ),
        },
    ]


@pytest.mark.anyio
async def test_complete_json_gives_up_after_its_attempts_with_the_last_problem():
    with FakeLLM(["no"] * 2) as llm, pytest.raises(GenerationFailed, match="no complete JSON"):
        await complete_json("openai/m", MSGS, Point, api_base=llm.base_url, api_key="k", attempts=2)
    assert (
        len(llm.requests) == 2
        and llm.requests[0]["response_format"]["json_schema"]["schema"] == Point.model_json_schema()
    )
