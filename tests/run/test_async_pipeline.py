"""The asynchronous pipeline (`train.max_off_policy_steps` = K): rollouts for later steps run
while a step trains, never more than K policy versions before the step that trains them; a group
older than that is dropped and counted; K = 0 is the synchronous loop."""

import json
from pathlib import Path

import anyio
import pytest

from mcprl.errors import UserError
from mcprl.run.pipeline import Pipeline, split_stale
from mcprl.run.runner import TrainingRun
from mcprl.types import Trajectory, TrajectoryGroup


def run_pipeline(ahead: int, steps: int, fail_at: int | None = None, events: list[str] | None = None) -> dict[int, int]:
    """Train `steps` steps through a Pipeline (collecting takes 5 ms, training 20 ms): returns, per
    step, how many steps had been trained when its collection started; `events` gets their order."""
    trained = 0
    started: dict[int, int] = {}
    events = [] if events is None else events

    async def collect(step: int) -> int:
        started[step] = trained
        events.append(f"collect {step}")
        await anyio.sleep(0.005)
        if step == fail_at:
            raise UserError(f"step {step} failed")
        return step

    async def main() -> None:
        nonlocal trained
        async with Pipeline(collect, 0, steps, ahead) as pipeline:
            for step in range(steps):
                assert await pipeline.next() == step
                events.append(f"train {step}")
                await anyio.sleep(0.02)
                trained += 1
                pipeline.trained()

    anyio.run(main)
    return started


@pytest.mark.parametrize("ahead", [1, 2])
def test_steps_are_collected_ahead_of_training_but_never_more_than_k_versions_ahead(ahead):
    started = run_pipeline(ahead, steps=6)
    # the policy when step t's collection started was version `trained`: t - version is its staleness
    staleness = [t - v for t, v in started.items()]
    assert max(staleness) == ahead and min(staleness) >= 0, started


def test_k_0_collects_each_step_after_the_previous_one_trained():
    events: list[str] = []
    assert run_pipeline(0, steps=3, events=events) == {0: 0, 1: 1, 2: 2}
    assert events == ["collect 0", "train 0", "collect 1", "train 1", "collect 2", "train 2"]


def test_a_failed_collection_is_raised_at_its_own_step_after_the_steps_before_it_trained():
    events: list[str] = []
    with pytest.raises(UserError, match="step 2 failed"):  # itself, not wrapped in an exception group
        run_pipeline(1, steps=5, fail_at=2, events=events)
    assert [e for e in events if e.startswith("train")] == ["train 0", "train 1"]
    assert "collect 3" not in events  # the producer stopped at the failure


def test_leaving_the_pipeline_cancels_the_producer_and_keeps_the_body_exception():
    ended: list[str] = []

    async def collect(step: int) -> int:
        if step == 0:
            return 0
        try:
            await anyio.sleep(60)
        finally:
            ended.append(f"collect {step} ended")
        return step

    async def main() -> None:
        with anyio.fail_after(5):
            async with Pipeline(collect, 0, 10, 1) as pipeline:
                assert await pipeline.next() == 0
                await anyio.sleep(0.01)  # the producer is collecting step 1
                raise UserError("the trainer failed")

    with pytest.raises(UserError, match="the trainer failed"):
        anyio.run(main)
    assert ended == ["collect 1 ended"]


def test_a_group_sampled_more_than_k_versions_before_its_step_is_stale():
    def group(*versions):
        return TrajectoryGroup(trajectories=[Trajectory(policy_version=v) for v in versions])

    groups = [group(5, 5), group(4, 4), group(3, 3), group(4, 3), TrajectoryGroup(exceptions=["boom"])]
    fresh, stale = split_stale(groups, 5, 1)
    assert fresh == [groups[0], groups[1], groups[4]] and stale == [groups[2], groups[3]]
    fresh, stale = split_stale(groups, 5, 0)
    assert fresh == [groups[0], groups[4]]


@pytest.mark.anyio
async def test_the_server_keeps_the_adapters_of_the_last_k_plus_1_steps(home, tiny_model_dir):
    """A rollout pinned to step v samples it throughout, while later steps train (K of them)."""
    import httpx

    from mcprl import LocalBackend, TrainableModel, TrainConfig
    from tests.backends.test_backend import _group

    model = TrainableModel(name="agent", project="p", base_model=str(tiny_model_dir))
    async with LocalBackend(device="cpu") as backend:
        await model.register(backend)

        def served() -> list[str]:
            r = httpx.get(
                f"{model.inference_base_url}/models", headers={"Authorization": f"Bearer {model.inference_api_key}"}
            )
            return [m["id"] for m in r.json()["data"]][1:]

        pinned = model.pinned()
        one = TrainConfig(learning_rate=1e-2, max_off_policy_steps=1)
        await model.train([await _group(model)], one)
        assert served() == ["agent@0", "agent@1"] and model.get_inference_name() == "agent@1"
        group = await _group(pinned)  # step 0 still answers, as itself
        assert {g.model for t in group.trajectories for g in t.generations} == {"agent@0"}
        await model.train([group], one)
        assert served() == ["agent@1", "agent@2"]
        await model.train([await _group(model)], TrainConfig(learning_rate=1e-2))
        assert served() == ["agent@3"]  # K = 0: the previous step goes at once, as before


