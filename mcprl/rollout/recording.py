"""One recording client for every agent: each chat completion our policy endpoint returns
becomes a `Generation` of the rollout that asked for it, whatever the agent is written with.

An agent on the plain OpenAI SDK is a function of the `Recorder` (and the rollout config):

    async def my_agent(rec: Recorder, config: RolloutConfig) -> str | dict | None:
        client = rec.openai_client()                    # openai.AsyncOpenAI at the policy endpoint
        messages = [{"role": "user", "content": rec.scenario.task}]
        resp = await client.chat.completions.create(model=rec.model_name, messages=messages,
                                                    tools=rec.tools.schemas, temperature=config.temperature)
        ...
        outcome = await rec.tools.call(name, arguments)  # the MCP session's tools, recorded
        return resp.choices[0].message.content           # the final answer

    traj = await Recorder(model, scenario, pool).run(my_agent, config)
    # or, as an Agent for training and evaluation: mcprl.rollout.agents.load("my_module:my_agent")

`run` opens one MCP session from `pool` (none without a pool: `rec.tools` is None), makes the
scenario's `prepare` calls in it (the state its task is asked in; one that fails fails the
rollout), runs the agent, makes its `read_back` call, and returns the Trajectory. It never
raises for tool or policy misbehaviour, nor for an exception in the agent: those mark the
trajectory failed (`error`) with the reason. The agent
returns the final answer (a str, -> `metadata["final_answer"]`), a dict whose `reward`,
`metrics` and `metadata` are merged into the trajectory, or None.

The mechanism is an httpx client (`async_http_client()`, `http_client()`): every request it
sends to `.../chat/completions` asks for token ids and logprobs (training needs both), and, for
a Recorder made with `constrain_tool_calls`, holds its tool calls to the offered tools' names and
schemas (`mcprl.model.chat_format.tool_call_format`, unless the agent set a response_format itself); and
every reply is recorded in the Recorder running in the current context (a
`contextvars.ContextVar`, so concurrent rollouts in one event loop, and the threads LangGraph
starts for sync nodes, each record only their own calls; calls outside `run` are not recorded).
The OpenAI SDK takes it as `AsyncOpenAI(http_client=...)` (`Recorder.openai_client` does that),
LangChain's ChatOpenAI as `http_async_client`/`http_client` (`mcprl.rollout.langgraph.init_chat_model`).
Streamed replies are not recorded (the endpoint answers whole completions only).

What a reply records: the prompt and completion token ids, the logprobs, the request's
temperature, top_p, top_k and min_p (what the logprobs were sampled under) and whether it was
grammar-constrained (a structured `response_format`), the policy replica that answered (the
reply's `x-mcprl-replica` header, set by mcprl.cluster.router), `metrics` turns,
invalid_tool_calls (with a log line), and finished/truncated from the last reply. A reply with
completion token ids but no `prompt_token_ids`, or without one logprob per token, fails the
rollout at once.

Truncated episodes stay in their group (scored as they are, so the group's baseline is not
biased toward short episodes): a request the endpoint refuses because the conversation no
longer fits the model's context (HTTP 400 naming the context length), and an episode past
`time_limit_s` (RolloutConfig.episode_timeout_s), end the episode with `metrics["truncated"]`
= 1 and the reason in `metadata["truncated"]`, not as a failure. The rule for their tokens, as
verifiers': every turn sampled before the truncation is recorded whole and trained like any
other; the turn that did not come back (refused, or cut off by the time limit) is not recorded,
so no partial turn is trained. Tool calls through
`rec.tools` count tool_calls, calls/NAME, and on error tool_errors, errors/NAME,
error_kind/KIND, and add each call's tool, error kind and latency to `metadata["tool_outcomes"]`;
a dead server fails the rollout.

The trajectory's `messages` are the last request's messages exactly as sent plus its reply,
unless the agent keeps the whole conversation itself in `rec.conversation` (the plain loop
does). Each Generation's `message_index` points at its assistant message there (-1, with a
log line, for a reply not in it: a sub-agent's, or a discarded branch's).
"""

from __future__ import annotations

import contextvars
import functools
import json
import math
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import openai
from openai import AsyncOpenAI

