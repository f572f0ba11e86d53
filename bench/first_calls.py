"""First calls: what a run's policy does with its demonstration before training, on the run's own
held-out scenarios: which tool each episode calls first, how many calls' results hold the known
answer (shaping's evidence stage), and success. A prompt change is measured with it before a
30-minute efficacy run (docs/benchmarks.md: the template's placeholder call).

    python bench/first_calls.py RUN_NAME --server "python -m mcprl.servers.inventory" \
        [--project bench] [--samples 4] [--rebuild]
                                [--constrain-tool-calls] [--out GROUPS.jsonl]

RUN_NAME is a run of `--project` (its step-0 checkpoint, demonstration and held-out split); the
prompt is rendered by the code this is run from, so two checkouts compare two prompts. `--rebuild`
builds the demonstration anew with this checkout's mcprl.run.demonstration, from the run's training
scenarios, the base model writing the calls (the run's offline generator). First calls are counted
overall and by the first tool each held-out scenario names (`by_expected`).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent


async def first_calls(
    name: str, server: str, project: str, samples: int, rebuild: bool, constrain: bool, out: Path | None = None
) -> dict:
    from mcprl.judges import VerifyJudge, score_groups
    from mcprl.judges.shaping import STAGES, tool_use_score
    from mcprl.model.trainable import Model
    from mcprl.paths import model_dir
    from mcprl.rollout import agents
    from mcprl.rollout.gather import gather_trajectory_groups
    from mcprl.run import demonstration
    from mcprl.run.evaluate import resolve_checkpoint, run_settings
    from mcprl.serving.engine import Engine
    from mcprl.serving.local import LocalEndpoint
    from mcprl.tools import ServerSpec, ToolPool
    from mcprl.types import Scenario, TrajectoryGroup

    base, adapter, served = resolve_checkpoint(f"{name}@0", project)

    def split(part: str) -> list[Scenario]:
        text = (model_dir(project, name) / "scenarios" / f"{part}.jsonl").read_text()
        return [Scenario.model_validate_json(line) for line in text.splitlines() if line.strip()]

    scenarios = split("val")
    settings = run_settings(adapter.parent.parent, scenarios)
    rc, threshold = settings.rollout, settings.train.success_threshold
    if constrain:
        rc = rc.model_copy(update={"constrain_tool_calls": True})
    rollout = agents.load(rc.agent)
    engine = await anyio.to_thread.run_sync(lambda: Engine(base, served_name=base))
    engine.load_adapter(served, adapter)
    endpoint = LocalEndpoint(engine)
    try:
        async with ToolPool(ServerSpec.parse(server, env={"PYTHONPATH": str(ROOT)})) as pool:
            policy = Model(name=served, inference_base_url=endpoint.base_url, inference_model_name=served)
            source = "run"
            if rebuild:
                demo, _ = await demonstration.build(
                    split("train"), pool, model=f"openai/{base}", api_base=endpoint.base_url, seed=0
                )
                rc, source = rc.model_copy(update={"demonstrations": demo.exchanges}), demo.source
            groups: list[TrajectoryGroup] = await gather_trajectory_groups(
                [[rollout(policy, s, pool, rc) for _ in range(samples)] for s in scenarios], max_concurrency=16
            )
            for g, s in zip(groups, scenarios):
                g.scenario = s
            await score_groups(VerifyJudge(), groups)
    finally:
        endpoint.close()
    if out is not None:
        out.write_text("".join(g.model_dump_json() + "\n" for g in groups))
    by_expected: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    found = solved = 0
    for g in groups:
        for t in g.trajectories:
            calls = [
                c["function"]["name"]
                for m in t.agent_messages()
                if m.get("role") == "assistant"
                for c in m.get("tool_calls") or []
            ]
            by_expected[g.scenario.tools[0] if g.scenario.tools else "(none named)"][
                calls[0] if calls else "(none)"
            ] += 1
            solved += t.reward >= threshold
            # a call past every stage and holding the answer scores above STAGES / (STAGES + 1)
            found += (
                g.scenario.answer is not None
                and tool_use_score(t, g.scenario.answer, g.scenario.task) > STAGES / (STAGES + 1) + 1e-9
            )
    first = sum(by_expected.values(), collections.Counter())
    episodes = first.total()
    return {
        "run": name,
        "demonstration": source,
        "constrain_tool_calls": rc.constrain_tool_calls,
        "episodes": episodes,
        "success": solved / episodes,
        "answer_found": found / episodes,
        "first_call": dict(first.most_common()),
        "by_expected": {k: dict(v.most_common()) for k, v in sorted(by_expected.items())},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--server", required=True)
    ap.add_argument("--project", default="bench")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--rebuild", action="store_true", help="build the demonstration anew with this checkout's code")
    ap.add_argument("--constrain-tool-calls", action="store_true", help="grammar-constrain the policy's tool calls")
    ap.add_argument("--out", type=Path, help="write the scored groups here (JSON lines) to read the episodes")
    args = ap.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    print(
        json.dumps(
            anyio.run(
                first_calls,
                args.run,
                args.server,
                args.project,
                args.samples,
                args.rebuild,
                args.constrain_tool_calls,
                args.out,
            )
        )
    )


if __name__ == "__main__":
    main()
