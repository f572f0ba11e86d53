"""Policy replicas on Ray ([cluster] policy_replicas, mcprl.cluster.replicas and .router): the
least-outstanding choice, and on the two-node loopback cluster of test_cluster a run whose
rollouts sample from two replicas, one of them killed during step 1, as is the trainer actor."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import anyio
import pytest

from mcprl.cluster.router import Replica, least_outstanding
from tests.cli_runner import run_cli
from tests.cluster.test_cluster import ARGS, cluster, groups, rows, train_in_process  # noqa: F401 (cluster: the fixture)


def test_a_request_goes_to_the_replica_with_the_fewest_outstanding():
    a, b, c = replicas = [Replica(n, f"http://{n}/v1", "k") for n in "abc"]
    a.outstanding, b.outstanding, c.outstanding = 2, 1, 1
    assert least_outstanding(replicas) is b
    b.outstanding = 3
    assert least_outstanding(replicas) is c
    for r in replicas:
        r.outstanding = 0
    # requests that never overlap take turns (ties go to the replica chosen least recently)
    assert [least_outstanding(replicas).name for _ in range(6)] == ["a", "b", "c"] * 2


def test_a_request_a_dead_replica_cannot_answer_goes_to_another():
    """The proxy: the caller's key checked, a replica that refuses the connection handed to the
    pool's `failed`, the request answered by the next one, which the reply's header names."""
    import socket

    import httpx

    from mcprl.cluster.router import REPLICA_HEADER, proxy_app
    from tests.fake_llm import FakeLLM

    with socket.socket() as s:  # a port nothing listens on: a dead replica's
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class Pool:
        def __init__(self, replicas):
            self.serving, self.failures = replicas, []

        async def acquire(self):
            return least_outstanding(self.serving)

        async def failed(self, replica):
            self.serving.remove(replica)
            self.failures.append(replica.name)

    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with FakeLLM(["hello"]) as llm:
        dead, live = Replica("r0", f"http://127.0.0.1:{port}/v1", "k0"), Replica("r1", llm.base_url, "k1")
        pool = Pool([dead, live])

        async def main():
            transport = httpx.ASGITransport(app=proxy_app(pool, "key"))
            async with httpx.AsyncClient(transport=transport, base_url="http://proxy") as client:
                denied = await client.post("/v1/chat/completions", json=request, headers={"authorization": "Bearer k1"})
                answered = await client.post(
                    "/v1/chat/completions", json=request, headers={"authorization": "Bearer key"}
                )
            return denied, answered

        denied, answered = anyio.run(main)
        assert len(llm.requests) == 1
    assert denied.status_code == 401
    assert answered.status_code == 200 and answered.json()["choices"][0]["message"]["content"] == "hello"
    assert answered.headers[REPLICA_HEADER] == "r1" and pool.failures == ["r0"]
    assert dead.outstanding == live.outstanding == 0


def test_policy_replicas_without_the_ray_engine_is_an_error():
    from mcprl.errors import UserError
    from mcprl.run.config import load_config

    with pytest.raises(UserError, match=r"policy_replicas runs the policy on Ray actors: set cluster.engine"):
        load_config(None, {"cluster.policy_replicas": 2})


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"policy_replicas": 1, "replica_gpus": 1},
            r"vLLM replicas \(replica_gpus > 0\) leave the driver no GPU runtime to train in: set "
            r"cluster.trainer_actor = true",
        ),
        (
            {"policy_replicas": 1, "replica_gpus": 1.5, "trainer_actor": True},
            r"replica_gpus=1.5: vLLM splits a model over whole GPUs",
        ),
        (
            {"policy_replicas": 1, "trainer_gpus": 1},
            r"trainer_gpus is what the trainer actor reserves: set cluster.trainer_actor = true",
        ),
    ],
)
def test_gpu_settings_that_cannot_work_together_are_one_line(settings, message):
    from mcprl.errors import UserError
    from mcprl.run.config import load_config

    with pytest.raises(UserError, match=message):
        load_config(None, {"cluster.engine": "ray", **{f"cluster.{k}": v for k, v in settings.items()}})


def test_vllm_replicas_have_the_trainer_rescore_constrained_turns():
    """vLLM's logprobs under a grammar are under its mask, not the policy's: the trainer computes those turns' own."""
    from mcprl.cluster import ClusterConfig
    from mcprl.cluster.replicas import PolicyReplicas

    for gpus, masks in ((0, False), (0.5, True)):
        config = ClusterConfig(engine="ray", policy_replicas=1, replica_gpus=gpus, trainer_actor=True)
        pool = PolicyReplicas(config, "m", 8, say=lambda _: None)
        try:
            assert pool.masks_constrained_logprobs is masks
        finally:
            pool.close()


