"""LangChain / LangGraph agents as rollouts that train exactly like the plain loop's.

    llm = init_chat_model(model)               # ChatOpenAI at the policy endpoint, recording
    rollout = wrap_rollout(model, my_graph_fn)  # (scenario) -> Trajectory
    traj = await rollout(scenario)

`init_chat_model` returns a ChatOpenAI whose HTTP clients read every chat completion's raw
request and response (messages, tools, prompt/completion token ids, logprobs) and append it to
the Trajectory of the rollout running in the current context (a `contextvars.ContextVar`, so
concurrent rollouts in one event loop, and threads LangGraph starts for sync nodes, each record
only their own calls). Calls made outside `wrap_rollout` are not recorded.

The trajectory's `messages` are the last request's messages exactly as sent plus its reply;
each Generation's `message_index` points at its assistant message there. Create the chat model
per rollout (or after each training step): the served name changes with every step.
"""

from __future__ import annotations

import contextvars
import functools
import json
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcprl.errors import UserError
from mcprl.rollout import missing_prompt_tokens
from mcprl.serving.prompts import message_key
from mcprl.types import Generation, Message, Scenario, Trajectory

if TYPE_CHECKING:
    import ssl

    import httpx
    from langchain_core.tools import BaseTool
    from langchain_openai import ChatOpenAI

    from mcprl.model import Model
    from mcprl.tools import ToolOutcome, ToolPool, ToolSession, ToolSet

__all__ = ["create_mcp_agent", "init_chat_model", "mcp_tools", "wrap_rollout"]

_DROPPED_REPLY_KEYS = ("refusal", "annotations", "audio", "function_call")


class _Recorder:
    """The current rollout's trajectory, fed by the HTTP hooks and the MCP tools."""

    def __init__(self, traj: Trajectory) -> None:
        self.traj = traj
        # per Generation: how many messages its request had, and its reply's key
        self.turns: list[tuple[Generation, int, str]] = []
        self.lock = threading.Lock()

    def completion(self, endpoint: str, request: dict[str, Any], body: dict[str, Any]) -> None:
        messages: list[Message] = request.get("messages") or []
        choice = body["choices"][0]
        reply = {k: v for k, v in choice["message"].items() if v is not None and k not in _DROPPED_REPLY_KEYS}
        reply.setdefault("content", "")
        with self.lock:
            traj, m = self.traj, self.traj.metrics
            traj.messages = [*messages, reply]
            tools = {(t.get("function") or t).get("name"): t for t in traj.tools or []}
            for t in request.get("tools") or []:
                tools.setdefault((t.get("function") or t).get("name"), t)
            traj.tools = list(tools.values()) or None
            m["turns"] += 1
            if "token_ids" in choice and not body.get("prompt_token_ids"):
                traj.error = traj.error or missing_prompt_tokens(endpoint)
            elif "token_ids" in choice:
                gen = Generation(
                    prompt_token_ids=body["prompt_token_ids"],
                    completion_token_ids=choice["token_ids"],
                    logprobs=[t["logprob"] for t in ((choice.get("logprobs") or {}).get("content") or [])],
                    # the settings the request sampled with (absent: the OpenAI default of 1, Generation's)
                    **{k: request[k] for k in ("temperature", "top_p") if request.get(k) is not None},
                    model=body.get("model", ""), finish_reason=choice.get("finish_reason") or "stop",
                )
                traj.generations.append(gen)
                self.turns.append((gen, len(messages), message_key(reply)))
            if choice.get("tool_call_error"):
                m["invalid_tool_calls"] += 1
                traj.log(f"turn {int(m['turns'])}: unparseable tool call: {choice['tool_call_error']}")
            ended = not reply.get("tool_calls")
            m["truncated"] = float(ended and choice.get("finish_reason") == "length")
            m["finished"] = float(ended and not m["truncated"])

    def tool_outcome(self, name: str, out: ToolOutcome) -> None:
        with self.lock:
            m = self.traj.metrics
            for key in ("tool_calls", f"calls/{name}") + (("tool_errors", f"errors/{name}", f"error_kind/{out.error_kind}") if out.is_error else ()):
                m[key] = m.get(key, 0.0) + 1

    def finish(self) -> None:
        """Point every Generation at its assistant message in the final conversation."""
        msgs = self.traj.messages
        keys = {i: message_key(m) for i, m in enumerate(msgs) if m.get("role") == "assistant"}
        claimed: set[int] = set()
        for n, (gen, at, key) in enumerate(self.turns):
            found = [i for i, k in keys.items() if k == key and i not in claimed]
            gen.message_index = at if at in found else (found[0] if found else -1)
            if gen.message_index < 0:
                self.traj.log(f"generation {n}: its reply is not in the final conversation (a sub-agent or a "
                              "discarded branch); kept with message_index=-1")
            else:
                claimed.add(gen.message_index)


