"""What a backend does for a TrainableModel: serve it (OpenAI-compatible, `NAME@STEP`), train it
one GRPO step at a time, and keep its checkpoints.

`Runtime` owns that lifecycle once, for every device: resume from the latest checkpoint (or write
step 0), serve it, and around each training step checkpoint the new step, swap it into serving
and drop the old one. A runtime is built from two parts, passed in as factories: a `Trainer`
(how gradient steps are taken) and an `Endpoint` (how the policy is sampled). The CPU runtime
(`cpu.py`) and the GPU runtime (`gpu.py`) differ only in these parts."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from mcprl.errors import UserError
from mcprl.train import checkpoints
from mcprl.train.config import TrainConfig

if TYPE_CHECKING:
    from mcprl.model.trainable import TrainableModel
    from mcprl.types import TrajectoryGroup


class Trainer(Protocol):
    """Takes GRPO steps on one model's LoRA adapter (`mcprl.train.grpo.GRPOTrainer` and its
    Unsloth subclass). Its methods block; the runtime calls them off the event loop."""

    model: Any  # the PEFT model being trained

    def step(
        self,
        groups: list[TrajectoryGroup],
        config: TrainConfig,
        rescore_constrained: bool = False,
        loss: str | None = None,
    ) -> dict[str, float]:
        """One optimizer update on `groups`; its metrics (also when there was nothing to train).
        `rescore_constrained`: the old-policy logprobs of grammar-constrained turns are the trainer's
        own, not the recorded ones (see `Endpoint.masks_constrained_logprobs`). `loss`: the objective
        (mcprl.train.loss.objective) this step optimises, default `config.loss`."""
        ...

    def save(self, out: Path) -> None:
        """Write the adapter (PEFT format) and the optimizer state (`optimizer.pt`) into the fresh directory `out`."""
        ...

    def load_optimizer(self, path: Path, config: TrainConfig) -> None:
        """Restore the optimizer state `save` wrote to `path`."""
        ...


class Endpoint(Protocol):
    """The OpenAI-compatible endpoint that samples the base model and the adapters loaded into it,
    each by name. `close` blocks (the runtime calls it off the event loop); the rest are async."""

    # Whether a step's metrics carry this endpoint's control times: `swap_seconds` (load the new
    # step, unload the old) and, when it slept, `sleep_seconds` and `wake_seconds`.
    reports_timings: bool
    # Whether the logprobs it records for a grammar-constrained turn are under the grammar's mask
    # (vLLM's), not the policy's own (our engine's): the trainer then computes those turns' old-policy
    # logprobs itself (`Trainer.step(rescore_constrained=True)`).
    masks_constrained_logprobs: bool

    @property
    def base_url(self) -> str:
        """The OpenAI base URL clients use (ending in `/v1`)."""
        ...

    @property
    def api_key(self) -> str: ...

    async def load_adapter(self, name: str, path: Path) -> None:
        """Serve the PEFT adapter in directory `path` as model `name`, while serving everything else."""
        ...

    async def unload_adapter(self, name: str) -> None: ...

    async def sleep(self) -> bool:
        """Free the device for a training step, if the endpoint shares it with the trainer. True when
        it did (and `wake` must follow the step), False when there was nothing to free."""
        ...

    async def wake(self) -> None:
        """Serve again after `sleep` returned True."""
        ...

    def close(self) -> None:
        """Stop serving and release what the endpoint holds."""
        ...


# The parts' factories. `LoadTrainer(checkpoint)`: the trainer, with the adapter of the checkpoint
# directory to resume from (None: a fresh adapter); it may block. `StartEndpoint(trainer)`: an endpoint
# that is ready for requests (the trainer is loaded first: an endpoint sharing its GPU sizes itself
# to what the trainer left).
LoadTrainer = Callable[[Path | None], Trainer]
StartEndpoint = Callable[[Trainer], Awaitable[Endpoint]]


@dataclass(frozen=True)
class Placement:
    """Where a model's two parts run, passed to `LocalBackend` explicitly. Each part left None is this
    machine's runtime's own (CPU: our engine in-process and GRPOTrainer; GPU: vLLM and Unsloth):

    - `start_endpoint`: the endpoint started elsewhere (mcprl.cluster: policy replicas on Ray);
    - `load_trainer`: the trainer loaded elsewhere (mcprl.cluster: the trainer actor), which needs
      `start_endpoint` too (the local runtimes' endpoints share their trainer's weights or device);
    - `host`: where this machine's endpoint listens (None: the runtime's default, loopback), e.g.
      0.0.0.0 for rollout workers on other machines."""

    start_endpoint: StartEndpoint | None = None
    load_trainer: LoadTrainer | None = None
    host: str | None = None

    def __post_init__(self) -> None:
        if self.load_trainer is not None and self.start_endpoint is None:
            raise UserError(
                "a trainer placed elsewhere (cluster.trainer_actor) needs the policy served elsewhere too "
                "(cluster.policy_replicas)"
            )


class Runtime:
    """Serving + training for one registered model, from a trainer and an endpoint (see the module doc)."""

    def __init__(self, model: TrainableModel, load_trainer: LoadTrainer, start_endpoint: StartEndpoint):
        self.model = model
        self.root = model.checkpoints_dir
        self.step = 0
        self.load_trainer = load_trainer
        self.start_endpoint = start_endpoint
        self.trainer: Trainer | None = None
        self.endpoint: Endpoint | None = None
        self.served: list[str] = []  # the adapters being served, oldest first

    @property
    def served_name(self) -> str:
        return f"{self.model.name}@{self.step}"

    @property
    def base_url(self) -> str:
        return self.endpoint.base_url

    @property
    def api_key(self) -> str:
        return self.endpoint.api_key

    async def start(self) -> None:
        """Build the trainer from the latest checkpoint (writing step 0 if there is none), start the
        endpoint, serve `NAME@STEP`."""
        latest = self.check_resumable()
        self.trainer = await anyio.to_thread.run_sync(self._resume, latest)
        self.step = latest or 0
        self.endpoint = await self.start_endpoint(self.trainer)
        try:
            await self.endpoint.load_adapter(self.served_name, checkpoints.step_dir(self.root, self.step))
            self.served = [self.served_name]
        except BaseException:
            await self.close()
            raise

    def _resume(self, latest: int | None) -> Trainer:
        ckpt = None if latest is None else checkpoints.step_dir(self.root, latest)
        trainer = self.load_trainer(ckpt)
        if ckpt is None:
            checkpoints.write_checkpoint(self.root, 0, trainer.save, self.checkpoint_state())
        elif (ckpt / "optimizer.pt").exists():
            trainer.load_optimizer(ckpt / "optimizer.pt", TrainConfig())
        return trainer

    async def train(
        self, groups: list[TrajectoryGroup], config: TrainConfig, loss: str | None = None
    ) -> dict[str, float]:
        """One GRPO step (the endpoint asleep through it where it shares the trainer's device), checkpoint
        `step+1`, then serve it as `NAME@STEP+1` and drop the steps before the last
        `config.max_off_policy_steps + 1` (with 0: the previous step)."""
        endpoint, step = self.endpoint, self.step + 1
        timings: dict[str, float] = {}
        t = time.perf_counter()
        slept = await endpoint.sleep()
        if slept:
            timings["sleep_seconds"] = time.perf_counter() - t
        try:
            metrics, ckpt = await anyio.to_thread.run_sync(self._step, groups, config, step, loss)
        finally:
            if slept:
                t = time.perf_counter()
                await endpoint.wake()
                timings["wake_seconds"] = time.perf_counter() - t
        t = time.perf_counter()
        await endpoint.load_adapter(f"{self.model.name}@{step}", ckpt)
        self.step = step
        self.served.append(self.served_name)
        # With the asynchronous pipeline (K = max_off_policy_steps > 0), rollouts started on any of
        # the last K+1 steps may still be running: mcprl.run.pipeline.Pipeline starts step t's rollouts on
        # version t-K or later, and training cannot pass version t before step t is collected.
        # Those adapters stay served; older ones no rollout uses go.
        while len(self.served) > config.max_off_policy_steps + 1:
            await endpoint.unload_adapter(self.served.pop(0))
        if endpoint.reports_timings:
            metrics.update(timings, swap_seconds=time.perf_counter() - t)
            await anyio.to_thread.run_sync(checkpoints.record_metrics, ckpt, metrics)
        return metrics

    def _step(
        self, groups: list[TrajectoryGroup], config: TrainConfig, step: int, loss: str | None
    ) -> tuple[dict[str, float], Path]:
        metrics = self.trainer.step(
            groups, config, rescore_constrained=self.endpoint.masks_constrained_logprobs, loss=loss
        )
        return metrics, checkpoints.write_checkpoint(self.root, step, self.trainer.save, self.checkpoint_state(metrics))

    async def close(self) -> None:
        if self.endpoint is not None:
            await anyio.to_thread.run_sync(self.endpoint.close)

    def checkpoint_state(self, metrics: dict[str, float] | None = None) -> dict:
        m = self.model
        return {
            "name": m.name,
            "project": m.project,
            "base_model": m.base_model,
            "lora": m.lora.model_dump(),
            "metrics": metrics or {},
            "time": time.time(),
        }

    def check_resumable(self) -> int | None:
        """Latest checkpoint step, after checking it belongs to this model's base."""
        latest = checkpoints.latest_step(self.root)
        if latest is not None:
            st = checkpoints.read_state(checkpoints.step_dir(self.root, latest))
            if st.get("base_model") != self.model.base_model:
                raise UserError(
                    f"{self.root}: checkpoints were trained on {st.get('base_model')!r}, not "
                    f"{self.model.base_model!r}; use another --name or the same base model"
                )
            lora = self.model.lora.model_dump()
            if (trained := st["lora"]) != lora:
                changed = next(k for k in lora if trained.get(k) != lora[k])
                raise UserError(
                    f"{self.root}: checkpoints were trained with lora.{changed}={trained.get(changed)!r}, not "
                    f"{lora[changed]!r}; "
                    "use another --name or the run's own [lora] settings"
                )
        return latest


def write_model_card(model_dir: Path, model: TrainableModel) -> None:
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "model.json").write_text(json.dumps(model.model_dump(mode="json"), indent=2))