killed: list[str] = []
trainer: list[int] = []
killed_dirs: list[str] = []  # the working directories of the replica and the trainer actor killed
dirs: list[str] = []  # every replica's and trainer actor's working directory


async def kill_a_replica_at_step_1(run) -> None:
    """After the base evaluation, SIGKILL the first serving replica, before step 1's rollouts ask it,
    and the trainer actor, before step 1 is trained."""
    log = run.dir / "metrics.jsonl"
    while not (log.exists() and '"eval"' in log.read_text()):
        await anyio.sleep(0.02)
    replica = run.rollouts.replicas.serving[0]
    os.kill(replica.pid, signal.SIGKILL)
    killed.append(replica.name)
    trainer.append(run.rollouts.trainer.where["pid"])
    killed_dirs.extend([replica.dir, run.rollouts.trainer.where["dir"]])
    os.kill(trainer[0], signal.SIGKILL)
    # every actor's working directory, the replacements' included (the replacing trainer starts once step 1 trains)
    while not any(r.name == "r2" for r in run.rollouts.replicas.all) or run.rollouts.trainer.where["pid"] == trainer[0]:
        await anyio.sleep(0.02)
    dirs.extend([*killed_dirs, *(r.dir for r in run.rollouts.replicas.all), run.rollouts.trainer.where["dir"]])


@pytest.fixture(scope="module")
def replica_run(cluster, tiny_model_dir, tmp_path_factory) -> Path:  # noqa: F811
    """A 2-step run sampling from 2 replicas (half a CPU each, beside 2 rollout workers and the
    trainer actor, a quarter each), one killed at step 1; the driver holds no model."""
    return train_in_process(
        tmp_path_factory.mktemp("replica-home"),
        tiny_model_dir,
        "rr",
        kill_a_replica_at_step_1,
        engine="ray",
        address=cluster.address,
        rollout_workers=2,
        worker_cpus=0.25,
        policy_replicas=2,
        replica_cpus=0.5,
        trainer_actor=True,
        trainer_cpus=0.25,
    )


def generations(run_dir: Path, f: str) -> list[dict]:
    return [gen for g in groups(run_dir / f) for t in g["trajectories"] for gen in t["generations"]]


@pytest.mark.integration
def test_each_step_samples_its_own_version_from_every_replica(replica_run):
    """Step 2's generations name the step-1 adapter: it went through the object store to every replica."""
    train = [r for r in rows(replica_run) if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 2] and all(r["failed_rollouts"] == 0 for r in train)
    step1, step2 = (generations(replica_run, f"trajectories/step_{s:04d}.jsonl") for s in (1, 2))
    assert {g["model"] for g in step1} == {"rr@0"} and {g["model"] for g in step2} == {"rr@1"}
    # one of r0, r1 was killed before step 1's rollouts; the other and its replacement r2 served the rest
    [survivor] = {"r0", "r1"} - set(killed)
    assert {g["replica"] for g in step1 + step2} <= {survivor, "r2"}
    assert {g["replica"] for g in step2} == {survivor, "r2"}  # both loaded the step-1 adapter
    final = generations(replica_run, "eval/step_0002.jsonl")
    assert final and {g["model"] for g in final} == {"rr@2"}
    for row, gens in zip(train, (step1, step2)):
        per_replica = {
            k.removeprefix("cluster/generations/"): v for k, v in row.items() if k.startswith("cluster/generations/")
        }
        assert sum(per_replica.values()) == len(gens)


