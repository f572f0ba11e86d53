"""Rollouts on Ray ([cluster] engine = "ray", mcprl.cluster): a two-node Ray cluster on loopback
(two raylets, one CPU each), the tiny model and the real stdio calculator server.

With RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 Ray binds and dials 127.0.0.1 throughout (left alone it
uses the machine's interface address), so the tests send traffic only to loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from mcprl.errors import UserError
from tests.cli_runner import run_cli

pytestmark = pytest.mark.integration

ARGS = [
    "--server",
    "python -m mcprl.servers.calculator",
    "--no-per-rollout",
    "--tasks",
    "calculator",
    "-n",
    "12",
    "--group-size",
    "2",
    "--groups-per-step",
    "2",
    "--max-extra-groups",
    "0",
    "--max-tokens",
    "6",
    "--max-turns",
    "2",
    "--eval-every",
    "0",
    "--val-size",
    "2",
    "--seed",
    "3",
]


@pytest.fixture(scope="module")
def cluster():
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # for this process and the runs it starts
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        c.add_node(num_cpus=1)
        c.wait_for_nodes()
        yield c
    finally:
        c.shutdown()


def node_ids(cluster) -> set[str]:
    return {n.node_id for n in cluster.list_all_nodes()}


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


def groups(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def train_in_process(home: Path, tiny_model_dir: Path, name: str, during=None, k: int = 0, **cluster) -> Path:
    """A 2-step run of the tiny model against the calculator server (in this process: no second
    interpreter to start), its rollouts up to `k` steps ahead of training (train.max_off_policy_steps);
    `during(run)` runs beside it. Returns the run's directory."""
    from mcprl.run.config import load_config
    from mcprl.run.runner import TrainingRun

    cfg = load_config(
        None,
        {
            "server.target": "python -m mcprl.servers.calculator",
            # the calculator keeps no state: one server per worker serves its rollouts, not a process each
            # (~1.5 s of CPU to start, ten or more a run)
            "server.per_rollout": False,
            "scenarios.tasks": "calculator",
            "scenarios.n": 12,
            "scenarios.val_size": 1,
            "group_size": 2,
            "groups_per_step": 2,
            "max_extra_groups": 0,
            "seed": 3,
            "rollout.max_tokens": 6,
            "rollout.max_turns": 2,
            "eval_every": 0,
            "steps": 2,
            "model": str(tiny_model_dir),
            "name": name,
            "train.max_off_policy_steps": k,
            **{f"cluster.{key}": v for key, v in cluster.items()},
        },
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MCPRL_HOME", str(home))
        run = TrainingRun(cfg, say=lambda _: None)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            if during is not None:
                tg.start_soon(during, run)
            await run.run()
            tg.cancel_scope.cancel()

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MCPRL_HOME", str(home))
        anyio.run(main)
    return run.dir


killed: list[int] = []


async def kill_a_worker_mid_step_1(run) -> None:
    """After the base evaluation, SIGKILL the first rollout worker that takes a group of step 1."""
    log = run.dir / "metrics.jsonl"
    while not (log.exists() and '"eval"' in log.read_text()):
        await anyio.sleep(0.02)
    while not (busy := [w for w in run.rollouts.workers if w is not None and w.busy]):
        await anyio.sleep(0.005)
    os.kill(busy[0].pid, signal.SIGKILL)
    killed.append(busy[0].pid)


@pytest.fixture(scope="module")
def ray_run(cluster, tiny_model_dir, tmp_path_factory) -> Path:
    """A 2-step run on the cluster's two rollout workers, one of them killed during step 1."""
    return train_in_process(
        tmp_path_factory.mktemp("ray-home"),
        tiny_model_dir,
        "r",
        kill_a_worker_mid_step_1,
        engine="ray",
        address=cluster.address,
        rollout_workers=2,
        worker_cpus=1,
        start_timeout_s=300,  # a loaded machine (the suite's other worker) starts a worker in minutes, not seconds
    )


def per_node(row: dict) -> dict[str, float]:
    return {k.removeprefix("cluster/rollouts/"): v for k, v in row.items() if k.startswith("cluster/rollouts/")}


def test_a_two_step_run_rolls_out_on_both_nodes(ray_run, cluster):
    train = [r for r in rows(ray_run) if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 2]
    for row in train:
        assert sum(per_node(row).values()) == 4  # 2 groups of 2, each rollout counted once
    assert set(per_node(train[0])) | set(per_node(train[1])) == node_ids(cluster)  # SPREAD: both nodes took groups
    assert train[1]["cluster/worker_restarts"] == 0 and train[1]["cluster/groups_rerun"] == 0
    for step in (1, 2):
        gs = groups(ray_run / "trajectories" / f"step_{step:04d}.jsonl")
        assert [len(g["trajectories"]) for g in gs] == [2, 2] and not any(g["exceptions"] for g in gs)
        assert all(t["generations"] for g in gs for t in g["trajectories"])  # the policy was sampled, from the workers


def test_a_worker_killed_mid_step_is_replaced_and_its_group_rerun(ray_run):
    assert killed
    row = next(r for r in rows(ray_run) if r["kind"] == "train")
    assert row["cluster/worker_restarts"] == 1 and row["cluster/groups_rerun"] >= 1
    gs = groups(ray_run / "trajectories" / "step_0001.jsonl")
    ids = [t["id"] for g in gs for t in g["trajectories"]]
    assert len(ids) == len(set(ids)) == 4  # none lost, none twice
    assert any(g["metadata"]["ray_reruns"] == 1 for g in gs)


def test_the_same_seed_sees_the_same_scenarios_in_the_same_order_on_local_and_ray(ray_run, tiny_model_dir, tmp_path):
    local = train_in_process(tmp_path, tiny_model_dir, "l")
    assert not any(k.startswith("cluster/") for row in rows(local) for k in row)
    for f in [
        "trajectories/step_0001.jsonl",
        "trajectories/step_0002.jsonl",
        "eval/step_0000.jsonl",
        "eval/step_0002.jsonl",
    ]:
        ids = [[g["scenario"]["id"] for g in groups(d / f)] for d in (local, ray_run)]
        assert ids[0] == ids[1] and ids[0], f


def test_a_k_1_run_rolls_out_step_2_on_the_workers_while_step_1_trains(cluster, tiny_model_dir, tmp_path):
    run_dir = train_in_process(
        tmp_path, tiny_model_dir, "a", k=1, engine="ray", address=cluster.address, rollout_workers=2, worker_cpus=1
    )
    train = [r for r in rows(run_dir) if r["kind"] == "train"]
    assert [(r["step"], r["staleness_max"], r["stale_dropped"]) for r in train] == [(1, 0, 0), (2, 1, 0)]
    for step, row in zip((1, 2), train):
        assert (
            sum(per_node(row).values()) == 4 and row["failed_rollouts"] == 0
        )  # step 2's sampled by step 0's adapter, still served
        gs = groups(run_dir / "trajectories" / f"step_{step:04d}.jsonl")
        assert {t["policy_version"] for g in gs for t in g["trajectories"]} == {0}


def test_an_unreachable_ray_address_is_one_line_before_any_work(home, monkeypatch, capsys):
    t = time.monotonic()
    code, _, err = run_cli(monkeypatch, capsys, "train", *ARGS, "--cluster", "ray", "--ray-address", "127.0.0.1:1")
    assert code != 0 and time.monotonic() - t < 10
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in err and "ray start --head" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--rollout-workers", "3"], "has room for 2 rollout worker(s) of CPU=1, not the 3 asked for"),
        (["--worker-gpus", "1"], "has room for 0 rollout worker(s) of CPU=1, GPU=1"),
    ],
)
def test_a_cluster_short_of_resources_is_one_line(cluster, home, monkeypatch, capsys, flags, says):
    code, _, err = run_cli(
        monkeypatch, capsys, "train", *ARGS, "--cluster", "ray", "--ray-address", cluster.address, *flags
    )
    assert code != 0 and says in err and len(err.strip().splitlines()) == 1, err


