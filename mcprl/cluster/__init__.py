"""Where a run's rollouts run: in this process (`engine = "local"`, the default) or on rollout
workers spread over a Ray cluster (`engine = "ray"`, `pip install "mcprl[ray]"`).

    [cluster]
    engine = "ray"
    address = "auto"          # or "HOST:PORT" of a running cluster; unset: a Ray started by the run
    rollout_workers = 4
    worker_cpus = 1

Each Ray worker is an actor (scheduled SPREAD over the nodes) that owns its MCP sessions: a stdio
server runs on the worker's node, beside its rollouts. It runs the stage code the local loop runs
(the agent of `rollout.agent`, mcprl.recording, mcprl.gather) against the policy endpoint; the
driver sends it scenarios and gets TrajectoryGroups back (mcprl.cluster.ray_engine).

This module holds the settings only: nothing here imports Ray, so a local run never loads it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from mcprl.cluster.ray_engine import RayRollouts
    from mcprl.tools.discovery import ServerConfig


class ClusterConfig(BaseModel):
    """Placement of a run's rollouts."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["local", "ray"] = Field(default="local", description="where rollouts run: this process, or rollout workers on a Ray cluster")
    address: str | None = Field(default=None, description="Ray cluster to join: auto, HOST:PORT or ray://HOST:PORT (unset: start a Ray for this run)")
    rollout_workers: int = Field(default=2, ge=1, description="Ray rollout workers (actors spread over the nodes)")
    worker_cpus: float = Field(default=1.0, ge=0, description="CPUs each rollout worker reserves")
    worker_gpus: float = Field(default=0.0, ge=0, description="GPUs each rollout worker reserves")
    worker_resources: dict[str, float] = Field(default_factory=dict, description="custom Ray resources each rollout worker reserves")
    policy_host: str = Field(default="127.0.0.1", description="address the policy endpoint listens on; 0.0.0.0 when workers run on other machines")
    start_timeout_s: float = Field(default=120.0, gt=0, description="seconds a rollout worker may take to start (and discover the tools)")

    @property
    def actor_resources(self) -> dict[str, float]:
        """What one rollout worker asks Ray for, in Ray's resource names."""
        return {"CPU": self.worker_cpus, "GPU": self.worker_gpus, **self.worker_resources}


@asynccontextmanager
async def open_rollouts(config: ClusterConfig, server: ServerConfig, agent: str, *,
                        say: Callable[[str], None] = print) -> AsyncIterator[RayRollouts | None]:
    """The run's Ray rollout workers, started and checked (None for the local engine): an
    unreachable cluster, one short of the resources asked for, or a node that cannot start the
    MCP server is a one-line UserError here, before any rollout."""
    if config.engine == "local":
        yield None
        return
    from mcprl.cluster.ray_engine import RayRollouts

    async with RayRollouts(config, server, agent, say=say) as rollouts:
        yield rollouts