@pytest.mark.integration
def test_the_trainer_actor_trains_and_the_driver_writes_its_checkpoints(replica_run):
    assert trainer and trainer[0] != os.getpid()
    train = [r for r in rows(replica_run) if r["kind"] == "train"]
    assert [r["train/groups"] for r in train] == [2, 2]  # the actor's step metrics came back
    # the actor killed before step 1 was replaced from checkpoint 0, and step 1 taken by the new one
    assert [r["train/trainer_restarts"] for r in train] == [1, 0]
    for step in (1, 2):  # the actor's files, written by the driver: what a resume reads
        ckpt = replica_run / "checkpoints" / f"{step:04d}"
        files = {p.name for p in ckpt.iterdir()}
        assert {"adapter_config.json", "adapter_model.safetensors"} <= files
        assert ("optimizer.pt" in files) == any(
            r["train/groups_trained"] for r in train[:step]
        )  # once a step has trained


@pytest.mark.integration
def test_a_replica_killed_mid_step_is_replaced_and_the_step_completes(replica_run):
    assert len(killed) == 1 and killed[0] in ("r0", "r1")
    train = [r for r in rows(replica_run) if r["kind"] == "train"]
    assert train[0]["cluster/replica_restarts"] == 1 and train[1]["cluster/replica_restarts"] == 0
    gs = groups(replica_run / "trajectories" / "step_0001.jsonl")
    ids = [t["id"] for g in gs for t in g["trajectories"]]
    assert len(ids) == len(set(ids)) == 4  # none lost, none twice
    assert not any(t["error"] for g in gs for t in g["trajectories"])


@pytest.mark.integration
def test_the_actors_that_ended_with_the_run_leave_no_files(replica_run):
    """The replicas and the trainer actor alive at the end deleted their adapters and checkpoints
    (a trainer's steps are not kept where it ran: the driver writes them); only the two killed at
    step 1 could not."""
    assert len(set(dirs)) == 5 and all(dirs)  # r0, r1, the replacement r2; the trainer and its replacement
    assert {d for d in dirs if Path(d).exists()} == set(killed_dirs)


@pytest.mark.integration
def test_a_cluster_short_of_replica_cpus_is_one_line(cluster, home, monkeypatch, capsys):  # noqa: F811
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        *ARGS,
        "--cluster",
        "ray",
        "--ray-address",
        cluster.address,
        "--policy-replicas",
        "2",
        "--replica-cpus",
        "2",
    )
    assert code != 0 and len(err.strip().splitlines()) == 1, err
    assert "has room for 0 policy replica(s) of CPU=2 beside the rollout workers, not the 2 asked for" in err
    assert "lower cluster.policy_replicas or the policy replica's resources (replica_cpus, replica_gpus)" in err


@pytest.mark.integration
def test_a_cluster_without_the_gpus_asked_for_is_one_line(cluster, home, monkeypatch, capsys):  # noqa: F811
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        *ARGS,
        "--cluster",
        "ray",
        "--ray-address",
        cluster.address,
        "--worker-cpus",
        "0.25",
        "--policy-replicas",
        "1",
        "--replica-cpus",
        "0.25",
        "--replica-gpus",
        "1",
        "--trainer-actor",
        "--trainer-cpus",
        "0.25",
    )
    assert code != 0 and len(err.strip().splitlines()) == 1, err
    assert (
        "has room for 0 policy replica(s) of CPU=0.25, GPU=1 beside the rollout workers and the trainer actor, not the "
        "1 asked for" in err
    )
    assert "GPU=0 in all" in err


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


