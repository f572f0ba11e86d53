"""Efficacy: held-out success of the embedded SmolLM2-135M on verifiable tasks, before and after
training on this CPU for a time budget (default 30 minutes).

    python bench/efficacy.py [--minutes 30] [--config examples/calculator.toml] [extra mcprl train flags]
    python bench/efficacy.py --server SPEC --scenarios FILE [extra mcprl train flags]   # any server
    python bench/efficacy.py --no-task-help ...    # a shipped server without its hand-written help

With `--server`, the config's training settings are kept but not its server and task generator
(`[server]`, `scenarios.tasks`, `scenarios.difficulties`), so nothing specific to the calculator
leaks into the run.
`--no-task-help` (an `mcprl train` flag) turns off a shipped task generator's hand-written example
and partial credit. Runs `mcprl train` (so the measurement is the product, not a special path),
then reads the run's metrics.jsonl and prints before/after success with 95% intervals, the delta
in points, the per-step curve, and writes the result JSON (`--out`), which records the server,
scenarios, task help, shaping weight and demonstration used. Target: +20 points within 30 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcprl.run.config import load_saved, read_run_file

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--config", default=str(ROOT / "examples" / "calculator.toml"))
    ap.add_argument("--name", default=f"efficacy-{time.strftime('%Y%m%d-%H%M%S')}")
    ap.add_argument("--server", help="MCP server spec (URL or stdio command); drops the config's server and tasks")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "efficacy.json"))
    args, extra = ap.parse_known_args()
    home = Path(os.environ.get("MCPRL_HOME", Path.home() / ".cache" / "mcprl"))
    config = args.config
    if args.server:
        settings = read_run_file(Path(args.config))
        settings.pop("server", None)
        for key in ("tasks", "difficulties"):
            settings.get("scenarios", {}).pop(key, None)
        config = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False).name
        Path(config).write_text(json.dumps(settings))
        extra = ["--server", args.server, *extra]
    cmd = [
        sys.executable,
        "-m",
        "mcprl.cli",
        "train",
        "--config",
        config,
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
    print("$", " ".join(cmd), flush=True)
    t0 = time.time()
    if code := subprocess.run(cmd).returncode:
        sys.exit(code)  # the run printed its own one-line reason
    wall = time.time() - t0
    run_dir = home / "bench" / args.name
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    run = load_saved(run_dir / "config.json")
    evals = [r for r in rows if r["kind"] == "eval"]
    train = [r for r in rows if r["kind"] == "train"]
    before, after = evals[0], evals[-1]
    if "success_rate" not in before:
        sys.exit(
            f"{run_dir}: the held-out scenarios have no checks, so there is no success rate; give scenarios with checks"
        )
    delta = (after["success_rate"] - before["success_rate"]) * 100
    result = {
        "command": " ".join(cmd),
        "wall_seconds": wall,
        "steps": len(train),
        "server": run.server.target,
        "scenarios": run.scenarios.file,
        "tasks": run.scenarios.tasks,
        "task_help": run.scenarios.task_help,
        "shaping": run.judge.shaping,
        "demonstration_source": run.demonstration_source,
        "max_extra_groups": run.max_extra_groups,
        "train_seconds": sum(r.get("train/train_seconds", 0.0) for r in train),
        "before": {k: before[k] for k in ("success_rate", "success_ci", "tool_call_rate", "trajectories")},
        "after": {k: after[k] for k in ("success_rate", "success_ci", "tool_call_rate", "trajectories")},
        "delta_points": delta,
        "target_points": 20,
        "met": delta >= 20,
        "curve": [
            {
                "step": r["step"],
                "reward_mean": r["reward_mean"],
                "success_rate": r.get("success_rate"),
                "tool_call_rate": r["tool_call_rate"],
                "zero_variance_groups": r["zero_variance_groups"],
                "groups_drawn": r.get("groups_drawn", 0),
                "groups_dropped": r.get("groups_dropped", 0),
            }
            for r in train
        ],
        "report": str(run_dir / "report.html"),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(
        f"held-out success: {before['success_rate']:.1%} -> {after['success_rate']:.1%} ({delta:+.1f} points; target "
        "+20: "
        f"{'met' if result['met'] else 'NOT met'}) after {len(train)} steps, {wall / 60:.1f} min wall"
    )
    print(f"curve and report: {run_dir / 'report.html'}; result: {out}")


if __name__ == "__main__":
    main()