def test_a_node_without_the_server_command_is_named(cluster, home, monkeypatch, capsys):
    args = [a if a != "python -m mcprl.servers.calculator" else "no-such-mcp-server --stdio" for a in ARGS]
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        *args,
        "--cluster",
        "ray",
        "--ray-address",
        cluster.address,
        "--rollout-workers",
        "1",
    )
    assert code != 0 and len(err.strip().splitlines()) == 1, err
    assert "rollout worker on Ray node" in err and "'no-such-mcp-server' not found" in err
    assert any(n[:8] in err for n in node_ids(cluster))


def test_without_the_cluster_engine_nothing_imports_ray():
    code = (
        "import sys, mcprl.cli.main, mcprl.run.runner, mcprl.run.config; "
        "assert not [m for m in sys.modules if m.split('.')[0] == 'ray']"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def test_the_ray_engine_without_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "mcprl.cluster.ray_engine", raising=False)
    with pytest.raises(UserError, match=r'pip install "mcprl\[ray\]"'):
        import mcprl.cluster.ray_engine  # noqa: F401


def test_workers_on_other_machines_reach_an_endpoint_listening_on_every_address():
    from mcprl.cluster.ray_engine import reachable

    url = reachable("http://0.0.0.0:8123/v1")
    assert url.startswith("http://") and url.endswith(":8123/v1") and "0.0.0.0" not in url
    assert reachable("http://127.0.0.1:8123/v1") == "http://127.0.0.1:8123/v1"


