"""Zero data: `mcprl train --server X` with nothing else (tasks grounded in the server's own answers),
then held-out success on tasks the run never saw: a shipped server's own task generator, with its
hand-written help off (no example, no partial credit: success means solved).

    python bench/grounded.py --server "python -m mcprl.servers.calculator" --tasks calculator [--minutes 30]
        [--eval-n 48] [--difficulty 1 --difficulty 2] [extra mcprl train flags]
    python bench/grounded.py --server "mcp-server-calculator" --held-out bench/scenarios/heldout-calculator.jsonl

The run's step 0 (the base weights) and its last checkpoint are evaluated with the run's own
prompt and demonstration, on the same held-out tasks (generated with a seed the run never used),
so the difference is the training. Prints before/after success with 95% intervals, the
delta in points and each question's successes before and after, and writes the result JSON
(`--out`). Target (issue 26): +15 points.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
EVAL_SEED = 9001  # the held-out tasks' seed: no run trains on it


def questions(before: dict, after: dict) -> dict[str, list[str]]:
    """Each held-out question's successes before and after, over its episodes ("1/3"), by its wording."""
    tally: dict[str, list[list[int]]] = {}
    for k, result in enumerate((before, after)):
        for s in result["per_scenario"]:
            counts = tally.setdefault(s["task"], [[0, 0], [0, 0]])[k]
            counts[0] += s["successes"]
            counts[1] += s["verified"]
    return {task: [f"{won}/{of}" for won, of in pair] for task, pair in tally.items()}


def main() -> None:
    from mcprl import tasks
    from mcprl.run.evaluate import evaluate, run_settings
    from mcprl.train import checkpoints

    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument(
        "--tasks",
        help="the shipped task set whose tasks are the held-out set (default: the run's own "
        "held-out grounded tasks, each rolled out --eval-n / their number times)",
    )
    ap.add_argument(
        "--held-out",
        help="a scenarios JSONL of held-out questions with answers (written by hand, as people ask them), "
        "each rolled out --eval-n / their number times",
    )
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--eval-n", type=int, default=48)
    ap.add_argument("--difficulty", type=int, action="append")
    ap.add_argument("--name", default=f"grounded-{time.strftime('%Y%m%d-%H%M%S')}")
    ap.add_argument("--out", default=None)
    ap.add_argument("--eval-only", action="store_true", help="evaluate the run --name already trained")
    args, extra = ap.parse_known_args()
    home = Path(os.environ.get("MCPRL_HOME", Path.home() / ".cache" / "mcprl"))
    cmd = [
        sys.executable,
        "-m",
        "mcprl.cli",
        "train",
        "--server",
        args.server,
        "--steps",
        "1000",
        "--time-budget",
        str(args.minutes),
        "--project",
        "bench",
        "--name",
        args.name,
        *extra,
    ]
    t0 = time.time()
    if not args.eval_only:
        print("$", " ".join(cmd), flush=True)
        if code := subprocess.run(cmd).returncode:
            sys.exit(code)  # the run printed its own one-line reason
    wall = time.time() - t0
    run_dir = home / "bench" / args.name
    if args.tasks:
        held_out = tasks.get(args.tasks).generate(
            args.eval_n, seed=EVAL_SEED, difficulties=args.difficulty or [1, 2, 3, 4, 5]
        )
    else:  # questions written by hand, or the run's own val split, which it never trained on
        from mcprl.types import Scenario, load_jsonl

        val = load_jsonl(Path(args.held_out) if args.held_out else run_dir / "scenarios" / "val.jsonl", Scenario)
        held_out = [
            s.model_copy(update={"id": f"{s.id}-{k}"}) for k in range(max(1, args.eval_n // len(val))) for s in val
        ]
    last = checkpoints.latest_step(run_dir / "checkpoints")

    settings = run_settings(run_dir, held_out)  # the run's own server, prompt, demonstration and sampling

    async def score(step: int) -> dict:
        return await evaluate(
            settings, model=f"{args.name}@{step}", scenarios=held_out, checkpoints=run_dir / "checkpoints"
        )

    before, after = anyio.run(score, 0), anyio.run(score, last)
    delta = (after["success_rate"] - before["success_rate"]) * 100
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    grounding = json.loads((run_dir / "scenarios" / "grounding.json").read_text())
    result = {
        "command": " ".join(cmd),
        "wall_seconds": wall,
        "steps": last,
        "server": args.server,
        "held_out": args.tasks or args.held_out or "the run's own val split",
        "held_out_n": len(held_out),
        "grounding": grounding,
        "before": {k: before[k] for k in ("success_rate", "success_ci", "tool_call_rate", "trajectories")},
        "after": {k: after[k] for k in ("success_rate", "success_ci", "tool_call_rate", "trajectories")},
        "delta_points": delta,
        "questions": questions(before, after),
        "target_points": 15,
        "met": delta >= 15,
        "own_val": [{"step": r["step"], "success_rate": r.get("success_rate")} for r in rows if r["kind"] == "eval"],
        "curve": [
            {
                "step": r["step"],
                "reward_mean": r["reward_mean"],
                "success_rate": r.get("success_rate"),
                "tool_call_rate": r["tool_call_rate"],
            }
            for r in rows
            if r["kind"] == "train"
        ],
    }
    out = Path(args.out or ROOT / "bench" / "results" / f"grounded-{args.name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(grounding["exploration"])
    print(
        f"held-out ({args.tasks or args.held_out or 'own val'}, {len(held_out)} tasks): "
        f"{before['success_rate']:.1%} -> "
        f"{after['success_rate']:.1%} "
        f"({delta:+.1f} points; target +15: {'met' if result['met'] else 'NOT met'}) after {last} steps, "
        f"{wall / 60:.1f} min wall"
    )
    for task, (was, now) in result["questions"].items():
        print(f"  {was} -> {now}  {task}")
    print(f"result: {out}")


if __name__ == "__main__":
    main()
