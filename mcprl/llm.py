"""The one place mcprl calls an LLM for generation and judging (scenario synthesis, RULER).

Everything goes through litellm, so any provider works: `openai/gpt-4.1`, `anthropic/...`,
or any OpenAI-compatible server with `api_base` (vLLM, ours). The model name `local`
(or `local/<spec>`) is our own in-process endpoint serving the base policy model.

JSON is asked for with OpenAI's `response_format` (a JSON schema) wherever the target takes it:
our endpoint and vLLM enforce it by grammar-constrained decoding, which is what lets the
embedded 135M model answer at all. Other `api_base` servers get it too, and once one answers
HTTP 400 naming it, that server is asked without it from then on; litellm providers get it
when `litellm.supports_response_schema` says so. Without it the schema goes into the prompt
and the caller's extract-and-retry (`complete_json`) does the rest.

litellm is imported lazily (it costs seconds), with `LITELLM_LOCAL_MODEL_COST_MAP` set so
that importing it never reaches for the network.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import openai
from pydantic import BaseModel, ValidationError

from mcprl.errors import UserError, first_problem
from mcprl.types import Message

LOCAL_MODEL = "local"
DEFAULT_LOCAL_SPEC = "smollm2-135m"
T = TypeVar("T")

# (litellm model, api_base) of OpenAI-compatible servers that answered 400 to response_format.
_NO_RESPONSE_FORMAT: set[tuple[str, str | None]] = set()


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


class GenerationFailed(Exception):
    """`complete_json` got no usable reply in its attempts; the message is the last problem seen."""


def is_local(model: str) -> bool:
    return model == LOCAL_MODEL or model.startswith(LOCAL_MODEL + "/")


def stronger_model_fix(flag: str) -> str:
    """The one-line fix for a generator or judge that cannot give usable JSON."""
    return (
        f"use a stronger model ({flag} openai/gpt-4.1 with OPENAI_API_KEY set, "
        f"or {flag} NAME --api-base URL of a vLLM server)"
    )


def _litellm() -> Any:
    # Lazy: seconds to import, and needed only once a model is called (module docstring)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    # its own bookkeeping's warnings ("LoggingWorker: event loop changed", each new event loop a
    # command runs) are noise on a command's stderr, which says what went wrong in one line
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    return litellm


async def resolve_model(model: str, api_base: str | None, api_key: str | None) -> tuple[str, str | None, str | None]:
    """Map a user's model string to litellm's (model, api_base, api_key).

    `local[/spec]` starts (once per process) our endpoint for the base policy model. A bare
    name with `api_base` (e.g. `Qwen/Qwen2.5-7B` on vLLM) is sent as an OpenAI-compatible model.
    """
    if is_local(model):
        # Lazy: our in-process endpoint (torch, PEFT: seconds to import) only for `local`
        from mcprl.serving.local import local_endpoint

        spec = model.partition("/")[2] or DEFAULT_LOCAL_SPEC
        url, key = await anyio.to_thread.run_sync(local_endpoint, spec)
        return f"openai/{spec}", url, key
    if api_base is None:
        return model, None, api_key
    providers = {str(getattr(p, "value", p)) for p in _litellm().provider_list}
    if model.split("/", 1)[0] not in providers:
        model = f"openai/{model}"
    if api_key is None and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        api_key = "none"  # self-hosted servers usually accept any key, but the client insists on one
    return model, api_base, api_key


def with_schema_instruction(messages: list[Message], json_schema: dict[str, Any]) -> list[Message]:
    """Append the schema to the system prompt (inserting one if needed): a model without
    enforced `response_format` needs it, and a strong one does better when told the shape in
    words too."""
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

    llm_model, api_base, api_key = await resolve_model(model, api_base, api_key)
    if api_key is None:
        env = litellm.validate_environment(model=llm_model, api_base=api_base)
        if missing := [k for k in env.get("missing_keys", []) if k.endswith("_API_KEY")]:
            raise UserError(
                f"{model}: no API key; set {' or '.join(missing)} (or point --api-base at a server that needs none)"
            )
    # Our endpoint enforces strict schemas by grammar (and the prompt then needs no copy of it).
    local = is_local(model)
    send_format = bool(json_schema) and (
        local
        or (llm_model, api_base) not in _NO_RESPONSE_FORMAT
        and (api_base is not None or litellm.supports_response_schema(model=llm_model))
    )
    kwargs: dict[str, Any] = {
        "model": llm_model,
        "messages": with_schema_instruction(messages, json_schema)
        if json_schema and not (send_format and local)
        else messages,
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
    if send_format:
        assert json_schema is not None
        spec: dict[str, Any] = {"name": "reply", "schema": json_schema} | ({"strict": True} if local else {})
        kwargs["response_format"] = {"type": "json_schema", "json_schema": spec}

    start = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            response = await litellm.acompletion(**kwargs)
            break
        except openai.OpenAIError as e:  # litellm's exceptions subclass the OpenAI SDK's, whichever the provider
            status = getattr(e, "status_code", None)
            if status in (400, 422) and not local and "response_format" in kwargs and _names_response_format(e):
                # A server without structured outputs: ask again (not counted) with the schema in
                # the prompt, and never send it response_format again.
                _NO_RESPONSE_FORMAT.add((llm_model, api_base))
                del kwargs["response_format"]
                kwargs["messages"] = with_schema_instruction(messages, json_schema or {})
                attempt -= 1
                continue
            if status in (401, 403, 404):
                raise UserError(
                    f"{model}: {_first_line(e)}; check the model name, --api-base and the API key"
                ) from None
            transient = isinstance(e, openai.APIConnectionError) or status in (408, 429) or (status or 0) >= 500
            # Our endpoint timing out is its CPU being too slow: asking again only waits again.
            transient = transient and not (local and isinstance(e, openai.APITimeoutError))
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


def _names_response_format(e: BaseException) -> bool:
    text = str(e).lower()
    return "response_format" in text or "json_schema" in text or "response format" in text


async def complete_json(
    model: str,
    messages: list[Message],
    schema: dict[str, Any] | type[BaseModel],
    parse: Callable[[Any], T] | None = None,
    *,
    attempts: int = 3,
    on_reply: Callable[[LLMReply, str | None], None] | None = None,
    seed: int = 0,
    **options: Any,
) -> T:
    """`parse` of the JSON in the reply to `messages`, asked for with `schema` (a JSON schema, or
    a pydantic model whose schema is sent and whose validation is the default `parse`).

    A reply `parse` rejects (ValueError, ValidationError) is shown back with the problem and asked
    again, `attempts` times in all, each with its own seed; an LLM call failing after its own
    retries ends it at once. `on_reply(reply, problem)` sees each reply (problem None when it
    was usable). `options` go to `complete`. Raises GenerationFailed with the last problem."""
    if isinstance(schema, dict):
        json_schema = schema
        if parse is None:
            raise TypeError("complete_json needs `parse` when `schema` is a JSON schema")
    else:
        json_schema, parse = schema.model_json_schema(), parse or schema.model_validate  # type: ignore[assignment]
    assert parse is not None
    asked, problem = messages, ""
    for attempt in range(attempts):
        try:
            reply = await complete(model, messages, json_schema=json_schema, seed=seed + attempt, **options)
        except LLMError as e:
            raise GenerationFailed(str(e)) from None
        try:
            value = parse(extract_json(reply.text))
        except ValidationError as e:
            problem = first_problem(e, whole="reply")
        except ValueError as e:
            problem = str(e)
        else:
            if on_reply:
                on_reply(reply, None)
            return value
        if reply.finish_reason == "length":
            problem += f" (the reply was cut off at {options.get('max_tokens', 2048)} tokens)"
        if on_reply:
            on_reply(reply, problem)
        messages = [
            *asked,
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": f"That reply is not usable: {problem}. Answer again with only the JSON."},
        ]
    raise GenerationFailed(problem)