_CURRENT: contextvars.ContextVar[_Recorder | None] = contextvars.ContextVar("mcprl_rollout", default=None)


def _recorder_for(response: httpx.Response) -> _Recorder | None:
    rec = _CURRENT.get()
    if rec is None or response.status_code != 200 or not response.request.url.path.endswith("/chat/completions"):
        return None
    return rec if response.headers.get("content-type", "").startswith("application/json") else None


def _record_sync(response: httpx.Response) -> None:
    if (rec := _recorder_for(response)) is not None:
        response.read()
        rec.completion(str(response.request.url), json.loads(response.request.content), response.json())


async def _record_async(response: httpx.Response) -> None:
    if (rec := _recorder_for(response)) is not None:
        await response.aread()
        rec.completion(str(response.request.url), json.loads(response.request.content), response.json())


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for all clients: building one per client costs ~0.1 s of CPU."""
    import httpx

    return httpx.create_ssl_context()


def init_chat_model(model: Model, **kwargs: Any) -> ChatOpenAI:
    """A ChatOpenAI at `model`'s endpoint (temperature 1, logprobs and token ids requested) that
    records its calls into the current rollout. `kwargs` override the defaults; an
    `extra_body` is merged with ours."""
    import httpx
    from langchain_openai import ChatOpenAI

    if not model.inference_base_url:
        raise UserError(f"model {model.name!r} has no endpoint; register it with a backend first")
    extra_body = {"return_token_ids": True, **(kwargs.pop("extra_body", None) or {})}
    settings: dict[str, Any] = {
        "model": model.get_inference_name(),
        "base_url": model.inference_base_url,
        "api_key": model.inference_api_key or "mcprl",
        "temperature": 1.0,
        "logprobs": True,
        "max_retries": 0,
        "timeout": 600,
        "disable_streaming": True,  # the endpoint answers whole completions only
        "http_client": httpx.Client(timeout=600, verify=_ssl_context(), event_hooks={"response": [_record_sync]}),
        "http_async_client": httpx.AsyncClient(timeout=600, verify=_ssl_context(), event_hooks={"response": [_record_async]}),
    }
    return ChatOpenAI(**{**settings, **kwargs, "extra_body": extra_body})


def wrap_rollout(model: Model, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Trajectory]]:
    """Turn `fn(scenario, *args, **kwargs)` (your graph code) into a rollout returning the
    Trajectory its chat-model calls recorded.

    `fn` may return the final answer (a str, -> `metadata["final_answer"]`), a dict whose
    `reward`, `metrics` and `metadata` are merged into the trajectory (other keys, like a
    graph's state `messages`, are ignored: messages are recorded from the wire), or None.
    An exception marks the trajectory failed (`error`) instead of propagating.
    """

    async def run(scenario: Scenario, *args: Any, **kwargs: Any) -> Trajectory:
        from mcprl.tools import ServerGone

        t0 = time.perf_counter()
        traj = Trajectory(scenario_id=scenario.id, metadata={"task": scenario.task, "model": model.get_inference_name()})
        traj.metrics.update(dict.fromkeys(("turns", "tool_calls", "tool_errors", "invalid_tool_calls", "truncated", "finished"), 0.0))
        rec = _Recorder(traj)
        token = _CURRENT.set(rec)
        try:
            result = await fn(scenario, *args, **kwargs)
        except ServerGone as e:
            traj.error = f"MCP server gone: {e}"
        except Exception as e:
            traj.error = traj.error or f"{type(e).__name__}: {e}"
        else:
            if isinstance(result, str):
                traj.metadata["final_answer"] = result
            elif isinstance(result, Mapping):
                traj.reward = float(result.get("reward", traj.reward))
                traj.metrics.update(result.get("metrics") or {})
                traj.metadata.update(result.get("metadata") or {})
        finally:
            _CURRENT.reset(token)
        rec.finish()
        traj.metrics["seconds"] = time.perf_counter() - t0
        return traj

    return run


def mcp_tools(session: ToolSession, toolset: ToolSet) -> list[BaseTool]:
    """LangChain tools over an MCP session. Tool errors come back to the model as text; a dead
    server raises `ServerGone` (and marks the current trajectory failed even if the graph
    swallows it). Calls and errors are counted in the current trajectory's metrics."""
    return [_mcp_tool(session, schema["function"]) for schema in toolset.tools]


def _mcp_tool(session: ToolSession, fn: dict[str, Any]) -> BaseTool:
    from langchain_core.tools import StructuredTool

    async def call(**arguments: Any) -> str:
        return await _call(session, fn["name"], arguments)

    schema = fn.get("parameters") or {"type": "object", "properties": {}}
    return StructuredTool(name=fn["name"], description=fn.get("description") or fn["name"], args_schema=schema, coroutine=call)


async def _call(session: ToolSession, name: str, arguments: dict[str, Any]) -> str:
    from mcprl.tools import ServerGone

    rec = _CURRENT.get()
    try:
        out = await session.call(name, arguments)
    except ServerGone as e:
        if rec is not None:
            rec.traj.error = f"MCP server gone: {e}"
        raise
    if rec is not None:
        rec.tool_outcome(name, out)
    return out.text


def create_mcp_agent(
    model: Model,
    pool: ToolPool,
    *,
    system_prompt: str | None = None,
    max_turns: int = 6,
    max_tokens: int = 192,
    demonstration: bool = True,
) -> Callable[[Scenario], Awaitable[Trajectory]]:
    """A prebuilt ReAct agent over `pool`'s MCP tools as a rollout `(scenario) -> Trajectory`.

    It sees the same prompt as the plain loop (`mcprl.rollout.initial_messages`: system prompt,
    optional one-shot demonstration, the task), makes at most `max_turns` model calls of up to
    `max_tokens` each, and opens one pool session per rollout. An agent still calling tools
    after `max_turns` ends with `metrics["max_turns_reached"] = 1`."""
    from mcprl.rollout import RolloutConfig, initial_messages

    config = RolloutConfig(max_turns=max_turns, max_tokens=max_tokens, demonstration=demonstration,
                           **({"system_prompt": system_prompt} if system_prompt else {}))

    async def agent(scenario: Scenario) -> None:
        from langchain_core.messages import convert_to_messages

        async with pool.session() as session:
            assert pool.toolset is not None  # a session exists only in an entered pool
            prompt = initial_messages(scenario, pool.toolset.tools, config)
            # System prompt and demonstration go in through `prompt`: LangGraph refuses a state
            # holding the demonstration's tool call without a tool result.
            prefix = convert_to_messages(prompt[:-1])
            llm = init_chat_model(model, max_tokens=max_tokens)
            try:
                graph = _react_agent(llm, session, pool.toolset, lambda state: [*prefix, *state["messages"]])
                # Each turn is a model step and a tools step; on its last step the agent
                # stops instead of calling tools it has no step left to run.
                await graph.ainvoke({"messages": convert_to_messages(prompt[-1:])}, {"recursion_limit": 2 * max_turns})
            finally:
                await llm.http_async_client.aclose()
                llm.http_client.close()
        rec = _CURRENT.get()
        assert rec is not None  # `agent` only runs inside wrap_rollout
        if not (rec.traj.metrics["finished"] or rec.traj.metrics["truncated"]):
            rec.traj.metrics["max_turns_reached"] = 1.0

    return wrap_rollout(model, agent)


def _react_agent(llm: ChatOpenAI, session: ToolSession, toolset: ToolSet, prompt: Callable[[Any], list[Any]]) -> Any:
    from langchain_core.messages import ToolMessage
    from langgraph.prebuilt import ToolNode, create_react_agent

    async def unknown_to_session(request: Any, execute: Callable[[Any], Awaitable[Any]]) -> Any:
        """Calls of tools the agent lacks get the session's answer (and metrics), as in the plain loop."""
        if request.tool is not None:
            return await execute(request)
        call = request.tool_call
        text = await _call(session, call["name"], call["args"])
        return ToolMessage(text, name=call["name"], tool_call_id=call["id"], status="error")

    tools = ToolNode(mcp_tools(session, toolset), awrap_tool_call=unknown_to_session)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "moved to langchain.agents" since LangGraph 1.0
        return create_react_agent(llm, tools, prompt=prompt)
