import sys
import time
import types

import pytest
from fake_llm import FakeLLM, Reply

from mcprl.errors import UserError
from mcprl.llm import LLMError, complete, extract_json

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


@pytest.mark.anyio
async def test_json_schema_goes_into_the_system_prompt():
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    with FakeLLM(['{"x": 1}']) as llm:
        await complete("openai/m", MSGS, api_base=llm.base_url, api_key="k", json_schema=schema)
    system = llm.requests[0]["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("be brief")
    assert '"x":{"type":"integer"}' in system["content"]
    # a self-hosted model litellm knows nothing about gets no response_format it may reject
    assert "response_format" not in llm.requests[0]


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

        def local_endpoint(model_spec: str = "smollm2-135m") -> str:
            asked.append(model_spec)
            return llm.base_url

        fake_module = types.ModuleType("mcprl.serving.local")
        fake_module.local_endpoint = local_endpoint
        monkeypatch.setitem(sys.modules, "mcprl.serving.local", fake_module)
        reply = await complete("local", MSGS)
        await complete("local/qwen2.5-0.5b", MSGS)
    assert reply.text == "from local"
    assert asked == ["smollm2-135m", "qwen2.5-0.5b"]
    assert [r["model"] for r in llm.requests] == ["smollm2-135m", "qwen2.5-0.5b"]


def test_extract_json_finds_the_value_inside_prose_and_fences():
    assert extract_json('Sure! Here it is:\n```json\n{"a": [1, 2]}\n```\nHope that helps.') == {"a": [1, 2]}
    assert extract_json("items: [1, 2] and {\"b\": 1}") == [1, 2]
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