from mcprl.errors import UserError, clip
from mcprl.model.chat_format import tool_call_format
from mcprl.tools import ServerGone
from mcprl.types import Generation, Message, Scenario, ToolSchema, Trajectory, message_key

if TYPE_CHECKING:
    import ssl

    from mcprl.model.trainable import Model
    from mcprl.tools import ToolOutcome, ToolPool, ToolSession

__all__ = ["McpTools", "Recorder", "async_http_client", "http_client", "missing_prompt_tokens"]

COUNTERS = ("turns", "tool_calls", "tool_errors", "invalid_tool_calls", "truncated", "finished")
_DROPPED_REPLY_KEYS = ("refusal", "annotations", "audio", "function_call")


def missing_prompt_tokens(endpoint: str | None) -> str:
    """Why a reply with completion token ids but no `prompt_token_ids` fails its rollout: training on
    it would score the first completion token from its own position."""
    return (
        f"policy endpoint {endpoint} returned completion token ids without prompt_token_ids, so this "
        "rollout cannot be trained on; serve the policy with mcprl's endpoint or a vLLM that answers "
        "return_token_ids=true with prompt_token_ids"
    )


# How an OpenAI-compatible endpoint words "the prompt does not fit the context": ours ("prompt of N
# tokens is over the model's limit of M", or over its --max-prompt-tokens), vLLM's ("maximum context
# length"), OpenAI's (the same, and "context_length_exceeded").
_CONTEXT_OVERFLOW = re.compile(
    r"context length|context_length|model's limit|max_prompt_tokens|max_model_len|prompt is too long", re.I
)


def is_context_overflow(message: str) -> bool:
    return bool(_CONTEXT_OVERFLOW.search(message))


def mismatched_logprobs(endpoint: str | None, logprobs: int, tokens: int) -> str:
    """Why a reply whose logprobs do not match its token ids one to one fails its rollout: the
    trainer needs the sampled logprob of every token it trains (the GRPO ratio's denominator)."""
    return (
        f"policy endpoint {endpoint} returned {tokens} completion token ids with {logprobs} usable logprobs, "
        "so this rollout cannot be trained on; serve the policy with an endpoint that answers logprobs=true "
        "with one logprob per token"
    )


class Untrainable(RuntimeError):
    """A reply that cannot be trained on: it ends the rollout (its trajectory holds the reason)."""


class McpTools:
    """The rollout's MCP session as an agent uses it: `schemas` to offer the model, `call` to run one."""

    def __init__(self, session: ToolSession, schemas: list[ToolSchema]) -> None:
        self.session = session
        self.schemas = schemas

    async def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolOutcome:
        """Run a tool (a JSON string or a dict of arguments) and record its outcome in the current
        rollout. Tool errors come back as an outcome; a dead server raises `ServerGone`."""
        rec = _CURRENT.get()
        try:
            out = await self.session.call(name, arguments)
        except ServerGone as e:
            if rec is not None:  # failed even if the agent swallows the exception
                rec.trajectory.error = rec.trajectory.error or f"{e.label}: {e}"
            raise
        if rec is not None:
            rec.tool_outcome(name, out)
        return out


class Unprepared(Exception):
    """A call of the scenario's `prepare` failed: the episode has no state to be asked in."""


