"""Policy replicas on a Ray cluster (`[cluster] policy_replicas = N`): N replica actors, each
behind its own OpenAI-compatible endpoint (`EngineReplica`: our CPU engine; `VllmReplica`, with
`replica_gpus > 0`: vLLM on the GPUs Ray gave it), and `PolicyReplicas`, the driver's side, which
the Runtime drives as its `Endpoint` (mcprl.backends.base): `base_url` is the proxy in front of the
replicas (mcprl.cluster.router), and `load_adapter`/`unload_adapter` reach every replica.

What travels how: each replica loads the base model from the run's model spec on its own node
(a path, or a name under that node's MCPRL_HOME); a new adapter's files (adapter_config.json,
adapter_model.safetensors: not the optimizer state) are read by the driver, put in Ray's object
store once, and each replica writes them into its own temporary directory and loads them, all
before `load_adapter` returns, so before any rollout asks for that version. No filesystem is
shared.

State (the replicas serving, the adapters loaded, the replacements) lives on one event loop, the
proxy's, on its own thread; the Runtime's calls are handed to it. A replica joins service only
with exactly the adapters the run serves loaded (`_join`, under the adapters' lock), so every
serving replica can answer for every version a rollout may ask for.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import ray
import torch
import uvicorn
from ray.exceptions import RayActorError

from mcprl.backends.gpu import tool_chat_template, visible_devices
from mcprl.backends.gpu_serving import VllmLaunch, VllmProcess, VllmSettings, free_port
from mcprl.cluster import actors
from mcprl.cluster.actors import ActorKind, where
from mcprl.cluster.router import Replica, least_outstanding, proxy_app
from mcprl.errors import UserError
from mcprl.model import weights
from mcprl.serving.engine import Engine
from mcprl.serving.local import LocalEndpoint

if TYPE_CHECKING:
    from mcprl.cluster import ClusterConfig

PING_TIMEOUT_S = 10  # a replica that does not answer a ping in this long is taken for dead


class ReplicaActor(ABC):
    """What every replica actor does around its endpoint: start it and say where it runs (or, in one
    line, what failed), write each adapter it is sent into its own directory, delete them at the end.
    A kind of replica says how it serves (`serve`, `load`, `unload`, `running`, `stop`). Its methods
    run one at a time."""

    def __init__(self, model_spec: str, host: str):
        self.spec, self.host = model_spec, host
        self.dir = Path(tempfile.mkdtemp(prefix="mcprl-replica-"))

    def start(self) -> dict[str, Any]:
        """Serve the base model: where this replica runs and its endpoint, or what failed."""
        here = {**where(), "dir": str(self.dir)}
        key = secrets.token_urlsafe(24)
        try:
            port = self.serve(key)
        except UserError as e:
            return {**here, "error": str(e)}
        except Exception as e:  # e.g. a model directory transformers cannot read: said in one line by the driver
            return {**here, "error": f"{type(e).__name__}: {e}"}
        host = here["ip"] if self.host in ("0.0.0.0", "::") else self.host
        return {**here, "url": f"http://{host}:{port}/v1", "key": key}

    def load_adapter(self, name: str, files: dict[str, bytes]) -> None:
        """Write the adapter's files into this replica's own directory and serve them as `name`."""
        out = self.dir / name.replace("/", "_")
        out.mkdir(parents=True, exist_ok=True)
        for file, data in files.items():
            (out / file).write_bytes(data)
        self.load(name, out)

    def unload_adapter(self, name: str) -> None:
        self.unload(name)
        shutil.rmtree(self.dir / name.replace("/", "_"), ignore_errors=True)

    def ping(self) -> bool:
        """Whether it still serves (the actor answering is not enough where the endpoint is a process)."""
        return self.running()

    def close(self) -> None:
        """Stop serving and delete the adapters written here (a replica that is killed outright leaves them)."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- what each kind of replica says --
    @abstractmethod
    def serve(self, key: str) -> int:
        """Start serving behind `key`; the port."""

    @abstractmethod
    def load(self, name: str, path: Path) -> None:
        """Serve the adapter in `path` as `name`."""

    @abstractmethod
    def unload(self, name: str) -> None: ...

    @abstractmethod
    def running(self) -> bool:
        """Whether the vLLM process still runs."""

    @abstractmethod
    def stop(self) -> None: ...