@pytest.mark.anyio
async def test_a_worker_started_before_grounding_runs_against_the_server_as_grounding_left_it(tmp_path, monkeypatch):
    """Rollout workers open their pools before grounding; a group sent with the run's server as grounding left it
    (a tool that may write hidden, a home of each session's own given) runs against that: the worker's pool refuses
    the tool and gives each session its own home from then on."""
    from mcprl.cluster import ray_engine
    from mcprl.cluster.ray_engine import RolloutWorker
    from mcprl.model.trainable import Model
    from mcprl.rollout.config import RolloutConfig
    from mcprl.tools.config import ServerConfig
    from mcprl.types import Scenario

    monkeypatch.setenv("HOME", str(tmp_path))  # the notes server keeps its file under the home
    monkeypatch.setattr(ray_engine, "where", dict)  # the worker, called here, not as an actor: no Ray node to name
    notes = Path(__file__).resolve().parents[1] / "data" / "notes_file_server.py"
    server = ServerConfig(target=f"{sys.executable} {notes}")
    worker = RolloutWorker(server.model_dump(mode="json"), "plain", os.getcwd())
    assert "error" not in await worker.start()
    settled = server.model_copy(update={"deny": ["add_note"], "private_home": True})
    await worker.run_group(
        Model(name="m", inference_base_url="http://127.0.0.1:9/v1").model_dump(mode="json"),  # no policy: it fails
        Scenario(task="List the notes.").model_dump(mode="json"),
        1,
        RolloutConfig().model_dump(mode="json"),
        settled.model_dump(mode="json"),
    )
    try:
        assert "add_note" not in worker.pool.toolset.names()
        async with worker.pool.session() as session:
            assert session.home is not None and session.home != tmp_path
            assert (await session.call("add_note", {"text": "x"})).is_error
    finally:
        await worker.close()


def test_a_rollout_worker_imports_no_torch():
    """A Ray actor imports the module its class is defined in: the rollout workers' (ray_engine) leaves the
    policy replicas' and the trainer actor's modules, and torch with them, to those actors (~7 s of CPU per
    worker process)."""
    code = "import sys, mcprl.cluster.ray_engine; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
