"""The CPU inference engine: one base model, any number of LoRA adapters served as `NAME@STEP`,
and a continuous batcher: requests for one adapter share a decoding batch, which a request
joins at the next token and leaves when its rows end, with prompts' prefixes cached across
requests (`mcprl.serving.sampler`)."""

from __future__ import annotations

import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from peft import PeftModel

from mcprl.errors import UserError
from mcprl.model import weights
from mcprl.model.chat_format import parse_tool_calls
from mcprl.serving.prompts import TurnCache, render_prompt
from mcprl.serving.protocol import ChatRequest, ServeLimits
from mcprl.serving.sampler import Batch, PrefixCache, Sampled, SampleRequest
from mcprl.serving.structured import COMPILE_TIMEOUT_S, Constraint, Grammars, SchemaError, json_depth


class BadRequest(ValueError):
    """A request the engine cannot serve; becomes an HTTP 400 with this message."""


class UnknownModel(BadRequest):
    pass


@dataclass(eq=False)  # by identity: a set holds those in flight
class _Pending:
    request: ChatRequest
    adapter: str | None
    prompt_ids: list[int]
    max_new_tokens: int
    constraint: Constraint | None = None  # response_format's grammar in its start state
    done: anyio.Event = field(default_factory=anyio.Event)
    # Set when the caller is gone (disconnected, shut down): the sampler drops its rows.
    cancelled: threading.Event = field(default_factory=threading.Event)
    result: list[Sampled] | None = None
    error: BaseException | None = None

    @property
    def tokens(self) -> int:
        """What the request holds in the KV cache at most: n x (prompt + max_tokens)."""
        return self.request.n * (len(self.prompt_ids) + self.max_new_tokens)