class EngineReplica(ReplicaActor):
    """A Ray actor: our engine serving the base model from `model_spec` on `host` (a random port), with
    the adapters it is sent; the endpoint serves on its own thread."""

    def __init__(self, model_spec: str, host: str, threads: int, max_batch_rows: int):
        super().__init__(model_spec, host)
        self.threads, self.max_batch_rows = threads, max_batch_rows
        self.engine = self.endpoint = None

    def serve(self, key: str) -> int:
        torch.set_num_threads(self.threads)
        self.engine = Engine(self.spec, max_batch_rows=self.max_batch_rows)
        self.endpoint = LocalEndpoint(self.engine, host=self.host, api_key=key)
        return self.endpoint.port

    def load(self, name: str, path: Path) -> None:
        self.engine.load_adapter(name, path)

    def unload(self, name: str) -> None:
        self.engine.unload_adapter(name)

    def running(self) -> bool:
        return True  # the engine runs in the actor's own process

    def stop(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()


class VllmReplica(ReplicaActor):
    """A Ray actor: `vllm serve` (a subprocess, mcprl.backends.gpu_serving) on the GPUs Ray gave this
    actor, serving the base model from `model_spec` and the adapters it is sent. It never sleeps (no
    trainer shares its GPUs), and its vLLM process dies with the actor, even a killed one
    (`VllmProcess.start`), so a replacement finds the GPUs free."""

    def __init__(self, model_spec: str, host: str, lora_rank: int, settings: VllmSettings, memory_utilization: float):
        super().__init__(model_spec, host)
        self.lora_rank, self.settings, self.memory_utilization = lora_rank, settings, memory_utilization
        self.vllm: VllmProcess | None = None

    def serve(self, key: str) -> int:
        path = weights.resolve(self.spec)
        # Ray set CUDA_VISIBLE_DEVICES to this actor's GPUs (one, for a share of a GPU)
        gpus = visible_devices(list(range(max(1, len(ray.get_gpu_ids())))), os.environ.get("CUDA_VISIBLE_DEVICES"))
        launch = VllmLaunch(
            settings=self.settings,
            model_path=path,
            served_name=self.spec,
            host=self.host,
            port=free_port(self.host),
            lora_rank=self.lora_rank,
            gpus=gpus,
            gpu_memory_utilization=self.memory_utilization,
            sleep_mode=False,
            chat_template=tool_chat_template(path, self.dir),
            api_key=key,
        )
        self.vllm = VllmProcess.start(
            launch.command(), launch.env(os.environ), self.dir / "vllm.log", launch.base_url, key
        )
        anyio.run(self.vllm.wait_ready, self.settings.startup_timeout_s)
        return launch.port

    def load(self, name: str, path: Path) -> None:
        anyio.run(self.vllm.load_adapter, name, path)

    def unload(self, name: str) -> None:
        anyio.run(self.vllm.unload_adapter, name)

    def running(self) -> bool:
        return self.vllm is not None and self.vllm.process is not None and self.vllm.process.poll() is None

    def stop(self) -> None:
        if self.vllm is not None:
            self.vllm.close()


def adapter_files(path: Path) -> dict[str, bytes]:
    """What a replica needs of a checkpoint directory to serve its adapter (not the optimizer state)."""
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file() and p.name.startswith("adapter_")}


