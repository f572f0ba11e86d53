"""Seconds per step of a step's tool calls: live, replayed from a cassette, and with `--cache-reads`,
against the shipped inventory server slowed to about `--delay` seconds a call (a remote API).

    python bench/replay.py [--delay 1.0] [--steps 3] [--groups 2] [--group-size 4] [--concurrency 4]

A step is `groups` inventory lookups (`mcprl.tasks` "inventory", difficulties 1-2) rolled out
`group-size` times each, at most `concurrency` rollouts at once, through a `ToolPool` as a training
run's rollouts go; each rollout lists the categories, then looks its item up (by SKU, or by name),
as `tests/replay_agents.py` does. The policy is left out, so what is measured is the tool layer
alone. The live run records the cassette the replay then answers from. Prints one JSON line per
mode: seconds per step, the rollouts' tool calls, and (cache) the calls made to the server through the
cache, those it saved, the server seconds it saved and the share of the calls it saved.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import anyio

from mcprl import tasks
from mcprl.tools import ServerSpec, ToolPool
from mcprl.tools.spec import CassetteSettings
from mcprl.tools.tape import read_cache
from mcprl.types import Scenario

ROOT = Path(__file__).resolve().parent.parent
SLOW_SERVER = """
import functools, sys, anyio
from mcprl.servers import serve
from mcprl.servers.inventory.world import Warehouse

def slowed(fn, delay):
    @functools.wraps(fn)
    async def call(*args, **kwargs):
        await anyio.sleep(delay)
        return fn(*args, **kwargs)
    return call

def build(seed=0):
    w = Warehouse(seed)
    server = serve.new_server("inventory", "A hardware warehouse, slowed.")
    tools = [slowed(getattr(w, n), float(sys.argv[1])) for n in Warehouse.TOOL_NAMES]
    serve.add_tools(server, tools, writes=["update_stock"])
    return server

serve.run(build(), "stdio", "127.0.0.1", 0)
"""


async def rollout(pool: ToolPool, scenario: Scenario) -> int:
    async with pool.session() as session:
        await session.call("list_categories", {})
        if sku := re.search(r"SKU-\d+", scenario.task):
            await session.call("get_item", {"sku": sku.group()})
        elif name := re.search(r"(?:does the|How many) ([a-z0-9 -]+?)(?: cost| units)", scenario.task):
            await session.call("search_items", {"query": name.group(1)})
        else:
            return 1
    return 2  # calls made


async def steps(spec: ServerSpec, args: argparse.Namespace) -> dict[str, float]:
    limit = anyio.CapacityLimiter(args.concurrency)
    seconds, made = [], []
    figures = {"calls": 0.0, "calls_saved": 0.0, "server_seconds_saved": 0.0}
    async with ToolPool(spec, per_rollout=False) as pool:
        async with pool.session():  # the shared session's server starts before the clock does
            pass
        for step in range(args.steps):
            scenarios = tasks.get("inventory").generate(args.groups, seed=step, difficulties=[1, 2])
            started = time.perf_counter()
            with read_cache(pool, step) as cache:
                async with anyio.create_task_group() as tg:
                    for scenario in scenarios:
                        for _ in range(args.group_size):

                            async def one(s: Scenario = scenario) -> None:
                                async with limit:
                                    made.append(await rollout(pool, s))

                            tg.start_soon(one)
            seconds.append(time.perf_counter() - started)
            for key in figures:
                figures[key] += cache.get(f"read_cache/{key}", 0.0)
    return {
        "seconds_per_step": round(sum(seconds) / len(seconds), 3),
        "tool_calls": sum(made),
        **{f"cache_{k}": round(v, 3) for k, v in figures.items()},
    }


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = Path(tmp) / "slow_inventory.py"
        server.write_text(SLOW_SERVER)
        target = f"{sys.executable} {server} {args.delay}"
        env = {"PYTHONPATH": str(ROOT)}
        cassette = str(Path(tmp) / "cassette.jsonl")
        modes = {
            "live": CassetteSettings(record=cassette),
            "replayed": CassetteSettings(replay=cassette),
            "cache_reads": CassetteSettings(cache_reads=True),
        }
        for mode, settings in modes.items():
            result = await steps(ServerSpec.parse(target, env=env, cassette=settings), args)
            if mode == "cache_reads":
                result["share_of_calls_saved"] = round(result["cache_calls_saved"] / result["tool_calls"], 3)
            print(
                json.dumps(
                    {
                        "mode": mode,
                        "delay_s": args.delay,
                        "steps": args.steps,
                        "rollouts_per_step": args.groups * args.group_size,
                        "concurrency": args.concurrency,
                        **result,
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delay", type=float, default=1.0, help="seconds each tool call takes on the server")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--groups", type=int, default=2, help="scenarios per step")
    ap.add_argument("--group-size", type=int, default=4, help="rollouts per scenario")
    ap.add_argument("--concurrency", type=int, default=4, help="rollouts at once")
    anyio.run(main, ap.parse_args())
