"""The trainer as a Ray actor (`[cluster] trainer_actor = true`, with policy replicas): the GRPO
steps run in a `TrainerActor` on whichever node has room for `trainer_cpus`, and the driver's
Runtime drives it as its `Trainer` (mcprl.backends.base) through `RemoteTrainer`, so checkpoints,
resume and the adapters' swap into the replicas are the Runtime's as in the local loop.

What travels how: the actor loads the base model from the run's model spec on its node (as a
replica does); a step's groups go to it as arguments, its metrics come back; `save` brings the
adapter's and the optimizer's files back as bytes, which the driver writes into the checkpoint
directory (and from there the replicas get the adapter through the object store); resuming sends
the checkpoint's adapter files and optimizer state the other way. No filesystem is shared.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
import torch

from mcprl.backends.gpu_training import UnslothSettings, load_trainer
from mcprl.cluster.actors import ActorKind, replace_blocking, start_blocking, where
from mcprl.cluster.replicas import adapter_files
from mcprl.errors import UserError
from mcprl.model import weights
from mcprl.train import checkpoints
from mcprl.train.config import TrainConfig
from mcprl.train.grpo import GRPOTrainer

if TYPE_CHECKING:
    from mcprl.cluster import ClusterConfig
    from mcprl.model.trainable import TrainableModel
    from mcprl.types import TrajectoryGroup


class TrainerActor:
    """A Ray actor holding a GRPOTrainer over its own copy of the base model (loaded by `start`): on
    CPU, or with `gpu` Unsloth's (mcprl.backends.gpu_training) on the GPU Ray gave it."""

    def __init__(
        self,
        model_spec: str,
        lora: Any,
        adapter: dict[str, bytes] | None,
        threads: int,
        dtype: str,
        gpu: bool,
        cwd: str,
    ):
        if os.path.isdir(cwd):  # a module:function loss (train.loss) imports from the driver's directory, when here
            os.chdir(cwd)
        self.spec, self.lora, self.adapter = model_spec, lora, adapter
        self.threads, self.dtype, self.gpu = threads, dtype, gpu
        self.dir = Path(tempfile.mkdtemp(prefix="mcprl-trainer-"))
        self.trainer = None

    def start(self) -> dict[str, Any]:
        """Load the trainer (from the adapter sent, if any): where it runs, or what failed."""
        here = {**where(), "dir": str(self.dir)}
        try:
            self._load()
        except UserError as e:
            return {**here, "error": str(e)}
        except Exception as e:  # e.g. a model directory transformers cannot read
            return {**here, "error": f"{type(e).__name__}: {e}"}
        return here

    def _load(self) -> None:
        torch.set_num_threads(self.threads)
        if self.adapter is not None:
            for name, data in self.adapter.items():
                (self.dir / name).write_bytes(data)
        adapter_dir = self.dir if self.adapter is not None else None
        self.adapter = None  # written: no second copy in memory
        if self.gpu:
            # Ray set CUDA_VISIBLE_DEVICES to this actor's GPU: torch's device 0
            self.trainer = load_trainer(
                weights.resolve(self.spec), self.lora, adapter_dir, UnslothSettings(dtype=self.dtype), 0
            )
        else:
            self.trainer = GRPOTrainer(
                weights.load_model(self.spec, dtype=self.dtype),
                weights.load_tokenizer(self.spec),
                self.lora,
                adapter_dir=adapter_dir,
            )

    def step(
        self, groups: list[TrajectoryGroup], config: TrainConfig, rescore_constrained: bool, loss: str | None
    ) -> dict[str, float]:
        return self.trainer.step(groups, config, rescore_constrained, loss)

    def save(self) -> dict[str, bytes]:
        out = Path(tempfile.mkdtemp(dir=self.dir))
        try:
            self.trainer.save(out)
            return {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
        finally:  # the driver writes the checkpoint: nothing of it stays here
            shutil.rmtree(out, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def load_optimizer(self, state: bytes, config: TrainConfig) -> None:
        path = self.dir / "optimizer.pt"
        path.write_bytes(state)
        self.trainer.load_optimizer(path, config)


class RemoteTrainer:
    """The Runtime's `Trainer` over a `TrainerActor`; its methods block (the Runtime calls them off the event loop).

    An actor that dies (killed, its node lost) is replaced from the run's latest checkpoint (its
    adapter and optimizer state), and the call it died in is made again: a step's groups are
    kept until the step is saved, so a death between the step and its save takes the step again
    rather than saving the checkpoint's weights as the new step. A second death in one call ends
    the run (`--resume` continues it). The step's metrics count the replacements (`trainer_restarts`)."""

    model = None  # the PEFT model lives in the actor

    def __init__(self, config: ClusterConfig, model: TrainableModel, checkpoint: Path | None, dtype: str):
        self.config, self.trainable, self.dtype = config, model, dtype
        self.kind = ActorKind(
            "trainer actor",
            TrainerActor,
            {"num_cpus": config.trainer_cpus, "num_gpus": config.trainer_gpus},
            config.start_timeout_s,
            needs=f"the node that runs it needs the model {model.base_model!r}",
            remedy="lower cluster.trainer_cpus",
        )
        self.restarts = 0
        self.taken: tuple | None = None  # the step taken since the last save: what a replacement takes again
        self.started = start_blocking(self.kind, *self._arguments(checkpoint))

    @property
    def actor(self) -> Any:
        return self.started.handle

    @property
    def where(self) -> dict[str, Any]:
        """Where the actor runs: node, ip, pid, and its working directory (`dir`)."""
        return self.started.info

    def _arguments(self, checkpoint: Path | None) -> tuple:
        config, model = self.config, self.trainable
        return (
            model.base_model,
            model.lora,
            None if checkpoint is None else adapter_files(checkpoint),
            max(1, int(config.trainer_cpus)),
            self.dtype,
            config.trainer_gpus > 0,
            os.getcwd(),
        )

    def _replace(self) -> None:
        latest = checkpoints.latest_step(self.trainable.checkpoints_dir)
        ckpt = None if latest is None else checkpoints.step_dir(self.trainable.checkpoints_dir, latest)
        self.started = replace_blocking(self.kind, self.actor, *self._arguments(ckpt))
        self.restarts += 1
        if ckpt is not None and (ckpt / "optimizer.pt").exists():
            self.load_optimizer(ckpt / "optimizer.pt", TrainConfig())  # (each step sets its own learning rate)

    def step(
        self,
        groups: list[TrajectoryGroup],
        config: TrainConfig,
        rescore_constrained: bool = False,
        loss: str | None = None,
    ) -> dict[str, float]:
        self.taken = (groups, config, rescore_constrained, loss)
        try:
            metrics = ray.get(self.actor.step.remote(*self.taken))
        except ray.exceptions.RayActorError:
            self._replace()
            metrics = ray.get(self.actor.step.remote(*self.taken))
        restarts, self.restarts = self.restarts, 0
        return {**metrics, "trainer_restarts": float(restarts)}

    def save(self, out: Path) -> None:
        try:
            files = ray.get(self.actor.save.remote())
        except ray.exceptions.RayActorError:
            self._replace()
            if self.taken is not None:
                ray.get(self.actor.step.remote(*self.taken))
            files = ray.get(self.actor.save.remote())
        self.taken = None
        for name, data in files.items():
            (out / name).write_bytes(data)

    def load_optimizer(self, path: Path, config: TrainConfig) -> None:
        ray.get(self.actor.load_optimizer.remote(path.read_bytes(), config))
