"""A policy endpoint whose *sampling* is scripted: the real Engine, HTTP app, tokenizer, prompt
rendering and tool-call parser, but each reply's text comes from a script instead of the model.

    with scripted_endpoint(tiny_model_dir, ["<tool_call>{...}</tool_call>", "425"]) as (model, engine):
        traj = await rollout(model, scenario, pool)

Each scripted text is tokenized (plus the end-of-turn token) and returned with logprob 0, so
trajectories carry real prompt token ids and splice-able completions. `handler(request) -> str`
may compute replies instead of a fixed list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import anyio

from mcprl.model.trainable import Model
from mcprl.serving.engine import Engine
from mcprl.serving.local import LocalEndpoint
from mcprl.serving.sampler import Sampled


class ScriptedEngine(Engine):
    def __init__(self, model_dir: Path, replies: Sequence[str] = (), handler: Callable[[dict], str] | None = None):
        super().__init__(str(model_dir), served_name="policy")
        self.script = list(replies)
        self.handler = handler
        self.seen: list[dict] = []

    def _run_batch(self, first, join=True):
        """Answer `first` from the script, as the engine answers a batch (no request joins it)."""
        try:
            replies = self._sample_batch(first, sum(p.request.n for p in first))
        except Exception as e:
            replies = [None] * len(first)
            for p in first:
                p.error = e
        for p, samples in zip(first, replies, strict=True):
            p.result = samples
            anyio.from_thread.run_sync(p.done.set)

    def _sample_batch(self, batch, n_rows):
        out = []
        for p in batch:
            self.seen.append(p.request.model_dump())
            texts = []
            for _ in range(p.request.n):
                if self.handler is not None:
                    texts.append(self.handler(p.request.model_dump()))
                elif self.script:
                    texts.append(self.script.pop(0))
                else:
                    raise AssertionError("scripted policy ran out of replies")
            samples = []
            for t in texts:
                ids = self.tokenizer(t, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
                samples.append(Sampled(ids, [0.0] * len(ids), "stop"))
            out.append(samples)
        return out


@contextmanager
def scripted_endpoint(
    model_dir: Path, replies: Sequence[str] = (), handler=None, engine: ScriptedEngine | None = None
) -> Iterator[tuple[Model, ScriptedEngine]]:
    """The policy behind a real endpoint; `engine`: a ScriptedEngine of another kind (NoPromptIds, ...)."""
    engine = engine or ScriptedEngine(model_dir, replies, handler)
    server = LocalEndpoint(engine)
    try:
        yield (
            Model(
                name="policy", inference_base_url=server.base_url, inference_api_key="x", inference_model_name="policy"
            ),
            engine,
        )
    finally:
        server.close()


def call(name: str, **arguments) -> str:
    import json

    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


class NoPromptIds(ScriptedEngine):
    """An endpoint that does not return `prompt_token_ids` (as some OpenAI-compatible servers don't)."""

    def _response(self, *args, **kwargs):
        body = super()._response(*args, **kwargs)
        del body["prompt_token_ids"]
        return body


class NoLogprobs(ScriptedEngine):
    """An endpoint that returns token ids but drops the logprobs (`drop`: all of them, or all but the first)."""

    def __init__(self, *args, drop: str = "all", **kwargs):
        super().__init__(*args, **kwargs)
        self.drop = drop

    def _response(self, *args, **kwargs):
        body = super()._response(*args, **kwargs)
        for choice in body["choices"]:
            if self.drop == "all":
                choice["logprobs"] = None
            else:
                choice["logprobs"]["content"] = choice["logprobs"]["content"][:1]
        return body
