"""Efficacy: held-out success of the embedded SmolLM2-135M on the calculator server's verifiable
tasks, before and after training on this CPU for a time budget (default 30 minutes).

    python bench/efficacy.py [--minutes 30] [--config examples/calculator.toml] [extra mcprl train flags]

Runs `mcprl train` (so the measurement is the product, not a special path), then reads the run's
metrics.jsonl and prints before/after success with 95% intervals, the delta in points, the
per-step curve, and writes bench/results/efficacy.json. Target: +20 points within 30 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--config", default=str(ROOT / "examples" / "calculator.toml"))
    ap.add_argument("--name", default=f"efficacy-{time.strftime('%Y%m%d-%H%M%S')}")
    args, extra = ap.parse_known_args()
    home = Path(os.environ.get("MCPRL_HOME", Path.home() / ".cache" / "mcprl"))
    cmd = [sys.executable, "-m", "mcprl.cli", "train", "--config", args.config, "--steps", "1000",
           "--time-budget", str(args.minutes), "--project", "bench", "--name", args.name, *extra]
    print("$", " ".join(cmd), flush=True)
    t0 = time.time()
    subprocess.run(cmd, check=True)
    wall = time.time() - t0
    run_dir = home / "bench" / args.name
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in rows if r["kind"] == "eval"]
    train = [r for r in rows if r["kind"] == "train"]
    before, after = evals[0], evals[-1]
    delta = (after["success_rate"] - before["success_rate"]) * 100
    result = {
        "command": " ".join(cmd), "wall_seconds": wall, "steps": len(train),
        "train_seconds": sum(r.get("train/train_seconds", 0.0) for r in train),
        "before": {k: before[k] for k in ("success_rate", "success_ci", "tool_call_rate", "trajectories")},
        "after": {k: after[k] for k in ("success_rate", "success_ci", "tool_call_rate", "trajectories")},
        "delta_points": delta, "target_points": 20, "met": delta >= 20,
        "curve": [{"step": r["step"], "reward_mean": r["reward_mean"], "success_rate": r.get("success_rate"),
                   "tool_call_rate": r["tool_call_rate"], "zero_variance_groups": r["zero_variance_groups"]} for r in train],
        "report": str(run_dir / "report.html"),
    }
    out = ROOT / "bench" / "results" / "efficacy.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"held-out success: {before['success_rate']:.1%} -> {after['success_rate']:.1%} ({delta:+.1f} points; target +20: "
          f"{'met' if result['met'] else 'NOT met'}) after {len(train)} steps, {wall / 60:.1f} min wall")
    print(f"curve and report: {run_dir / 'report.html'}; result: {out}")


if __name__ == "__main__":
    main()