class Engine:
    """Serve a base model and its adapters. Thread-safe; batching runs on the caller's event loop."""

    def __init__(
        self,
        model_spec: str,
        *,
        model=None,
        tokenizer=None,
        served_name: str | None = None,
        max_batch_rows: int = 32,
        batch_window_s: float = 0.01,
        default_max_tokens: int = 512,
        max_model_len: int | None = None,
        limits: ServeLimits | None = None,
    ):
        self.tokenizer = tokenizer or weights.load_tokenizer(model_spec)
        self.model = model if model is not None else weights.load_model(model_spec)
        self.base_name = served_name or model_spec
        self.max_batch_rows = max_batch_rows
        self.batch_window_s = batch_window_s
        self.default_max_tokens = default_max_tokens
        self.max_model_len = max_model_len or getattr(self.model.config, "max_position_embeddings", 8192)
        self.limits = limits or ServeLimits()
        self.turns = TurnCache()
        self.prefixes = PrefixCache()  # prompts' prefilled prefixes, per adapter (guarded by _lock)
        self.adapters: dict[str, Path] = {}
        self._lock = threading.RLock()  # guards the model: sampling and adapter loads
        self._queue: list[_Pending] = []
        self._in_flight: set[_Pending] = set()  # queued or sampling: what `close` cancels
        self._compile_slot = threading.Lock()  # one grammar compile at a time (each can take seconds)
        self._wakeup: anyio.Event | None = None
        eos = {self.tokenizer.eos_token_id}
        gen_eos = getattr(self.model.generation_config, "eos_token_id", None)
        eos |= set(gen_eos) if isinstance(gen_eos, list) else {gen_eos}
        self.eos_ids = {e for e in eos if e is not None}
        self.grammars = Grammars(self.tokenizer, self.eos_ids, self.model.config.vocab_size)
        self.pad_id = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        )
        self.metrics = {
            "requests": 0,
            "batches": 0,
            "rows": 0,
            "tool_call_parse_errors": 0,
            "completion_tokens": 0,
            "cancelled": 0,
            "refused": 0,
        }

    # ---- adapters -------------------------------------------------------------------------
    def load_adapter(self, name: str, path: str | Path) -> None:
        """Serve the PEFT adapter at `path` as `name`, replacing one of the same name."""
        path = Path(path)
        if not (path / "adapter_config.json").exists():
            raise UserError(f"{path}: not a PEFT adapter directory (no adapter_config.json)")
        with self._lock:
            self.prefixes.forget(name)
            if isinstance(self.model, PeftModel):
                if name in self.model.peft_config:
                    self.model.delete_adapter(name)
                self.model.load_adapter(str(path), adapter_name=name)
            else:
                self.model = PeftModel.from_pretrained(self.model, str(path), adapter_name=name)
            self.model.eval()
            self.adapters[name] = path

    def unload_adapter(self, name: str) -> None:
        with self._lock:
            self.prefixes.forget(name)
            if name in self.adapters:
                del self.adapters[name]
                if len(self.model.peft_config) > 1:
                    if self.model.active_adapter == name:
                        self.model.set_adapter(next(a for a in self.model.peft_config if a != name))
                    self.model.delete_adapter(name)

    def served_models(self) -> list[str]:
        return [self.base_name, *self.adapters]

    def resolve(self, name: str) -> str | None:
        """Adapter for a requested model name; None means the base model. `NAME` alone means its latest step."""
        if name == self.base_name:
            return None
        if name in self.adapters:
            return name
        steps = [a for a in self.adapters if a.rsplit("@", 1)[0] == name]
        if steps:
            return max(steps, key=lambda a: int(a.rsplit("@", 1)[1]) if a.rsplit("@", 1)[1].isdigit() else -1)
        raise UnknownModel(f"model {name!r} is not served; available: {', '.join(self.served_models())}")

    # ---- requests -------------------------------------------------------------------------
    def _check(self, req: ChatRequest) -> None:
        """BadRequest for a request over one of the limits that need no work to check."""
        limits, refuse = self.limits, self.limits.refuse
        if req.stream:
            raise BadRequest("streaming is not supported; set stream=false")
        if req.top_logprobs:
            raise BadRequest("top_logprobs is not supported; use logprobs=true for the sampled tokens' logprobs")
        if isinstance(req.tool_choice, dict) or req.tool_choice not in (None, "auto", "none"):
            raise BadRequest("tool_choice must be 'auto' or 'none'")
        if req.n > limits.max_n:
            raise BadRequest(refuse("max_n", f"n={req.n}"))
        if (asked := req.max_completion_tokens or req.max_tokens or 0) > limits.max_tokens_limit:
            raise BadRequest(refuse("max_tokens_limit", f"max_tokens={asked}"))
        if len(req.messages) > limits.max_messages:
            raise BadRequest(refuse("max_messages", f"{len(req.messages)} messages"))
        if req.response_format is not None:
            if (
                size := len(req.response_format.model_dump_json(by_alias=True, exclude_none=True))
            ) > limits.max_schema_bytes:
                raise BadRequest(refuse("max_schema_bytes", f"response_format of {size} bytes"))
            if (
                depth := json_depth(req.response_format.model_dump(by_alias=True, exclude_none=True))
            ) > limits.max_schema_depth:
                raise BadRequest(refuse("max_schema_depth", f"response_format nested {depth} levels"))

    async def chat(self, req: ChatRequest) -> dict[str, Any]:
        """Answer one chat-completions request (batched with whatever else is in flight). Everything
        that grows with the request (rendering, tokenizing, compiling, decoding) runs off the event loop."""
        try:
            pending = await anyio.to_thread.run_sync(self._prepare, req)
        except BadRequest as e:
            self.metrics["refused"] += 1
            # The refusal's traceback holds _prepare's frame, and with it the rendered prompt's
            # tokens (80 MB for a 4 MB prompt); crossing the worker thread leaves it in a reference
            # cycle that only a full collection would free. Clearing the frames frees them now.
            traceback.clear_frames(e.__traceback__)
            raise
        if req.response_format:
            pending.constraint = await self._constraint(req)
        self.metrics["requests"] += 1
        self._queue.append(pending)
        self._in_flight.add(pending)
        if self._wakeup is not None:
            self._wakeup.set()
        try:
            await pending.done.wait()
        except BaseException:  # the caller is gone: its rows leave the queue, or the batch at the next token
            pending.cancelled.set()
            if pending in self._queue:
                self._queue.remove(pending)
            self.metrics["cancelled"] += 1
            raise
        finally:
            self._in_flight.discard(pending)
        if pending.error is not None:
            raise pending.error
        return await anyio.to_thread.run_sync(self._response, req, pending.prompt_ids, pending.result or [])

    def _prepare(self, req: ChatRequest) -> _Pending:
        """The request's place in the queue: checked, rendered, and within the prompt and token
        limits (BadRequest otherwise)."""
        self._check(req)
        adapter = self.resolve(req.model)
        tools = None if req.tool_choice == "none" else req.tools
        try:
            prompt_ids = render_prompt(self.tokenizer, req.messages, tools, self.turns)
        except Exception as e:  # template errors are the request's fault
            raise BadRequest(f"could not render messages with the chat template: {e}") from None
        longest = min(self.limits.max_prompt_tokens or self.max_model_len, self.max_model_len - 1)
        if len(prompt_ids) > longest:
            limit = "max_prompt_tokens" if longest == self.limits.max_prompt_tokens else None
            what = f"prompt of {len(prompt_ids)} tokens"
            raise BadRequest(
                self.limits.refuse(limit, what) if limit else f"{what} is over the model's limit of {longest}"
            )
        budget = min(req.max_new_tokens(self.default_max_tokens), self.max_model_len - len(prompt_ids))
        pending = _Pending(req, adapter, prompt_ids, budget)
        if pending.tokens > self.limits.max_request_tokens:
            what = f"n x (prompt + max_tokens) = {req.n} x ({len(prompt_ids)} + {budget}) tokens"
            raise BadRequest(self.limits.refuse("max_request_tokens", what))
        return pending

    async def _constraint(self, req: ChatRequest) -> Constraint | None:
        """Compile the request's response_format on a worker thread, one compile at a time (llguidance
        bounds its own work with its default parser limits; `ServeLimits.max_schema_*` bound the
        schema checks before it). A compile still waiting for its turn when the request times out
        or goes away never starts."""
        abandoned = threading.Event()

        def compile_in_turn() -> Constraint | None:
            with self._compile_slot:
                return None if abandoned.is_set() else self.grammars.compile(req.response_format)

        try:
            with anyio.fail_after(COMPILE_TIMEOUT_S):
                return await anyio.to_thread.run_sync(compile_in_turn, abandon_on_cancel=True)
        except SchemaError as e:
            self.metrics["refused"] += 1
            raise BadRequest(str(e)) from None
        except TimeoutError:
            self.metrics["refused"] += 1
            raise BadRequest(
                f"response_format: the schema took over {COMPILE_TIMEOUT_S:.0f} s to compile; simplify it"
            ) from None
        finally:
            abandoned.set()

    def close(self) -> None:
        """Cancel everything queued or sampling (the server is shutting down)."""
        for p in list(self._in_flight):
            p.cancelled.set()
        self._queue.clear()

    async def run_batcher(self) -> None:
        """Loop forever: gather what is queued (waiting `batch_window_s` for stragglers) and sample it,
        along with what arrives for the same adapter while it samples."""
        while True:
            if not self._queue:
                self._wakeup = anyio.Event()
                await self._wakeup.wait()
            await anyio.sleep(self.batch_window_s)
            if self._queue:
                await anyio.to_thread.run_sync(self._run_batch, self._take_batch())

    def _take_batch(self) -> list[_Pending]:
        """The next batch: queued requests for the first one's adapter, up to `max_batch_rows` rows
        and `max_batch_tokens` (rows x (longest prompt + largest budget), the padded KV cache)."""
        adapter = self._queue[0].adapter
        batch, rest, rows, longest, budget = [], [], 0, 0, 0
        for p in self._queue:
            grown = (rows + p.request.n) * (max(longest, len(p.prompt_ids)) + max(budget, p.max_new_tokens))
            if p.adapter == adapter and (
                not batch or rows + p.request.n <= self.max_batch_rows and grown <= self.limits.max_batch_tokens
            ):
                batch.append(p)
                rows, longest, budget = (
                    rows + p.request.n,
                    max(longest, len(p.prompt_ids)),
                    max(budget, p.max_new_tokens),
                )
            else:
                rest.append(p)
        self._queue[:] = rest
        return batch

    def _take_joiners(self, adapter: str | None, rows: int, width: int, budget: int) -> list[_Pending]:
        """Queued requests that join a running batch for `adapter` (`rows` rows, a KV cache `width`
        wide, `budget` tokens left at most): in arrival order while each is for the same adapter (a
        request for another one waits at the head, and the batch takes no more, so that it ends and
        that one is served) and the batch stays within `max_batch_rows` and `max_batch_tokens`."""
        joined = []
        while self._queue and (p := self._queue[0]).adapter == adapter:
            rows, width, budget = rows + p.request.n, max(width, len(p.prompt_ids)), max(budget, p.max_new_tokens)
            if rows > self.max_batch_rows or rows * (width + budget) > self.limits.max_batch_tokens:
                break
            joined.append(self._queue.pop(0))
        return joined

    def _sample_requests(self, batch: list[_Pending]) -> list[SampleRequest]:
        rows = []
        for p in batch:
            r = p.request
            for k in range(r.n):
                seed = None if r.seed is None else r.seed + k
                rows.append(
                    SampleRequest(
                        p.prompt_ids,
                        p.max_new_tokens,
                        r.temperature,
                        r.top_p,
                        r.stops,
                        seed,
                        self.grammars.fork(p.constraint),
                        top_k=r.top_k,
                        min_p=r.min_p,
                        cancelled=p.cancelled,
                    )
                )
        return rows

    @contextmanager
    def _serving(self, adapter: str | None) -> Iterator[Any]:
        """The model with `adapter` active (None: the base model, adapters off)."""
        model = self.model
        if isinstance(model, PeftModel):
            if adapter is None:
                with model.disable_adapter():
                    yield model
                return
            model.set_adapter(adapter)
        yield model

    def _run_batch(self, first: list[_Pending], join: bool = True) -> None:
        """Sample `first`, on a worker thread, and every request for its adapter that arrives while it
        does: an arriving request joins the batch at the next token (continuous batching: a rollout's
        next turn, sent while other rollouts' turns are still sampling, need not wait for all of them),
        and each request is answered as soon as its own rows end. A request whose rows cannot be
        sampled (a seed torch rejects) fails alone; a failure while decoding fails the requests then in
        the batch, each then sampled again alone, so that it is the failing one's own."""
        adapter = first[0].adapter
        retry: list[_Pending] = []
        rows_of: dict[int, tuple[_Pending, int]] = {}  # a row's id -> its request and its index in it
        results: dict[_Pending, list[Sampled | None]] = {}

        def answer(p: _Pending) -> None:
            p.result = results.pop(p, None)
            anyio.from_thread.run_sync(p.done.set)

        def admit(batch: Batch, pendings: list[_Pending]) -> None:
            try:
                ids = batch.add(self._sample_requests(pendings))
            except Exception as e:
                if len(pendings) > 1:
                    for p in pendings:
                        admit(batch, [p])
                    return
                pendings[0].error = e
                answer(pendings[0])
                return
            it = iter(ids)
            for p in pendings:
                results[p] = [None] * p.request.n
                for k in range(p.request.n):
                    rows_of[next(it)] = (p, k)
            self.metrics["rows"] += len(ids)

        try:
            with self._lock, self._serving(adapter) as model:
                batch = Batch(
                    model,
                    pad_id=self.pad_id,
                    eos_ids=self.eos_ids,
                    decode=self._decode,
                    prefixes=self.prefixes,
                    prefix_key=adapter,
                )
                # Counted as it starts, before any of its requests is answered: a caller reading the count
                # after its answer finds the batch that gave it.
                self.metrics["batches"] += 1
                admit(batch, first)
                while batch.rows:
                    # The queue is read here but taken on the event loop's thread, the one that changes it
                    # (its head for another adapter: nothing joins, and the batch runs to its end).
                    if join and (head := self._queue[:1]) and head[0].adapter == adapter:
                        joiners = anyio.from_thread.run_sync(
                            self._take_joiners, adapter, len(batch.rows), batch.width, batch.budget_left
                        )
                        if joiners:
                            admit(batch, joiners)
                    try:
                        ended = batch.step()
                    except Exception as e:
                        batch.close()
                        if len(results) == 1:
                            (p,) = results
                            p.error = e
                            answer(p)
                        else:
                            retry = list(results)
                        break
                    for row_id, sampled in ended:
                        p, k = rows_of.pop(row_id)
                        results[p][k] = sampled
                        if all(s is not None for s in results[p]):
                            answer(p)
        except Exception as e:  # a fault of the engine's own: still, no caller is left waiting
            for p in {*first, *results}:
                if not p.done.is_set():
                    p.error = e
                    anyio.from_thread.run_sync(p.done.set)
            return
        for p in retry:
            self._run_batch([p], join=False)

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _response(self, req: ChatRequest, prompt_ids: list[int], samples: list[Sampled]) -> dict[str, Any]:
        choices = []
        completion_tokens = 0
        whole_json = req.response_format is not None and req.response_format.is_json
        for i, s in enumerate(samples):
            completion_tokens += len(s.token_ids)
            text = self._decode(s.token_ids)
            if s.text_end is not None:
                text = text[: s.text_end]
            # With a JSON response_format the grammar decides the content: no tool-call parsing.
            parsed = parse_tool_calls(text) if req.tools and req.tool_choice != "none" and not whole_json else None
            message: dict[str, Any] = {"role": "assistant", "content": text}
            finish = s.finish_reason
            choice: dict[str, Any] = {"index": i, "message": message, "finish_reason": finish}
            if parsed is not None:
                message["content"] = parsed.content if parsed.tool_calls else text
                if parsed.tool_calls:
                    message["tool_calls"] = parsed.tool_calls
                    if finish == "stop":
                        choice["finish_reason"] = "tool_calls"
                if parsed.error:
                    choice["tool_call_error"] = parsed.error
                    self.metrics["tool_call_parse_errors"] += 1
            if req.logprobs:
                choice["logprobs"] = {
                    "content": [
                        {
                            "token": self.tokenizer.convert_ids_to_tokens(t),
                            "logprob": lp,
                            "bytes": None,
                            "top_logprobs": [],
                        }
                        for t, lp in zip(s.token_ids, s.logprobs)
                    ]
                }
            if req.return_token_ids:
                choice["token_ids"] = s.token_ids
            # Remember the sampled tokens of this exact message, so a follow-up turn splices them back.
            self.turns.put(req.messages, message, s.token_ids)
            choices.append(choice)
        self.metrics["completion_tokens"] += completion_tokens
        body: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": len(prompt_ids),
                "completion_tokens": completion_tokens,
                "total_tokens": len(prompt_ids) + completion_tokens,
            },
        }
        if req.return_token_ids:
            body["prompt_token_ids"] = prompt_ids
        return body