class PolicyReplicas:
    """The Runtime's `Endpoint` over `config.policy_replicas` replica actors (see the module doc)."""

    reports_timings = False

    def __init__(self, config: ClusterConfig, model_spec: str, lora_rank: int, *, say: Callable[[str], None] = print):
        self.config, self.spec, self.lora_rank, self.say = config, model_spec, lora_rank, say
        # Our engine records the policy's own logprobs under a grammar; vLLM's are under the grammar's mask.
        self.masks_constrained_logprobs = config.replica_gpus > 0
        self.api_key = secrets.token_urlsafe(
            24
        )  # the proxy's: the run's clients get it through Model.inference_api_key
        self.serving: list[Replica] = []
        self.all: list[Replica] = []  # started and not given up: serving, joining, or dead until replaced
        self.loaded: dict[str, ray.ObjectRef] = {}  # adapter name -> its files in the object store, in load order
        self.restarts = 0  # replicas replaced since the last `take_restarts`
        self.started = 0  # replicas started, to name the next one
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="mcprl-replicas", daemon=True)
        self._thread.start()
        self._server = None
        self._replacing: set[asyncio.Task] = set()  # replacements under way
        self.base_url = ""

    # -- the Runtime's side: each call runs on the pool's loop --------------------------------------

    def _on_loop(self, coro: Coroutine) -> asyncio.Future:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    async def start(self) -> None:
        await self._on_loop(self._start())

    async def load_adapter(self, name: str, path: Path) -> None:
        await self._on_loop(self._load(name, adapter_files(path)))

    async def unload_adapter(self, name: str) -> None:
        await self._on_loop(self._unload(name))

    async def sleep(self) -> bool:
        return False

    async def wake(self) -> None:
        pass

    def close(self) -> None:
        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(timeout=30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)

    def take_restarts(self) -> int:
        restarts, self.restarts = self.restarts, 0
        return restarts

    # -- on the pool's loop ------------------------------------------------------------------------

    async def _start(self) -> None:
        self._changed = asyncio.Condition()
        self._adapters = asyncio.Lock()  # held while the served adapters change or a replica joins
        replicas = await asyncio.gather(
            *(self._start_one() for _ in range(self.config.policy_replicas)), return_exceptions=True
        )
        if failed := [r for r in replicas if isinstance(r, BaseException)]:
            await self._close()
            raise failed[0]
        for r in replicas:
            await self._join(r)
        c = self.config
        self._server = uvicorn.Server(
            uvicorn.Config(
                proxy_app(self, self.api_key), host=c.policy_host, port=0, log_level="warning", lifespan="off"
            )
        )
        self._proxy = self.loop.create_task(self._server.serve())
        while not self._server.started:
            await asyncio.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://{c.policy_host}:{port}/v1"
        nodes = {r.node[:8] for r in replicas}
        self.say(f"{len(replicas)} policy replicas on {len(nodes)} Ray node(s), behind {self.base_url}")

    def _kind(self) -> tuple[ActorKind, tuple]:
        """The replicas' kind of actor, and the arguments each is built from."""
        c = self.config
        options = {"num_cpus": c.replica_cpus, "num_gpus": c.replica_gpus, "scheduling_strategy": "SPREAD"}
        timeout, cls = c.start_timeout_s, EngineReplica
        args: tuple = (self.spec, c.replica_host, max(1, int(c.replica_cpus)), c.replica_batch_rows)
        if c.replica_gpus:
            vllm = VllmSettings()
            timeout = max(timeout, vllm.startup_timeout_s)  # a cold vLLM compiles for minutes
            share = 0.9 * min(1.0, c.replica_gpus)  # of each of its GPUs, as a GPU runtime of its own takes
            cls, args = VllmReplica, (self.spec, c.replica_host, self.lora_rank, vllm, share)
        kind = ActorKind(
            "policy replica",
            cls,
            options,
            timeout,
            needs=f"every node that runs a replica needs the model {self.spec!r}: the same path, or under its "
            "MCPRL_HOME",
            remedy="free the resources it asks for",
        )
        return kind, args

    async def _start_one(self, dead: Replica | None = None) -> Replica:
        """A new replica (in place of `dead`, ended first), started and ready, not yet serving."""
        kind, args = self._kind()
        actor = await (actors.start(kind, *args) if dead is None else actors.replace(kind, dead.actor, *args))
        i = actor.info
        replica = Replica(f"r{self.started}", i["url"], i["key"], actor.handle, i["node"], i["pid"], i["dir"])
        self.started += 1
        self.all.append(replica)
        return replica

    async def _join(self, r: Replica) -> None:
        """Bring `r` into service with exactly the run's adapters loaded."""
        async with self._adapters:
            for name, ref in self.loaded.items():
                if name not in r.adapters:
                    await r.actor.load_adapter.remote(name, ref)
                    r.adapters.add(name)
            for name in r.adapters - set(self.loaded):
                await r.actor.unload_adapter.remote(name)
                r.adapters.discard(name)
            self.serving.append(r)
        async with self._changed:
            self._changed.notify_all()

    async def _each_serving(self, call: Callable[[Replica], Coroutine]) -> None:
        """`call` on every serving replica at once; one that died meanwhile goes to `failed`."""
        replicas = list(self.serving)
        results = await asyncio.gather(*(call(r) for r in replicas), return_exceptions=True)
        for r, result in zip(replicas, results):
            if isinstance(result, RayActorError):
                self.loop.create_task(self.failed(r))
            elif isinstance(result, BaseException):
                raise result

    async def _load(self, name: str, files: dict[str, bytes]) -> None:
        # A new version is served at full strength: replacements under way join first (bounded by start_timeout_s).
        await asyncio.gather(*self._replacing, return_exceptions=True)
        async with self._adapters:
            ref = ray.put(files)  # once: every replica reads it from the object store

            async def load(r: Replica) -> None:
                await r.actor.load_adapter.remote(name, ref)
                r.adapters.add(name)

            await self._each_serving(load)
            self.loaded[name] = ref

    async def _unload(self, name: str) -> None:
        async with self._adapters:
            self.loaded.pop(name, None)

            async def unload(r: Replica) -> None:
                await r.actor.unload_adapter.remote(name)
                r.adapters.discard(name)

            await self._each_serving(unload)

    async def acquire(self) -> Replica:
        async with self._changed:
            await self._changed.wait_for(lambda: self.serving or not self.all)
        if not self.serving:
            raise RuntimeError("every policy replica was lost; see the lines above")
        return least_outstanding(self.serving)

    async def failed(self, replica: Replica) -> None:
        if replica not in self.serving:  # already being checked, or replaced
            return
        self.serving.remove(replica)
        try:
            alive = await asyncio.wait_for(replica.actor.ping.remote(), PING_TIMEOUT_S)
        except (TimeoutError, RayActorError):
            alive = False
        if alive:  # after all (a dropped connection): back into service
            await self._join(replica)
            return
        self.restarts += 1
        self.say(f"policy replica {replica.name} (pid {replica.pid} on node {replica.node[:8]}) died; starting another")
        task = self.loop.create_task(
            self._replace(replica)
        )  # the request that saw it die goes on meanwhile, on another replica
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def _replace(self, dead: Replica) -> None:
        try:  # (a VllmReplica whose vLLM died closes what it holds as it is ended)
            await self._join(await self._start_one(dead))
        except (UserError, RayActorError) as e:
            self.say(f"could not replace policy replica {dead.name}: {e}")
        finally:
            actors.kill(dead.actor)  # (ended by the replacement's start; here also when that was cancelled)
            if dead in self.all:
                self.all.remove(dead)  # only now: until then, a request waits for the replacement
            async with self._changed:
                self._changed.notify_all()

    async def _close(self) -> None:
        for task in list(self._replacing):
            task.cancel()
        if self._server is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._proxy, 10)
        await asyncio.gather(*(actors.retire(r.actor) for r in self.all))
        self.all, self.serving = [], []
