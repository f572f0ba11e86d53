"""The CPU runtime: our batching engine behind an in-process HTTP endpoint, and GRPOTrainer on a
second module tree that shares the engine's frozen base weights (one copy in memory; only the
LoRA weights differ)."""

from __future__ import annotations

import copy
import secrets
from pathlib import Path

import anyio
import torch

from mcprl.backends.base import Runtime, StartEndpoint
from mcprl.model import weights
from mcprl.serving.engine import Engine
from mcprl.serving.local import LocalEndpoint
from mcprl.train.grpo import GRPOTrainer


class EngineEndpoint:
    """The CPU runtime's endpoint: `engine` behind an in-process endpoint on `host:port`. It samples
    in the same memory the trainer steps in, with nothing to free for a step, so it never sleeps."""

    reports_timings = False
    masks_constrained_logprobs = False  # the engine records the policy's own logprobs under a grammar (sampler.py)

    def __init__(self, engine: Engine, host: str, port: int):
        self.engine = engine
        self.api_key = secrets.token_urlsafe(24)  # the run's clients get it through Model.inference_api_key
        self.http = LocalEndpoint(engine, host=host, port=port, api_key=self.api_key)

    @property
    def base_url(self) -> str:
        return self.http.base_url

    async def load_adapter(self, name: str, path: Path) -> None:
        await anyio.to_thread.run_sync(self.engine.load_adapter, name, path)

    async def unload_adapter(self, name: str) -> None:
        await anyio.to_thread.run_sync(self.engine.unload_adapter, name)

    async def sleep(self) -> bool:
        return False

    async def wake(self) -> None:
        pass

    def close(self) -> None:
        self.http.close()


class CpuRuntime(Runtime):
    """`Runtime` with a GRPOTrainer and an `EngineEndpoint` over one copy of the base weights, or
    with the endpoint `start_endpoint` starts (the policy replicas of mcprl.cluster)."""

    def __init__(
        self,
        model,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_batch_rows: int = 32,
        threads: int | None = None,
        dtype: str = "auto",
        start_endpoint: StartEndpoint | None = None,
    ):
        super().__init__(model, self._load_trainer, start_endpoint or self._start_endpoint)
        self._host, self._port, self._max_batch_rows, self._threads, self._dtype = (
            host,
            port,
            max_batch_rows,
            threads,
            dtype,
        )
        self._serve_model = self._tokenizer = None

    def _load_trainer(self, checkpoint: Path | None):
        if self._threads:
            torch.set_num_threads(self._threads)
        base = self.model.base_model
        self._tokenizer = weights.load_tokenizer(base)
        self._serve_model = weights.load_model(base, dtype=self._dtype)
        # The trainer's own module tree (PEFT wraps modules in place) over the same frozen tensors.
        memo = {id(t): t for t in [*self._serve_model.parameters(), *self._serve_model.buffers()]}
        return GRPOTrainer(
            copy.deepcopy(self._serve_model, memo=memo), self._tokenizer, self.model.lora, adapter_dir=checkpoint
        )

    async def _start_endpoint(self, trainer) -> EngineEndpoint:
        base = self.model.base_model
        engine = Engine(
            base,
            model=self._serve_model,
            tokenizer=self._tokenizer,
            served_name=base,
            max_batch_rows=self._max_batch_rows,
        )
        return await anyio.to_thread.run_sync(EngineEndpoint, engine, self._host, self._port)