def train_run(
    name: str, k: int, tiny_model_dir, run_class=None, resume: bool = False, **settings
) -> tuple[list[dict], Path]:
    """A 2-step run of the tiny model against the calculator server, in this process; its train rows."""
    from mcprl.run.config import load_config

    cfg = load_config(
        None,
        {
            "server.target": "python -m mcprl.servers.calculator",
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
            **settings,
        },
    )
    run = (run_class or TrainingRun)(cfg, resume=resume, say=lambda _: None)
    anyio.run(run.run)
    rows = [json.loads(x) for x in (run.dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if r["kind"] == "train"], run.dir


def step_groups(run_dir, step: int) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "trajectories" / f"step_{step:04d}.jsonl").read_text().splitlines()]


class AgedRun(TrainingRun):
    """A run whose step 2's first group says it was sampled 2 versions before step 2's policy."""

    async def _collect(self, pool, judge, train, step):
        collected = await super()._collect(pool, judge, train, step)
        if step == 1:
            for t in collected.groups[0].trajectories:
                t.policy_version = -1
        return collected


def test_a_k_1_run_trains_on_groups_one_step_stale_drops_older_ones_and_k_0_is_the_synchronous_loop(
    home, tiny_model_dir
):
    # the calculator keeps no state: one server serves a run's rollouts, not a process each (~1.5 s of CPU apiece)
    shared = {"server.per_rollout": False}
    sync, sync_dir = train_run("sync", 0, tiny_model_dir, **shared)
    ahead, ahead_dir = train_run("ahead", 1, tiny_model_dir, AgedRun, **shared)
    assert [r["step"] for r in sync] == [r["step"] for r in ahead] == [1, 2]
    for row in sync:  # every group sampled by the policy it trains
        assert (row["staleness_mean"], row["staleness_max"], row["stale_dropped"]) == (0, 0, 0)
    for step in (1, 2):
        versions = {t["policy_version"] for g in step_groups(sync_dir, step) for t in g["trajectories"]}
        assert versions == {step - 1}
    # K = 1: step 1 starts on the base; step 2 was rolled out while step 1 trained
    assert [r["staleness_max"] for r in ahead] == [0, 1]
    assert all(0 <= r["staleness_mean"] <= 1 and r["failed_rollouts"] == 0 for r in ahead)
    assert all("train/logprob_mismatch" in r for r in ahead if r["train/trained"])
    # the group older than K is dropped, counted and marked; the trainer sees only the other one
    assert [r["stale_dropped"] for r in ahead] == [0, 1] and ahead[1]["train/groups"] == 1
    assert [g["metadata"].get("stale", False) for g in step_groups(ahead_dir, 2)] == [True, False]
    # the same scenarios in the same order, whichever K
    for step in (1, 2):
        ids = [[g["scenario"]["id"] for g in step_groups(d, step)] for d in (sync_dir, ahead_dir)]
        assert ids[0] == ids[1] and ids[0]
    assert {t["policy_version"] for g in step_groups(ahead_dir, 2) for t in g["trajectories"]} == {-1, 0}


def calculator_children() -> list[int]:
    """The calculator servers this process started that are still running."""
    import os
    from pathlib import Path

    found = []
    for proc in Path("/proc").iterdir():
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (proc / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        # (the module run as the server: not the fork server of tests/server_fork.py, which imports it)
        if ppid == os.getpid() and b"mcprl.servers.calculator" in cmd.split(b"\0"):
            found.append(int(proc.name))
    return found


def test_a_k_1_run_stopped_by_its_time_budget_ends_its_rollouts_and_resumes(home, tiny_model_dir):
    """The budget ends the run after step 1 while step 2's rollouts hold their MCP sessions open:
    they end with it (no server left running), and the resumed run trains step 2 afresh."""

    hanging: list[str] = []

    class HangingStep2(TrainingRun):
        """Step 2's rollouts open their MCP session, then wait for ever; step 1 trains once they all do."""

        async def _collect(self, pool, judge, train, step):
            if step != 1:
                return await super()._collect(pool, judge, train, step)

            async def hang(model, scenario, pool, config):
                async with pool.session():  # a calculator server for this rollout
                    hanging.append(scenario.id)
                    await anyio.sleep(3600)

            plain, self.rollouts.agent = self.rollouts.agent, hang  # (in this process: LocalRollouts)
            try:
                return await super()._collect(pool, judge, train, step)
            finally:
                self.rollouts.agent = plain

        async def _learn(self, collected):
            with anyio.fail_after(300):
                while len(hanging) < 4:  # 2 groups of 2
                    await anyio.sleep(0.05)
            assert len(calculator_children()) == 4
            await super()._learn(collected)

    rows, run_dir = train_run("budget", 1, tiny_model_dir, HangingStep2, time_budget_minutes=1e-4)
    assert [r["step"] for r in rows] == [1] and len(hanging) == 4
    assert not (run_dir / "trajectories" / "step_0002.jsonl").exists()
    assert calculator_children() == []
    rows, run_dir = train_run("budget", 1, tiny_model_dir, resume=True)
    assert [r["step"] for r in rows] == [1, 2] and rows[1]["staleness_max"] == 0
    assert {t["policy_version"] for g in step_groups(run_dir, 2) for t in g["trajectories"]} == {1}
