"""First calls: what a run's policy does with its demonstration before training, on the run's own
held-out scenarios: which tool each episode calls first, how many calls' results hold the known
answer (shaping's evidence stage), and success. A prompt change is measured with it before a
30-minute efficacy run (docs/benchmarks.md: the template's placeholder call).

    python bench/first_calls.py RUN_NAME --server "python -m servers.inventory" [--project bench] [--samples 4]

RUN_NAME is a run of `--project` (its step-0 checkpoint, demonstration and held-out split); the
prompt is rendered by the code this is run from, so two checkouts compare two prompts.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent


async def first_calls(name: str, server: str, project: str, samples: int) -> dict:
    from judges import VerifyJudge, score_groups
    from judges.shaping import STAGES, agent_messages, tool_use_score
    from mcprl import agents
    from mcprl.evaluate import resolve_checkpoint, rollout_settings
    from mcprl.gather import gather_trajectory_groups
    from mcprl.model import Model
    from mcprl.paths import model_dir
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import LocalServer
    from mcprl.tools import ServerSpec, ToolPool
    from mcprl.types import Scenario, TrajectoryGroup

    base, adapter, served = resolve_checkpoint(f"{name}@0", project)
    held_out = model_dir(project, name) / "scenarios" / "val.jsonl"
    scenarios = [Scenario.model_validate_json(line) for line in held_out.read_text().splitlines() if line.strip()]
    rc = rollout_settings(adapter, scenarios)
    rollout = agents.load(rc.agent)
    engine = await anyio.to_thread.run_sync(lambda: Engine(base, served_name=base))
    engine.load_adapter(served, adapter)
    endpoint = LocalServer(engine)
    try:
        async with ToolPool(ServerSpec.parse(server, env={"PYTHONPATH": str(ROOT)})) as pool:
            policy = Model(name=served, inference_base_url=endpoint.base_url, inference_model_name=served)
            groups: list[TrajectoryGroup] = await gather_trajectory_groups(
                [[rollout(policy, s, pool, rc) for _ in range(samples)] for s in scenarios], max_concurrency=16)
            for g, s in zip(groups, scenarios):
                g.scenario = s
            await score_groups(VerifyJudge(), groups)
    finally:
        endpoint.close()
    first: collections.Counter[str] = collections.Counter()
    found = solved = episodes = 0
    for g in groups:
        for t in g.trajectories:
            episodes += 1
            calls = [c["function"]["name"] for m in agent_messages(t) if m.get("role") == "assistant"
                     for c in m.get("tool_calls") or []]
            first[calls[0] if calls else "(none)"] += 1
            solved += t.reward >= 0.999
            # a call past every stage and holding the answer scores above STAGES / (STAGES + 1)
            found += g.scenario.answer is not None and tool_use_score(t, g.scenario.answer, g.scenario.task) > STAGES / (STAGES + 1) + 1e-9
    return {"run": name, "episodes": episodes, "success": solved / episodes, "answer_found": found / episodes,
            "first_call": dict(first.most_common())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--server", required=True)
    ap.add_argument("--project", default="bench")
    ap.add_argument("--samples", type=int, default=4)
    args = ap.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    print(json.dumps(anyio.run(first_calls, args.run, args.server, args.project, args.samples)))


if __name__ == "__main__":
    main()
