"""Scaling: episodes per second and seconds per step of the local loop and of Ray rollout workers
(mcprl.cluster) on this machine, against the real stdio calculator server.

    python bench/scaling.py [--model smollm2-135m] [--workers 1 2 4] [--steps 2] [--groups 4] [--group-size 4]

One policy (the CPU runtime, as `mcprl train` serves it) and one set of scenarios; for each
engine (local, then Ray with 1, 2, 4 workers on a one-node Ray this script starts, then local again), `--steps`
steps of the training loop's own parts: roll out `--groups` groups (the local loop's gather, or
RayRollouts.run), score them (VerifyJudge), one GRPO step (which swaps the new adapter in).
Episodes/s is rollouts over rollout seconds; s/step is the whole step. Worker start-up (once per
run) is reported apart. Results go to `--out` as JSON. Ray here shares this machine's cores with
the policy, so more workers only help while the policy is not the bottleneck.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent


async def measure(args: argparse.Namespace) -> list[dict]:
    import ray

    from mcprl import tasks
    from mcprl.backends.local import LocalBackend
    from mcprl.cluster import ClusterConfig
    from mcprl.cluster.ray_engine import RayRollouts
    from mcprl.judges import VerifyJudge, score_groups
    from mcprl.model.trainable import TrainableModel
    from mcprl.rollout import agents
    from mcprl.rollout.config import RolloutConfig
    from mcprl.rollout.gather import gather_trajectory_groups
    from mcprl.tools import ToolPool
    from mcprl.tools.config import ServerConfig
    from mcprl.train.config import TrainConfig

    shipped = tasks.get("calculator")
    scenarios = shipped.generate(args.groups * args.steps, seed=0, difficulties=(1,))
    server = ServerConfig(target="python -m mcprl.servers.calculator")
    rc = RolloutConfig(max_turns=2, max_tokens=48, temperature=0.7, demonstrations=[shipped.demonstration])
    judge = VerifyJudge()
    agent = agents.load("plain")
    model = TrainableModel(name=f"scaling-{time.strftime('%Y%m%d-%H%M%S')}", project="bench", base_model=args.model)
    results = []
    async with LocalBackend() as backend, ToolPool(server.spec()) as pool:
        await model.register(backend)
        ray.init(num_cpus=max(args.workers), include_dashboard=False, logging_level="WARNING", log_to_driver=False)
        try:
            # local first and last: the policy trains on between engines, and the first engine warms the
            # process up; the ratios are against the mean of the two local measurements
            for engine in ["local", *(f"ray-{n}" for n in args.workers), "local"]:
                t = time.perf_counter()
                cluster = None
                if engine != "local":
                    cluster = RayRollouts(
                        ClusterConfig(engine="ray", rollout_workers=int(engine[4:])),
                        server,
                        "plain",
                        say=lambda _: None,
                    )
                    await cluster.__aenter__()
                start_s = time.perf_counter() - t
                rollout_s, step_s = [], []
                try:
                    for step in range(args.steps):
                        batch = scenarios[step * args.groups : (step + 1) * args.groups]
                        t0 = time.perf_counter()
                        if cluster is None:
                            groups = await gather_trajectory_groups(
                                [[agent(model, s, pool, rc) for _ in range(args.group_size)] for s in batch],
                                max_concurrency=16,
                            )
                            for g, s in zip(groups, batch):
                                g.scenario = s
                        else:
                            groups = await cluster.run(
                                model, batch, args.group_size, [rc] * len(batch), max_concurrency=16
                            )
                        rollout_s.append(time.perf_counter() - t0)
                        await model.train(await score_groups(judge, groups), TrainConfig())
                        step_s.append(time.perf_counter() - t0)
                finally:
                    if cluster is not None:
                        await cluster.__aexit__()
                episodes = args.groups * args.group_size
                row = {
                    "engine": engine,
                    "start_s": round(start_s, 2),
                    "episodes_per_step": episodes,
                    "episodes_per_s": round(episodes / statistics.mean(rollout_s), 3),
                    "rollout_s_per_step": round(statistics.mean(rollout_s), 2),
                    "s_per_step": round(statistics.mean(step_s), 2),
                }
                print(json.dumps(row), flush=True)
                results.append(row)
        finally:
            ray.shutdown()
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scaling.json"))
    args = ap.parse_args()
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # Ray on 127.0.0.1 only
    results = anyio.run(measure, args)
    local = statistics.mean(r["s_per_step"] for r in results if r["engine"] == "local")
    for r in results:
        r["s_per_step_vs_local"] = round(r["s_per_step"] / local, 3)
    out = {
        "machine_cpus": os.cpu_count(),
        "model": args.model,
        "steps": args.steps,
        "groups": args.groups,
        "group_size": args.group_size,
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
