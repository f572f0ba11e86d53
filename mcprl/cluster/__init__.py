"""Where a run's rollouts run: in this process (`engine = "local"`, the default) or on rollout
workers spread over a Ray cluster (`engine = "ray"`, `pip install "mcprl[ray]"`).

    [cluster]
    engine = "ray"
    address = "auto"          # or "HOST:PORT" of a running cluster; unset: a Ray started by the run
    rollout_workers = 4
    worker_cpus = 1
    policy_replicas = 2       # 0 (the default): the policy is served in the driver
    replica_cpus = 2
    replica_gpus = 1          # 0 (the default): each replica is our CPU engine; else vLLM on its GPUs
    trainer_actor = true      # the GRPO steps in an actor (needed with vLLM replicas)
    trainer_gpus = 1          # 0: the actor trains on CPU; else with Unsloth on its GPU

Each Ray worker is an actor (scheduled SPREAD over the nodes) that owns its MCP sessions: a stdio
server runs on the worker's node, beside its rollouts. It runs the stage code the local loop runs
(the agent of `rollout.agent`, mcprl.rollout.recording, mcprl.rollout.gather) against the policy endpoint; the
driver sends it scenarios and gets TrajectoryGroups back (mcprl.cluster.ray_engine). With
`policy_replicas`, the policy is sampled from replica actors behind one proxy in the driver
(mcprl.cluster.replicas, mcprl.cluster.router) rather than from the driver's own engine.

This module holds the settings only: nothing here imports Ray, so a local run never loads it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from mcprl.cluster.ray_engine import RayRollouts
    from mcprl.tools.config import ServerConfig


class ClusterConfig(BaseModel):
    """Placement of a run's rollouts."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["local", "ray"] = Field(
        default="local", description="where rollouts run: this process, or rollout workers on a Ray cluster"
    )
    address: str | None = Field(
        default=None,
        description="Ray cluster to join: auto, HOST:PORT or ray://HOST:PORT (unset: start a Ray for this run)",
    )
    rollout_workers: int = Field(default=2, ge=1, description="Ray rollout workers (actors spread over the nodes)")
    worker_cpus: float = Field(default=1.0, ge=0, description="CPUs each rollout worker reserves")
    worker_gpus: float = Field(default=0.0, ge=0, description="GPUs each rollout worker reserves")
    worker_resources: dict[str, float] = Field(
        default_factory=dict, description="custom Ray resources each rollout worker reserves"
    )
    policy_host: str = Field(
        default="127.0.0.1",
        description="address the policy endpoint listens on; 0.0.0.0 when workers run on other machines",
    )
    policy_replicas: int = Field(
        default=0,
        ge=0,
        description="policy replicas (Ray actors, each our CPU engine or vLLM) that serve the rollouts; 0: the policy "
        "is served in this process",
    )
    replica_cpus: float = Field(
        default=1.0, gt=0, description="CPUs each policy replica reserves (and its torch threads)"
    )
    replica_gpus: float = Field(
        default=0.0,
        ge=0,
        description="GPUs each policy replica reserves; above 0 it serves with vLLM on them (tensor parallel over "
        "whole GPUs, a share of one below 1), at 0 with our CPU engine",
    )
    replica_host: str = Field(
        default="127.0.0.1",
        description="address each policy replica listens on (always behind its own API key); 0.0.0.0 when replicas run "
        "on other machines than the driver",
    )
    replica_batch_rows: int = Field(default=32, ge=1, description="rows each policy replica samples in one batch")
    trainer_actor: bool = Field(
        default=False,
        description="take the GRPO steps in a Ray actor rather than in this process (needs policy_replicas)",
    )
    trainer_cpus: float = Field(
        default=1.0, gt=0, description="CPUs the trainer actor reserves (and its torch threads)"
    )
    trainer_gpus: float = Field(
        default=0.0, ge=0, description="GPUs the trainer actor reserves; above 0 it trains with Unsloth on its GPU"
    )
    start_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="seconds a rollout worker, replica or the trainer actor may take to start (a vLLM replica: at "
        "least its vLLM's startup_timeout_s)",
    )

    @model_validator(mode="after")
    def _replicas_need_ray(self) -> ClusterConfig:
        if self.policy_replicas and self.engine != "ray":
            raise ValueError(
                'policy_replicas runs the policy on Ray actors: set cluster.engine = "ray" (--cluster ray) too'
            )
        if self.trainer_actor and not self.policy_replicas:
            raise ValueError(
                "trainer_actor needs the policy served by replicas (the driver then holds no model): "
                "set cluster.policy_replicas to 1 or more"
            )
        if self.replica_gpus and not self.trainer_actor:
            raise ValueError(
                "vLLM replicas (replica_gpus > 0) leave the driver no GPU runtime to train in: "
                "set cluster.trainer_actor = true (and trainer_gpus = 1 to train on a GPU)"
            )
        if self.replica_gpus > 1 and self.replica_gpus != int(self.replica_gpus):
            raise ValueError(
                f"replica_gpus={self.replica_gpus:g}: vLLM splits a model over whole GPUs; give a whole number, or a "
                "share of one below 1"
            )
        if self.trainer_gpus and not self.trainer_actor:
            raise ValueError("trainer_gpus is what the trainer actor reserves: set cluster.trainer_actor = true too")
        return self

    @property
    def actor_resources(self) -> dict[str, float]:
        """What one rollout worker asks Ray for, in Ray's resource names."""
        return {"CPU": self.worker_cpus, "GPU": self.worker_gpus, **self.worker_resources}

    @property
    def replica_resources(self) -> dict[str, float]:
        """What one policy replica asks Ray for."""
        return {"CPU": self.replica_cpus, "GPU": self.replica_gpus}

    @property
    def trainer_resources(self) -> dict[str, float]:
        """What the trainer actor asks Ray for."""
        return {"CPU": self.trainer_cpus, "GPU": self.trainer_gpus}


@asynccontextmanager
async def open_rollouts(
    config: ClusterConfig, server: ServerConfig, agent: str, *, say: Callable[[str], None] = print
) -> AsyncIterator[RayRollouts | None]:
    """The run's Ray rollout workers, started and checked (None for the local engine): an
    unreachable cluster, one short of the resources asked for, or a node that cannot start the
    MCP server is a one-line UserError here, before any rollout."""
    if config.engine == "local":
        yield None
        return
    # Lazy: Ray (an optional extra) loads only for engine = "ray"; the local engine runs without it
    from mcprl.cluster.ray_engine import RayRollouts

    async with RayRollouts(config, server, agent, say=say) as rollouts:
        yield rollouts
