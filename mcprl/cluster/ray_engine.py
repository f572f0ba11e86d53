"""Rollouts on a Ray cluster: `RayRollouts` (the driver's side) and `RolloutWorker` (the actor).

A worker owns a ToolPool opened on its own node (a stdio server starts there, per rollout as in
the local loop) and rolls a group out with the local loop's own code: the agent `rollout.agent`
names (mcprl.rollout.agents), recording through mcprl.rollout.recording against the policy endpoint, collected
by mcprl.rollout.gather. The driver hands groups to the workers (each runs up to `max_concurrency`
rollouts at once) and puts the groups back in the scenarios' order, so a seed sees the same
scenarios in the same order on either engine.

Faults: a worker that dies (killed, its node lost) fails the calls it had in flight with a
RayActorError; the driver starts a replacement and hands those groups to whichever worker is
free next. A group is accepted once, from the one call that returned it, so none is lost and
none is counted twice. A group that kills its worker MAX_RERUNS times is given up (recorded
with the reason in its `exceptions`, not trained on) rather than killing workers forever.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import anyio

from mcprl.errors import UserError
from mcprl.types import Scenario, TrajectoryGroup

try:
    import ray
    from ray.exceptions import RayActorError, RayTaskError
except ImportError:  # the local engine never gets here; say how to get the extra
    raise UserError('cluster.engine = "ray" needs Ray: pip install "mcprl[ray]"') from None

from mcprl.backends.base import Placement
from mcprl.cluster import actors
from mcprl.cluster.actors import where
from mcprl.model.trainable import Model
from mcprl.model.trainable import Model as PlainModel
from mcprl.rollout import agents
from mcprl.rollout.config import RolloutConfig
from mcprl.rollout.gather import gather_trajectory_groups
from mcprl.tools.config import ServerConfig
from mcprl.tools.pool import ToolPool

if TYPE_CHECKING:
    from pathlib import Path

    from mcprl.cluster import ClusterConfig
    from mcprl.cluster.replicas import PolicyReplicas
    from mcprl.cluster.trainer import RemoteTrainer
    from mcprl.model.trainable import TrainableModel

MAX_RERUNS = 2  # times a group is handed out again after its worker died running it


class RolloutWorker:
    """A Ray actor (async: its calls share one event loop) that rolls out groups on its node."""

    def __init__(self, server: dict[str, Any], agent: str, cwd: str):
        if os.path.isdir(cwd):  # a module:function agent imports from the driver's directory, when the node has it
            os.chdir(cwd)
        self.server, self.agent_spec = server, agent
        self.pool = self.agent = None
        self._owner: asyncio.Task | None = None  # the task that entered the pool, and leaves it at `close`
        self._closing = asyncio.Event()

    async def start(self) -> dict[str, Any]:
        """Open the MCP tools on this node and load the agent: where this worker runs, or what failed."""
        here = where()
        try:
            server = ServerConfig.model_validate(self.server)
            if server.connects:  # the spec is parsed here: `python` is this node's interpreter
                self.pool = await self._hold(ToolPool(server.spec()))
            self.agent = agents.load(self.agent_spec)
        except UserError as e:
            return {**here, "error": str(e)}
        return here

    async def run_group(
        self, model: dict[str, Any], scenario: dict[str, Any], per: int, config: dict[str, Any], server: dict[str, Any]
    ) -> dict[str, Any]:
        """`per` rollouts of one scenario, all at once, as the local loop runs them, against the server as the run
        now names it: tools grounding hid after this worker started are refused, homes it gave are given."""
        if server != self.server and self.pool is not None:
            settled = ServerConfig.model_validate(server)
            if hidden := set(settled.deny) - set(self.pool.spec.deny):
                self.pool.hide(hidden)
            if settled.private_home and not self.pool.spec.private_home:
                self.pool.give_private_homes()
        self.server = server
        m, s, rc = Model.model_validate(model), Scenario.model_validate(scenario), RolloutConfig.model_validate(config)
        [group] = await gather_trajectory_groups(
            [[self.agent(m, s, self.pool, rc.for_rollout(s.id, i)) for i in range(per)]], max_concurrency=per
        )
        return group.model_dump(mode="json")

    async def _hold(self, pool: ToolPool) -> ToolPool:
        """Enter `pool` in a task of its own, which leaves it at `close`: Ray runs each call of an async actor as
        a task of its own, and a pool's shared session (`per_rollout` off) lives in a task group that the task
        which entered it must exit."""
        opened: asyncio.Future[ToolPool] = asyncio.get_running_loop().create_future()

        async def own() -> None:
            try:
                async with pool:
                    opened.set_result(pool)
                    await self._closing.wait()
            except BaseException as e:
                if opened.done():
                    raise
                opened.set_exception(e)

        self._owner = asyncio.create_task(own())
        return await opened

    async def close(self) -> None:
        self._closing.set()
        if self._owner is not None:
            await self._owner


@dataclass
class Worker:
    actor: Any  # the actor handle
    node: str  # its Ray node id
    ip: str
    pid: int
    busy: int = 0  # groups in flight


def connect(address: str | None) -> bool:
    """Join (or, with no address, start) a Ray cluster; True when this call did (and shuts it down)."""
    if ray.is_initialized():
        return False
    if address and address != "auto":
        hostport = address.removeprefix("ray://")
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise UserError(f"cluster.address {address!r} is not auto, HOST:PORT or ray://HOST:PORT")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as e:
            raise UserError(
                f"cannot reach the Ray cluster at {address} ({e.strerror or e}); start it there "
                f"(`ray start --head --port={port}`) or fix cluster.address"
            ) from None
    extra = {} if address else {"include_dashboard": False}
    try:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False, **extra)
    except ConnectionError as e:
        raise UserError(
            f"cannot join the Ray cluster {address or ''}: {e}; start one with `ray start --head` "
            "or set cluster.address"
        ) from None
    return True


def check_resources(config: ClusterConfig) -> None:
    """The cluster has room for every actor the run asks for, or a UserError saying which kind is
    short, of what, and how to fix it. The actors are placed on paper in the order the run starts
    them: the rollout workers and the policy replicas SPREAD (each on the fitting node with the
    fewest of its kind), the trainer actor on the first node that fits."""
    nodes = [dict(n["Resources"]) for n in ray.nodes() if n["Alive"]]
    totals = {k: sum(n.get(k, 0) for n in nodes) for k in {k for n in nodes for k in n}}
    kinds = [
        (
            "rollout worker",
            config.rollout_workers,
            config.actor_resources,
            True,
            "cluster.rollout_workers",
            "worker_cpus, worker_gpus, worker_resources",
        ),
        (
            "trainer actor",
            int(config.trainer_actor),
            config.trainer_resources,
            False,
            "cluster.trainer_cpus",
            "trainer_cpus, trainer_gpus",
        ),
        (
            "policy replica",
            config.policy_replicas,
            config.replica_resources,
            True,
            "cluster.policy_replicas",
            "replica_cpus, replica_gpus",
        ),
    ]
    placed: list[str] = []
    for what, count, asks, spread, lower, settings in kinds:
        need = {k: v for k, v in asks.items() if v > 0}
        per_node = [0] * len(nodes)
        for _ in range(count):
            fits = [i for i, free in enumerate(nodes) if all(free.get(k, 0) + 1e-9 >= v for k, v in need.items())]
            if not fits:
                break
            i = min(fits, key=lambda i: per_node[i]) if spread else fits[0]
            for k, v in need.items():
                nodes[i][k] -= v
            per_node[i] += 1
        if (room := sum(per_node)) < count:
            asked = ", ".join(f"{k}={v:g}" for k, v in need.items())
            have = ", ".join(f"{k}={totals.get(k, 0):g}" for k in need)
            besides = f" beside the {' and the '.join(placed)}" if placed else ""
            raise UserError(
                f"the Ray cluster ({len(nodes)} node(s), {have} in all) has room for {room} {what}(s) of "
                f"{asked}{besides}, "
                f"not the {count} asked for; lower {lower} or the {what}'s resources ({settings}), or add nodes that "
                "have them"
            )
        if count:
            placed.append(what + ("s" if count > 1 else ""))


class RayRollouts:
    """The run's rollout workers: started and checked on entry, killed on exit; `run` rolls out groups."""

    def __init__(self, config: ClusterConfig, server: ServerConfig, agent: str, *, say: Callable[[str], None] = print):
        self.config, self.server, self.agent, self.say = config, server, agent, say
        self.workers: list[Worker | None] = []
        self.restarts = 0  # workers replaced since the last `metrics`
        self._started_ray = False
        self._slots: list[anyio.Lock] = []  # held while a slot's worker is being replaced
        self.replicas: PolicyReplicas | None = None  # the policy's replicas, once the runtime started them
        self.trainer: RemoteTrainer | None = None  # the trainer actor, once the runtime started it
        self.kind = actors.ActorKind(
            "rollout worker",
            RolloutWorker,
            {
                "num_cpus": config.worker_cpus,
                "num_gpus": config.worker_gpus,
                "resources": config.worker_resources,
                "scheduling_strategy": "SPREAD",
            },
            config.start_timeout_s,
            needs="every node that runs rollout workers needs the MCP server's command and the agent's code",
            remedy="free the resources it asks for",
            grace_s=5.0,
        )

    async def __aenter__(self) -> RayRollouts:
        self._started_ray = connect(self.config.address)
        try:
            check_resources(self.config)
            self.workers = [None] * self.config.rollout_workers
            self._slots = [anyio.Lock() for _ in self.workers]
            failed: list[UserError] = []

            async def start(i: int) -> None:
                try:
                    await self._start(i)
                except UserError as e:
                    failed.append(e)

            async with anyio.create_task_group() as tg:
                for i in range(len(self.workers)):
                    tg.start_soon(start, i)
            if failed:
                raise failed[0]
        except BaseException:
            await self.__aexit__()
            raise
        nodes = Counter(w.node for w in self.workers)
        self.say(
            f"{len(self.workers)} rollout workers on {len(nodes)} Ray node(s): "
            + ", ".join(f"{n[:8]}: {k}" for n, k in nodes.items())
        )
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            for w in self.workers:
                if w is not None:
                    await actors.retire(w.actor, self.kind.grace_s)
            if self.trainer is not None:
                await actors.retire(self.trainer.actor)
        finally:  # (an actor that outlives its kill, `actors.retire`'s error, still ends the Ray this run started)
            self.workers = []
            if self._started_ray:
                ray.shutdown()

    def placement(self, model: TrainableModel, dtype: str) -> Placement:
        """Where `model`'s endpoint and trainer run for these rollouts: on the policy replicas (and the
        trainer actor) with `policy_replicas`, else in the driver, listening on `policy_host`."""
        c = self.config
        if not c.policy_replicas:
            return Placement(host=c.policy_host)
        return Placement(
            start_endpoint=self.policy_endpoint(model),
            load_trainer=self.trainer_loader(model, dtype) if c.trainer_actor else None,
        )

    def policy_endpoint(self, model: TrainableModel) -> Callable[[Any], Awaitable[PolicyReplicas]]:
        """The Runtime's endpoint factory (`StartEndpoint`) for `policy_replicas` replicas of `model`'s base."""

        async def start(trainer: Any) -> PolicyReplicas:  # the replicas load their own copy of the base model
            from mcprl.cluster.replicas import PolicyReplicas

            self.replicas = PolicyReplicas(self.config, model.base_model, model.lora.rank, say=self.say)
            try:
                await self.replicas.start()
            except BaseException:
                self.replicas.close()
                raise
            return self.replicas

        return start

    def trainer_loader(self, model: TrainableModel, dtype: str) -> Callable[[Path | None], RemoteTrainer]:
        """The Runtime's trainer factory (`LoadTrainer`) for a trainer actor of `model` (blocks)."""

        def load(checkpoint: Path | None) -> RemoteTrainer:
            from mcprl.cluster.trainer import RemoteTrainer

            self.trainer = RemoteTrainer(self.config, model, checkpoint, dtype)
            self.say(f"trainer actor on Ray node {self.trainer.where['node'][:8]} (pid {self.trainer.where['pid']})")
            return self.trainer

        return load

    async def _start(self, i: int, dead: Worker | None = None) -> None:
        """A worker at slot `i` (in place of `dead`, ended first), started and ready."""
        args = (self.server.model_dump(mode="json"), self.agent, os.getcwd())
        actor = await (actors.start(self.kind, *args) if dead is None else actors.replace(self.kind, dead.actor, *args))
        self.workers[i] = Worker(actor.handle, actor.node, actor.info["ip"], actor.pid)

    async def _replace(self, i: int, dead: Worker) -> bool:
        """Start a worker in place of `dead` at slot `i` (once, however many calls saw it die); False
        when none could start."""
        async with self._slots[i]:
            if self.workers[i] is not dead:
                return self.workers[i] is not None
            self.restarts += 1
            self.say(f"rollout worker {i} (pid {dead.pid} on node {dead.node[:8]}) died; starting another")
            try:
                await self._start(i, dead)
            except UserError as e:
                self.workers[i] = None
                self.say(f"could not replace rollout worker {i}: {e}")
                return False
            return True

    async def run(
        self,
        model: Model,
        scenarios: list[Scenario],
        per: int,
        configs: list[RolloutConfig],
        *,
        max_concurrency: int,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[TrajectoryGroup]:
        """One group of `per` rollouts per scenario, each under its own rollout settings (`configs`),
        in the scenarios' order; each worker runs up to `max_concurrency` rollouts (whole groups) at once."""
        sent = PlainModel.model_validate(model.model_dump(include=set(PlainModel.model_fields)))
        sent.inference_base_url = reachable(sent.inference_base_url)
        sent_model = sent.model_dump(mode="json")
        todo = deque(range(len(scenarios)))
        out: list[TrajectoryGroup | None] = [None] * len(scenarios)
        reruns = [0] * len(scenarios)
        state = {"done": 0, "changed": anyio.Event()}

        def changed() -> None:
            state["changed"].set()
            state["changed"] = anyio.Event()

        def finish(i: int, group: TrajectoryGroup) -> None:
            group.scenario = scenarios[i]
            group.metadata["ray_reruns"] = reruns[i]
            out[i] = group
            state["done"] += 1
            if progress:
                progress(state["done"] * per, len(scenarios) * per)
            changed()

        async def lane(slot: int) -> None:
            while state["done"] < len(scenarios):
                if not todo:
                    await state["changed"].wait()
                    continue
                async with self._slots[slot]:  # wait while the slot's worker is being replaced
                    worker = self.workers[slot]
                if worker is None:  # the slot could not be refilled: the other lanes run the rest
                    return
                if not todo:
                    continue
                i = todo.popleft()
                worker.busy += 1
                try:
                    result = await worker.actor.run_group.remote(
                        sent_model,
                        scenarios[i].model_dump(mode="json"),
                        per,
                        configs[i].model_dump(mode="json"),
                        self.server.model_dump(mode="json"),
                    )
                except RayActorError:
                    reruns[i] += 1
                    if reruns[i] > MAX_RERUNS:
                        reason = f"rollout worker died {reruns[i]} times running this group; given up"
                        self.say(f"scenario {scenarios[i].id}: {reason} (it is not trained on)")
                        finish(i, TrajectoryGroup(exceptions=[reason]))
                    else:
                        todo.appendleft(i)
                        changed()
                    if not await self._replace(slot, worker):
                        return
                    continue
                except RayTaskError as e:  # the worker's own code failed (not a rollout: those are caught there)
                    finish(i, TrajectoryGroup(exceptions=[f"rollout worker failed: {e}"]))
                    continue
                finally:
                    worker.busy -= 1
                group = TrajectoryGroup.model_validate(result)
                group.metadata["ray_node"] = worker.node
                finish(i, group)

        lanes = max(1, max_concurrency // per)
        async with anyio.create_task_group() as tg:
            for _ in range(lanes):  # interleaved, so the first groups go one to each worker
                for slot in range(len(self.workers)):
                    tg.start_soon(lane, slot)
        if state["done"] < len(scenarios):
            raise RuntimeError(
                f"every rollout worker was lost with {len(scenarios) - state['done']} group(s) to go; see the lines "
                "above"
            )
        return out

    def metrics(self, groups: list[TrajectoryGroup]) -> dict[str, float]:
        """Rollouts per Ray node id, groups handed out again, and workers replaced since the last call;
        with policy replicas, the generations each replica answered and the replicas replaced."""
        per_node, per_replica = Counter(), Counter()
        for g in groups:
            if node := g.metadata.get("ray_node"):
                per_node[node] += len(g.trajectories)
            per_replica.update(gen.replica for t in g.trajectories for gen in t.generations if gen.replica)
        restarts, self.restarts = self.restarts, 0
        replicas = (
            {}
            if self.replicas is None
            else {
                **{f"cluster/generations/{r}": float(n) for r, n in sorted(per_replica.items())},
                "cluster/replica_restarts": float(self.replicas.take_restarts()),
            }
        )
        return {
            **{f"cluster/rollouts/{node}": float(n) for node, n in sorted(per_node.items())},
            "cluster/groups_rerun": float(sum(g.metadata.get("ray_reruns", 0) > 0 for g in groups)),
            "cluster/worker_restarts": float(restarts),
            **replicas,
        }


def reachable(url: str | None) -> str | None:
    """The policy endpoint's URL as other nodes reach it: an endpoint listening on every address
    (0.0.0.0, ::) is reached at this node's IP."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.hostname not in ("0.0.0.0", "::"):
        return url
    return urlunsplit(parts._replace(netloc=f"{ray.util.get_node_ip_address()}:{parts.port}"))
