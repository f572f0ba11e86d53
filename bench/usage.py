"""The per-tool report's measurements (issue 41, docs/usage-report.md "Not yet measured"): the default
model and a trained checkpoint on a server, and a description experiment. Runs `mcprl usage` (the
product, not a special path) and writes its JSON plus a summary of the tools whose correct-call rate
(called when needed) moved by more than its 95% interval between the runs.

    python bench/usage.py --server "python -m mcprl.servers.inventory" --baseline NAME@STEP [-n 32 --samples 4]
    python bench/usage.py --server "npx -y @modelcontextprotocol/server-memory" --tool-overrides o.toml
    python bench/usage.py --server SPEC -- --temperature 0.7 --explore-calls 200    # after --: more mcprl usage flags

Needs a quiet machine: each model's rollouts on n tasks x samples (twice with overrides), on the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mcprl.usage.report import UsageResult, changes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--baseline")
    ap.add_argument("--tool-overrides")
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path("bench/results/usage.json"))
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]
    work = Path(tempfile.mkdtemp(prefix="usage-bench-"))
    cmd = [
        sys.executable,
        "-m",
        "mcprl.cli",
        "usage",
        "--server",
        args.server,
        "--model",
        args.model,
        "-n",
        str(args.n),
        "--samples",
        str(args.samples),
        "--json",
        str(args.out),
        "--out",
        str(work),
        *extra,
    ]
    if args.baseline:
        cmd += ["--baseline", args.baseline]
    if args.tool_overrides:
        cmd += ["--tool-overrides", args.tool_overrides]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(" ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env=os.environ.copy())
    result = UsageResult.model_validate(json.loads(args.out.read_text()))
    for r in result.runs:
        print(f"{r.label}: success {r.success_rate}, {r.usage.episodes} episodes")
    moved = [line for line in changes(result) if line.endswith("the intervals separate")]
    print("\n".join(moved) or "no tool's correct-call rate moved past its interval")


if __name__ == "__main__":
    main()
