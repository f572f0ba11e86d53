"""What exploring a server grounds: for each server, the calls made, the tools that answered, the
tasks kept and dropped (and why), and the tools no task covers; nothing is trained.

    python bench/grounding.py "python -m mcprl.servers.inventory" "uvx mcp-server-time" [--calls N] [-n 48] [--out F]

Each server gets the exploration and verification `mcprl train --server X` runs by default
(mcprl.scenarios.explore, mcprl.scenarios.grounded), with the same seed; the sample tasks show what the
policy would be asked.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import anyio

from mcprl.checks import live_of
from mcprl.errors import UserError
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import explore
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.isolation import may_write
from mcprl.tools import ServerSpec, ToolPool


async def measure(target: str, calls: int | None, n: int, seed: int) -> dict:
    started = time.monotonic()
    async with ToolPool(ServerSpec.parse(target)) as pool:
        exploration = await explore(pool, ExploreConfig(calls=calls), seed=seed, say=lambda _: None)
        tasks, report = await ground(pool, n, exploration, seed=seed, say=lambda _: None)
        reads = [t["name"] for t in pool.toolset.mcp_tools if not may_write(t)]
    covered = [t for t in reads if report.covered.get(t)]
    return {
        "server": target,
        "seconds": round(time.monotonic() - started, 1),
        "exploration": exploration.summary(),
        "calls": len(exploration.calls),
        "errors": sum(c.is_error for c in exploration.calls),
        "distinct": len({json.dumps([c.tool, c.arguments], sort_keys=True) for c in exploration.calls}),
        "reads": reads,
        "reads_covered": covered,
        "silent": exploration.silent(),
        "not_called": exploration.skipped_tools,
        **report.model_dump(),
        "uncovered": report.uncovered,
        "samples": [
            {
                "task": t.task,
                "answer": t.answer,
                "difficulty": t.difficulty,
                "live": live_of(t.check) is not None,
            }
            for t in random.Random(seed).sample(tasks, min(4, len(tasks)))
        ],
        "tasks": [{"task": t.task, "answer": t.answer} for t in tasks],  # every kept task, to read the wording of all
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("servers", nargs="+")
    ap.add_argument("--calls", type=int, default=None, help="exploring's calls at most (default: as a run's)")
    ap.add_argument("-n", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out")
    args = ap.parse_args()
    results = []
    for server in args.servers:
        try:
            results.append(anyio.run(measure, server, args.calls, args.n, args.seed))
        except UserError as e:  # a server that cannot be grounded (or started) is a line of the table
            print(f"{server}: {e}")
    for r in results:
        print(
            f"{r['server']}: {r['calls']} calls ({r['distinct']} distinct, {r['errors']} errors) -> {r['candidates']} "
            "candidates "
            f"-> {r['kept']} kept ({r['live']} asked live); dropped {r['dropped']}; read tools covered "
            f"{len(r['reads_covered'])}/{len(r['reads'])}"
            + (
                f" (not: {', '.join(t for t in r['reads'] if t not in r['reads_covered'])})"
                if len(r["reads_covered"]) < len(r["reads"])
                else ""
            )
            + f"; {r['seconds']} s"
        )
        for sample in r["samples"]:
            live = " (live: once)" * sample["live"]
            print(f"    [{sample['difficulty']}] {sample['task']}  => {sample['answer']!r}{live}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