class Recorder:
    """One rollout: its Trajectory, fed by the recording HTTP clients and `tools`."""

    def __init__(
        self,
        model: Model,
        scenario: Scenario,
        pool: ToolPool | None = None,
        *,
        constrain_tool_calls: bool = False,
        time_limit_s: float | None = None,
    ) -> None:
        if not model.inference_base_url:
            raise UserError(f"model {model.name!r} has no endpoint; register it with a backend first")
        self.model, self.scenario, self.pool = model, scenario, pool
        self.constrain_tool_calls = constrain_tool_calls  # see RolloutConfig.constrain_tool_calls
        self.time_limit_s = time_limit_s  # see RolloutConfig.episode_timeout_s
        self.model_name = model.get_inference_name()  # the served name (it changes with every step)
        self.trajectory = Trajectory(
            scenario_id=scenario.id, metadata={"task": scenario.task, "model": self.model_name}
        )
        self.trajectory.metrics.update(dict.fromkeys(COUNTERS, 0.0))
        self.tools: McpTools | None = None
        # Set by an agent that keeps the whole conversation (with the tool results after the
        # last reply): the trajectory keeps it instead of the last request plus its reply.
        self.conversation: list[Message] | None = None
        self._turns: list[tuple[Generation, int, str]] = []  # per Generation: its request's length, its reply's key
        self._clients: list[AsyncOpenAI] = []
        self._lock = threading.Lock()

    def openai_client(self) -> AsyncOpenAI:
        """An AsyncOpenAI at the policy endpoint that records into this rollout; closed by `run`."""
        client = AsyncOpenAI(
            base_url=self.model.inference_base_url,
            api_key=self.model.inference_api_key or "mcprl",
            max_retries=0,
            timeout=600,
            http_client=async_http_client(),
        )
        self._clients.append(client)
        return client

    async def run(self, agent: Callable[..., Awaitable[Any]], *args: Any) -> Trajectory:
        """`await agent(self, *args)` with this rollout recording; the finished Trajectory."""
        if self.pool is not None and self.pool.toolset is None:
            raise UserError(
                "enter the ToolPool before rolling out (`async with ToolPool(spec) as pool`): that discovers its tools"
            )
        traj, t0 = self.trajectory, time.perf_counter()
        token = _CURRENT.set(self)
        try:
            async with AsyncExitStack() as stack:
                if self.pool is not None:
                    assert self.pool.toolset is not None
                    self.tools = McpTools(await stack.enter_async_context(self.pool.session()), self.pool.toolset.tools)
                    await self._prepare(self.tools.session)
                stack.push_async_callback(self._close_clients)
                result = None
                with anyio.move_on_after(self.time_limit_s or math.inf) as limit:
                    result = await agent(self, *args)
                if limit.cancelled_caught:
                    self._truncate(f"the episode's time limit of {self.time_limit_s:g} s was reached")
                if self.scenario.read_back and self.tools is not None:
                    await self._read_back(self.tools.session, self.scenario.read_back)
        except ServerGone as e:
            traj.error = traj.error or f"{e.label}: {e}"
        except Unprepared as e:
            traj.error = str(e)
        except openai.APIError as e:
            if isinstance(e, openai.BadRequestError) and is_context_overflow(str(e)):
                self._truncate(f"the conversation no longer fits the model's context ({clip(str(e), 200)})")
            else:
                traj.error = traj.error or f"policy endpoint error: {type(e).__name__}: {clip(str(e))}"
        except Exception as e:
            traj.error = traj.error or f"{type(e).__name__}: {clip(str(e))}"
        else:
            self._merge(result)
        finally:
            _CURRENT.reset(token)
        self._finish()
        traj.metrics["seconds"] = time.perf_counter() - t0
        return traj

    async def _prepare(self, session: ToolSession) -> None:
        """The scenario's `prepare` calls, made in the episode's own session before it starts (not turns of the
        policy's, nor its time): the state the task is asked in. One that fails leaves no such state: the
        rollout fails (`Unprepared`), and its group trains without it."""
        for call in self.scenario.prepare:
            outcome = await session.call(call.tool, call.arguments)
            self.trajectory.log(f"prepared {call.tool}: {clip(outcome.text, 200)}")
            if outcome.is_error:
                raise Unprepared(
                    f"preparing the task's state: {call.tool} {json.dumps(call.arguments, default=str)} failed: "
                    f"{clip(outcome.text, 200)}"
                )

    async def _read_back(self, session: ToolSession, call: dict[str, Any]) -> None:
        """The scenario's read-back call, made in the episode's own session once it is over (not a
        turn of the policy's): its result is the state a check `on: read_back` scores."""
        outcome = await session.call(call["tool"], call.get("arguments") or {})  # timed out like any call
        self.trajectory.metadata["read_back"] = "" if outcome.is_error else outcome.text
        self.trajectory.log(f"read back {call['tool']}: {clip(outcome.text, 200)}")

    def _truncate(self, reason: str) -> None:
        """End the episode truncated (see the module's docstring): kept, scored, not failed."""
        traj = self.trajectory
        traj.metadata["truncated"] = reason
        traj.metrics["truncated"], traj.metrics["finished"] = 1.0, 0.0
        traj.log(f"truncated: {reason}")

    async def _close_clients(self) -> None:
        for client in self._clients:
            await client.close()

    def _merge(self, result: Any) -> None:
        traj = self.trajectory
        if isinstance(result, str):
            traj.metadata["final_answer"] = result
        elif isinstance(result, Mapping):
            traj.reward = float(result.get("reward", traj.reward))
            traj.metrics.update(result.get("metrics") or {})
            traj.metadata.update(result.get("metadata") or {})

    def completion(
        self, endpoint: str, request: dict[str, Any], body: dict[str, Any], replica: str | None = None
    ) -> None:
        """Record one chat completion: `request` as sent to `endpoint`, `body` as it came back (from
        policy replica `replica`, when the endpoint says which)."""
        messages: list[Message] = request.get("messages") or []
        choice = body["choices"][0]
        reply = {k: v for k, v in choice["message"].items() if v is not None and k not in _DROPPED_REPLY_KEYS}
        reply.setdefault("content", "")
        with self._lock:
            traj, m = self.trajectory, self.trajectory.metrics
            traj.messages = [*messages, reply]
            tools = {(t.get("function") or t).get("name"): t for t in traj.tools or []}
            for t in request.get("tools") or []:
                tools.setdefault((t.get("function") or t).get("name"), t)
            traj.tools = list(tools.values()) or None
            m["turns"] += 1
            if "token_ids" in choice:
                if not body.get("prompt_token_ids"):
                    traj.error = traj.error or missing_prompt_tokens(endpoint)
                    raise Untrainable(traj.error)
                logprobs = [t.get("logprob") for t in ((choice.get("logprobs") or {}).get("content") or [])]
                if len(logprobs) != len(choice["token_ids"]) or not all(isinstance(x, int | float) for x in logprobs):
                    traj.error = traj.error or mismatched_logprobs(endpoint, len(logprobs), len(choice["token_ids"]))
                    raise Untrainable(traj.error)
                gen = Generation(
                    prompt_token_ids=body["prompt_token_ids"],
                    completion_token_ids=choice["token_ids"],
                    logprobs=logprobs,
                    # the settings the request sampled with (absent: the defaults, Generation's)
                    **{k: request[k] for k in ("temperature", "top_p", "top_k", "min_p") if request.get(k) is not None},
                    constrained=(request.get("response_format") or {}).get("type", "text") != "text",
                    model=body.get("model", ""),
                    replica=replica,
                    finish_reason=choice.get("finish_reason") or "stop",
                )
                traj.generations.append(gen)
                self._turns.append((gen, len(messages), message_key(reply)))
            if choice.get("tool_call_error"):
                m["invalid_tool_calls"] += 1
                traj.log(f"turn {int(m['turns'])}: unparseable tool call: {choice['tool_call_error']}")
            ended = not reply.get("tool_calls")
            m["truncated"] = float(ended and choice.get("finish_reason") == "length")
            m["finished"] = float(ended and not m["truncated"])

    def tool_outcome(self, name: str, out: ToolOutcome) -> None:
        with self._lock:
            m = self.trajectory.metrics
            for key in ("tool_calls", f"calls/{name}") + (
                ("tool_errors", f"errors/{name}", f"error_kind/{out.error_kind}") if out.is_error else ()
            ):
                m[key] = m.get(key, 0.0) + 1
            if out.replayed in ("nearest", "live", "cached"):  # not the recorded answer to this very call
                m[f"replayed/{out.replayed}"] = m.get(f"replayed/{out.replayed}", 0.0) + 1
                how = "from the nearest recorded call" if out.replayed == "nearest" else out.replayed
                self.trajectory.log(f"{name}: answered {how}")
            # each call's outcome, in call order, for the per-tool report (mcprl.usage)
            self.trajectory.metadata.setdefault("tool_outcomes", []).append(
                {"tool": name, "error_kind": out.error_kind, "latency_s": round(out.latency_s, 4)}
            )

    def _finish(self) -> None:
        """Keep the agent's conversation, and point every Generation at its assistant message there."""
        if self.conversation is not None:
            self.trajectory.messages = self.conversation
        msgs = self.trajectory.messages
        keys = {i: message_key(m) for i, m in enumerate(msgs) if m.get("role") == "assistant"}
        claimed: set[int] = set()
        for n, (gen, at, key) in enumerate(self._turns):
            found = [i for i, k in keys.items() if k == key and i not in claimed]
            gen.message_index = at if at in found else (found[0] if found else -1)
            if gen.message_index < 0:
                self.trajectory.log(
                    f"generation {n}: its reply is not in the final conversation (a sub-agent or a "
                    "discarded branch); kept with message_index=-1"
                )
            else:
                claimed.add(gen.message_index)