STANDIN_VLLM = Path(__file__).resolve().parents[1] / "standin_vllm"


@pytest.fixture(scope="module")
def gpu_cluster():
    """One loopback node that says it has a GPU, its Ray workers with the stand-in vLLM of
    tests/standin_vllm (our engine behind vLLM's command line and control API) on their PYTHONPATH."""
    from ray.cluster_utils import Cluster

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(STANDIN_VLLM), *sys.path]
    )  # the raylet's, so its workers'; not this process's
    try:
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 1, "include_dashboard": False})
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = before
    try:
        c.wait_for_nodes()
        yield c
    finally:
        c.shutdown()


vllm_replicas: list[dict] = []  # the first replica's launch, as its stand-in vLLM saw it


async def kill_the_vllm_replica_at_step_1(run) -> None:
    """After the base evaluation, note how the replica's vLLM was started, then SIGKILL the replica's
    actor (not its vLLM)."""
    import httpx

    log = run.dir / "metrics.jsonl"
    while not (log.exists() and '"eval"' in log.read_text()):
        await anyio.sleep(0.02)
    replica = run.rollouts.replicas.serving[0]
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {replica.key}"}) as client:
        launch = (await client.get(replica.url.removesuffix("/v1") + "/standin/launch")).json()
    vllm_replicas.append({"name": replica.name, **launch})
    os.kill(replica.pid, signal.SIGKILL)


@pytest.mark.integration
def test_a_run_on_vllm_replicas_trains_and_a_killed_replica_takes_its_vllm_with_it(
    gpu_cluster, tiny_model_dir, tmp_path
):
    """A 2-step run whose policy is a vLLM replica on half a GPU (the stand-in vLLM on CPU) and whose
    steps the trainer actor takes: vLLM started as the GPU runtime's less sleep mode, with a share of
    the GPU; each step's adapter served through it; the replica killed at step 1 is replaced, and its
    vLLM, orphaned, ends too (else it would hold the GPU the replacement needs)."""
    run_dir = train_in_process(
        tmp_path,
        tiny_model_dir,
        "vr",
        kill_the_vllm_replica_at_step_1,
        engine="ray",
        address=gpu_cluster.address,
        rollout_workers=1,
        worker_cpus=0.25,
        policy_replicas=1,
        replica_cpus=0.25,
        replica_gpus=0.5,
        trainer_actor=True,
        trainer_cpus=0.25,
    )
    [first] = vllm_replicas
    argv = first["argv"]
    assert (
        argv[:2] == ["serve", str(tiny_model_dir)]
        and "--enable-sleep-mode" not in argv
        and first["cuda_visible_devices"] == "0"
    )
    assert (
        argv[argv.index("--gpu-memory-utilization") + 1] == "0.45"
        and argv[argv.index("--tensor-parallel-size") + 1] == "1"
    )
    assert (
        argv[argv.index("--logprobs-mode") + 1] == "processed_logprobs"
        and argv[argv.index("--tool-call-parser") + 1] == "mcprl"
    )
    deadline = time.monotonic() + 30
    while alive(first["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(first["pid"])
    train = [r for r in rows(run_dir) if r["kind"] == "train"]
    # replaced once: counted in the step whose row is written after the loss is seen (its vLLM, orphaned, may serve
    # step 1's rollouts still; the adapter load after step 1 finds the actor gone), and step 2 samples the new one
    assert [r["step"] for r in train] == [1, 2] and sum(r["cluster/replica_restarts"] for r in train) == 1
    step2 = generations(run_dir, "trajectories/step_0002.jsonl")
    assert {g["model"] for g in step2} == {"vr@1"} and {g["replica"] for g in step2} == {"r1"}
    assert all(g["prompt_token_ids"] and len(g["completion_token_ids"]) == len(g["logprobs"]) for g in step2)
