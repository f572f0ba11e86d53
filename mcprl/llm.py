"""The one place mcprl calls an LLM for generation and judging (scenario synthesis, RULER).

Everything goes through litellm, so any provider works: `openai/gpt-4.1`, `anthropic/...`,
or any OpenAI-compatible server with `api_base` (vLLM, ours). The model name `local`
(or `local/<spec>`) is our own in-process endpoint serving the base policy model.

litellm is imported lazily (it costs seconds), with `LITELLM_LOCAL_MODEL_COST_MAP` set so
that importing it never reaches for the network.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import anyio
from pydantic import BaseModel

from mcprl.errors import UserError
from mcprl.types import Message

LOCAL_MODEL = "local"
DEFAULT_LOCAL_SPEC = "smollm2-135m"


class LLMReply(BaseModel):
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0  # wall time of the call, retries included
    finish_reason: str = "stop"  # "length" means the text was cut at max_tokens
    attempts: int = 1  # HTTP attempts made (1 = no retry)


class LLMError(Exception):
    """A call that failed after its retries (HTTP 5xx, timeout, connection refused, bad request)."""


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


async def resolve_model(model: str, api_base: str | None, api_key: str | None) -> tuple[str, str | None, str | None]:
    """Map a user's model string to litellm's (model, api_base, api_key).

    `local[/spec]` starts (once per process) our endpoint for the base policy model. A bare
    name with `api_base` (e.g. `Qwen/Qwen2.5-7B` on vLLM) is sent as an OpenAI-compatible model.
    """
    if model == LOCAL_MODEL or model.startswith(LOCAL_MODEL + "/"):
        from mcprl.serving.local import local_endpoint

        spec = model.partition("/")[2] or DEFAULT_LOCAL_SPEC
        url = await anyio.to_thread.run_sync(local_endpoint, spec)
        return f"openai/{spec}", url, "local"
    if api_base is None:
        return model, None, api_key
    providers = {str(getattr(p, "value", p)) for p in _litellm().provider_list}
    if model.split("/", 1)[0] not in providers:
        model = f"openai/{model}"
    if api_key is None and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        api_key = "none"  # self-hosted servers usually accept any key, but the client insists on one
    return model, api_base, api_key


def with_schema_instruction(messages: list[Message], json_schema: dict[str, Any]) -> list[Message]:
    """Append the schema to the system prompt (inserting one if needed): small and local models
    ignore `response_format`, and every model does better when told the shape in words too."""
    instruction = (
        "Reply with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n"
        + json.dumps(json_schema, separators=(",", ":"))
    )
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0], content=f"{messages[0].get('content') or ''}\n\n{instruction}")
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def extract_json(text: str) -> Any:
    """The first JSON object or array in `text`, tolerating prose and code fences around it.

    Raises ValueError when there is none (e.g. the reply was truncated mid-object)."""
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                continue
            return value
    raise ValueError(f"no complete JSON object or array in the reply ({len(text)} chars: {text[:80]!r}...)")


async def complete(
    model: str,
    messages: list[Message],
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    json_schema: dict[str, Any] | None = None,
    temperature: float = 0.0,
    max_tokens: int = 2048,
    timeout: float = 120.0,
    num_retries: int = 2,
    retry_backoff_s: float = 1.0,
    seed: int | None = None,
) -> LLMReply:
    """One chat completion. Transient failures (HTTP 429/5xx, timeouts, refused connections)
    are retried `num_retries` times with exponential backoff, then raise LLMError; a bad key
    or unknown model raises UserError at once (retrying cannot fix them)."""
    litellm = _litellm()
    import openai  # litellm's exceptions subclass the OpenAI SDK's, whichever the provider

    llm_model, api_base, api_key = await resolve_model(model, api_base, api_key)
    if api_key is None:
        env = litellm.validate_environment(model=llm_model, api_base=api_base)
        if missing := [k for k in env.get("missing_keys", []) if k.endswith("_API_KEY")]:
            raise UserError(f"{model}: no API key; set {' or '.join(missing)} (or point --api-base at a server that needs none)")
    kwargs: dict[str, Any] = {
        "model": llm_model,
        "messages": with_schema_instruction(messages, json_schema) if json_schema else messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "timeout": timeout,
        "num_retries": 0,  # retries happen below, where they are counted and backed off
        "max_retries": 0,
        "drop_params": True,  # a provider without e.g. `seed` drops it instead of failing
    }
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
    if seed is not None:
        kwargs["seed"] = seed
    if json_schema and litellm.supports_response_schema(model=llm_model):
        kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema}}

    start = time.monotonic()
    for attempt in range(1, num_retries + 2):
        try:
            response = await litellm.acompletion(**kwargs)
            break
        except openai.OpenAIError as e:
            status = getattr(e, "status_code", None)
            if status in (401, 403, 404):
                raise UserError(f"{model}: {_first_line(e)}; check the model name, --api-base and the API key") from None
            transient = isinstance(e, openai.APIConnectionError) or status in (408, 429) or (status or 0) >= 500
            if not transient or attempt > num_retries:
                raise LLMError(f"{model}: {type(e).__name__} after {attempt} attempt(s): {_first_line(e)}") from None
            await anyio.sleep(retry_backoff_s * 2 ** (attempt - 1))

    if not response.choices:
        raise LLMError(f"{model}: the reply has no choices")
    choice = response.choices[0]
    usage = getattr(response, "usage", None)
    try:
        cost = float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # litellm raises for models it has no price for (local, self-hosted)
        cost = 0.0
    return LLMReply(
        text=choice.message.content or "",
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        cost_usd=cost,
        latency_s=time.monotonic() - start,
        finish_reason=choice.finish_reason or "stop",
        attempts=attempt,
    )


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]