_CURRENT: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("mcprl_rollout", default=None)


def _is_chat(request: httpx.Request) -> bool:
    return request.method == "POST" and request.url.path.endswith("/chat/completions")


def _asking_for_tokens(request: httpx.Request) -> httpx.Request:
    """The chat request with token ids and logprobs asked for, whatever the agent sent, and with
    its tool calls grammar-constrained when the rollout says so (and the agent set no format)."""
    body = json.loads(request.content)
    body.update(logprobs=True, return_token_ids=True)
    rec = _CURRENT.get()
    if (
        rec is not None
        and rec.constrain_tool_calls
        and body.get("tools")
        and body.get("tool_choice") != "none"
        and not body.get("response_format")
    ):
        body["response_format"] = tool_call_format(body["tools"])
    headers = request.headers.copy()
    del headers["content-length"]
    return httpx.Request(
        request.method, request.url, headers=headers, content=json.dumps(body).encode(), extensions=request.extensions
    )


# Sampling penalties depend on the history of each sequence; the trainer does not reproduce them, so
# a token drawn under one would be trained under another distribution than its own.
NEUTRAL_PENALTIES = {"presence_penalty": 0.0, "frequency_penalty": 0.0, "repetition_penalty": 1.0}


def _refusal(request: httpx.Request) -> httpx.Response | None:
    """A 400 reply, made here without sending the request (to any endpoint, vLLM included), for a
    chat request with a sampling penalty away from its neutral value; None for any other request."""
    body = json.loads(request.content)
    for k, neutral in NEUTRAL_PENALTIES.items():
        if body.get(k) is not None and body[k] != neutral:
            message = (
                f"{k}={body[k]}: sampling penalties are not reproduced by the trainer, so it would train on "
                f"another distribution than the one sampled; leave {k} at {neutral:g}"
            )
            error = {"message": message, "type": "invalid_request_error", "param": k, "code": None}
            return httpx.Response(400, json={"error": error}, request=request)
    return None


