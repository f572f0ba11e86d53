"""The CPU runtime: our batching engine behind an in-process HTTP endpoint, and GRPOTrainer on a
second module tree that shares the engine's frozen base weights (one copy in memory; only the
LoRA weights differ). Checkpoints are hot-swapped into serving after every step."""

from __future__ import annotations

import copy
from functools import partial

import anyio

from mcprl.backends.base import Runtime
from mcprl.train import checkpoints
from mcprl.train.config import TrainConfig
from mcprl.types import TrajectoryGroup


class CpuRuntime(Runtime):
    def __init__(self, model, *, host: str = "127.0.0.1", port: int = 0, max_batch_rows: int = 32, threads: int | None = None,
                 dtype: str = "auto"):
        super().__init__(model)
        self._host, self._port, self._max_batch_rows, self._threads, self._dtype = host, port, max_batch_rows, threads, dtype
        self.engine = self.server = self.trainer = None

    @property
    def base_url(self) -> str:
        return self.server.base_url

    async def start(self) -> None:
        await anyio.to_thread.run_sync(self._start)

    def _start(self) -> None:
        import torch

        from mcprl import weights
        from mcprl.serving.engine import Engine
        from mcprl.serving.local import LocalServer
        from mcprl.train.grpo import GRPOTrainer

        if self._threads:
            torch.set_num_threads(self._threads)
        base = self.model.base_model
        latest = self.check_resumable()
        tok = weights.load_tokenizer(base)
        serve_model = weights.load_model(base, dtype=self._dtype)
        # The trainer's own module tree (PEFT wraps modules in place) over the same frozen tensors.
        train_model = copy.deepcopy(serve_model, memo={id(t): t for t in [*serve_model.parameters(), *serve_model.buffers()]})
        self.engine = Engine(base, model=serve_model, tokenizer=tok, served_name=base, max_batch_rows=self._max_batch_rows)
        if latest is None:
            self.trainer = GRPOTrainer(train_model, tok, self.model.lora)
            self.step = 0
            checkpoints.write_checkpoint(self.root, 0, self.trainer.save, self.checkpoint_state())
        else:
            ckpt = checkpoints.step_dir(self.root, latest)
            self.trainer = GRPOTrainer(train_model, tok, self.model.lora, adapter_dir=ckpt)
            if (ckpt / "optimizer.pt").exists():
                self.trainer.load_optimizer(ckpt / "optimizer.pt", TrainConfig())
            self.step = latest
        self.engine.load_adapter(self.served_name, checkpoints.step_dir(self.root, self.step))
        self.server = LocalServer(self.engine, host=self._host, port=self._port)

    async def train(self, groups: list[TrajectoryGroup], config: TrainConfig) -> dict[str, float]:
        metrics = await anyio.to_thread.run_sync(self.trainer.step, groups, config)
        await anyio.to_thread.run_sync(partial(self._commit, metrics))
        return metrics

    def _commit(self, metrics: dict[str, float]) -> None:
        prev = self.served_name
        step = self.step + 1
        ckpt = checkpoints.write_checkpoint(self.root, step, self.trainer.save, self.checkpoint_state(metrics))
        self.step = step
        self.engine.load_adapter(self.served_name, ckpt)  # hot swap: the new step serves at once
        self.engine.unload_adapter(prev)

    async def close(self) -> None:
        if self.server is not None:
            await anyio.to_thread.run_sync(self.server.close)