def _recorder_for(response: httpx.Response) -> Recorder | None:
    rec = _CURRENT.get()
    if rec is None or response.status_code != 200:
        return None
    return rec if response.headers.get("content-type", "").startswith("application/json") else None


def _record(rec: Recorder, response: httpx.Response) -> None:
    endpoint = str(response.request.url).removesuffix("/chat/completions")
    rec.completion(
        endpoint, json.loads(response.request.content), response.json(), response.headers.get("x-mcprl-replica")
    )


@functools.cache
def _client_classes() -> tuple[type[httpx.Client], type[httpx.AsyncClient]]:
    """The recording httpx clients, made on first use (httpx takes ~0.1 s to import)."""

    class RecordingClient(httpx.Client):
        def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            if not _is_chat(request):
                return super().send(request, **kwargs)
            if (refused := _refusal(request)) is not None:
                return refused
            response = super().send(_asking_for_tokens(request), **kwargs)
            if (rec := _recorder_for(response)) is not None:
                response.read()
                _record(rec, response)
            return response

    class AsyncRecordingClient(httpx.AsyncClient):
        async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            if not _is_chat(request):
                return await super().send(request, **kwargs)
            if (refused := _refusal(request)) is not None:
                return refused
            response = await super().send(_asking_for_tokens(request), **kwargs)
            if (rec := _recorder_for(response)) is not None:
                await response.aread()
                _record(rec, response)
            return response

    return RecordingClient, AsyncRecordingClient


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for all clients: building one per client costs ~0.1 s of CPU."""
    return httpx.create_ssl_context()


def http_client() -> httpx.Client:
    """A sync httpx client that records chat completions into the current rollout."""
    return _client_classes()[0](timeout=600, verify=_ssl_context())


def async_http_client() -> httpx.AsyncClient:
    """An async httpx client that records chat completions into the current rollout."""
    return _client_classes()[1](timeout=600, verify=_ssl_context())
