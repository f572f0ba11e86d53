"""Soak: minutes of mixed normal and hostile traffic against `mcprl serve` on loopback.

Starts `mcprl serve` (SmolLM2-135M by default) as a subprocess with its key in MCPRL_API_KEY,
then, until the time is up, `--clients` concurrent clients each send requests drawn from a fixed
mix: normal chat (some with tools, n > 1 or a JSON schema), heavy but legal requests (a
1,500-token prompt) and hostile ones (max_tokens 10^9, n x tokens over the budget, 5,000
messages, a 10 MB body, a schema nested 300 levels, a 280 KB nested-anyOf schema, seed 2^70,
malformed JSON, a missing or bare key, and clients that ask for a long generation and hang up
after a second). A poller asks `/health` every 250 ms. When the time is up, requests in flight
are dropped and the server gets SIGTERM. Reports requests served, refused, 5xx (target 0),
`/health` p99 (target < 1 s), the server's peak RSS (VmHWM; target < 2 GB for the 135M model),
its RSS once idle again, and how long SIGTERM took; results in bench/results/soak.json.

    python bench/soak.py --minutes 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "soak.json"
MSGS = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the capital of France?"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }
]
ANSWER = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "sure": {"type": "boolean"}},
            "required": ["city", "sure"],
        },
    },
}


def nested(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def nested_any_of(depth: int, width: int) -> dict:
    schema: dict = {"type": "string"}
    for d in range(depth):
        schema = {"anyOf": [schema, *({"type": "object", "properties": {f"k{d}_{i}": schema}} for i in range(width))]}
    return schema


def conversation(n: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(n - 1)] + [
        MSGS[-1]
    ]


def mix(model: str) -> list[tuple[str, int, dict[str, Any]]]:
    """(kind, weight, what to send): `json` a body, `raw` bytes, `headers` replace the key's,
    `hang_up` seconds after which the client goes away."""
    base = {"model": model, "messages": MSGS}
    big_schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": nested_any_of(6, 3)}}
    return [
        ("normal", 30, {"json": {**base, "max_tokens": 24}}),
        ("normal_tools", 10, {"json": {**base, "tools": TOOLS, "max_tokens": 32}}),
        ("normal_n4", 8, {"json": {**base, "n": 4, "max_tokens": 16, "seed": 1}}),
        ("normal_schema", 8, {"json": {**base, "response_format": ANSWER, "max_tokens": 32}}),
        ("max_tokens_1e9", 3, {"json": {**base, "max_tokens": 10**9}}),
        (
            "n64_budget",
            3,
            {"json": {**base, "messages": [{"role": "user", "content": "word " * 3000}], "n": 64, "max_tokens": 512}},
        ),
        ("messages_5000", 3, {"json": {**base, "messages": conversation(5000)}}),
        (
            "body_10mb",
            2,
            {"raw": json.dumps({**base, "messages": [{"role": "user", "content": "x" * 10 * 2**20}]}).encode()},
        ),
        (
            "schema_depth_300",
            3,
            {
                "json": {
                    **base,
                    "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": nested(300)}},
                }
            },
        ),
        ("schema_280kb", 2, {"json": {**base, "response_format": big_schema}}),
        ("seed_2_70", 3, {"json": {**base, "seed": 2**70}}),
        ("malformed", 3, {"raw": b'{"model": "x", "messages": [{"role": '}),
        ("no_key", 2, {"json": base, "headers": {}}),
        ("bare_key", 2, {"json": base, "headers": "bare"}),
        ("hang_up", 4, {"json": {**base, "max_tokens": 4096, "n": 4}, "hang_up": 1.0}),
        (
            "long_prompt",
            2,
            {"json": {**base, "messages": [{"role": "user", "content": "word " * 1500}], "max_tokens": 8}},
        ),
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int, field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


async def soak(args: argparse.Namespace, base: str, key: str, pid: int) -> dict[str, Any]:
    rng = random.Random(args.seed)
    kinds = mix(args.served_name)
    statuses: dict[str, Counter] = {k: Counter() for k, _, _ in kinds}
    latencies: dict[str, list[float]] = {k: [] for k, _, _ in kinds}
    health: list[float] = []
    rss_samples: list[float] = []
    deadline = time.monotonic() + args.minutes * 60

    async def client(c: httpx.AsyncClient) -> None:
        while time.monotonic() < deadline:
            kind, _, spec = rng.choices(kinds, weights=[w for _, w, _ in kinds])[0]
            headers = {"Authorization": f"Bearer {key}"}
            if "headers" in spec:
                headers = {"Authorization": key} if spec["headers"] == "bare" else {}
            timeout = spec.get("hang_up", 300.0)
            start = time.monotonic()
            try:
                if "raw" in spec:
                    r = await c.post(
                        f"{base}/v1/chat/completions",
                        content=spec["raw"],
                        headers={**headers, "content-type": "application/json"},
                        timeout=timeout,
                    )
                else:
                    r = await c.post(f"{base}/v1/chat/completions", json=spec["json"], headers=headers, timeout=timeout)
                statuses[kind][r.status_code] += 1
                if r.status_code >= 500:
                    print(f"5xx on {kind}: {r.text[:300]}", file=sys.stderr)
            except httpx.TimeoutException:
                statuses[kind]["hung up" if "hang_up" in spec else "timeout"] += 1
            except httpx.HTTPError as e:
                statuses[kind][type(e).__name__] += 1
            latencies[kind].append(time.monotonic() - start)

    async def poll_health(c: httpx.AsyncClient) -> None:
        while time.monotonic() < deadline:
            start = time.monotonic()
            try:
                (await c.get(f"{base}/health", timeout=5)).raise_for_status()
                health.append(time.monotonic() - start)
            except httpx.HTTPError:
                health.append(5.0)  # counted as its timeout
            rss_samples.append(rss_mb(pid, "VmRSS"))
            await asyncio.sleep(0.25)

    async def until_deadline(work) -> None:
        """`work` (a client's loop), cancelled with its request in flight when the time is up."""
        try:
            await asyncio.wait_for(work, timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            pass

    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=args.clients + 4)) as c:
        await asyncio.gather(poll_health(c), *(until_deadline(client(c)) for _ in range(args.clients)))
    all_status = sum(statuses.values(), Counter())
    health.sort()
    return {
        "served": sum(n for s, n in all_status.items() if isinstance(s, int) and s < 300),
        "refused_4xx": sum(n for s, n in all_status.items() if isinstance(s, int) and 400 <= s < 500),
        "5xx": sum(n for s, n in all_status.items() if isinstance(s, int) and s >= 500),
        "hung_up": all_status["hung up"],
        "client_errors": {str(s): n for s, n in all_status.items() if not isinstance(s, int) and s != "hung up"},
        "health_polls": len(health),
        "health_p50_s": round(statistics.median(health), 4),
        "health_p99_s": round(health[min(len(health) - 1, int(0.99 * len(health)))], 4),
        "health_max_s": round(health[-1], 4),
        "rss_mb_last": round(rss_samples[-1], 1) if rss_samples else None,
        "by_kind": {
            k: {
                "statuses": {str(s): n for s, n in statuses[k].items()},
                "median_s": round(statistics.median(latencies[k]), 3),
            }
            for k in statuses
            if latencies[k]
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--clients", type=int, default=6, help="concurrent clients")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.served_name = args.model
    port, key = free_port(), secrets.token_urlsafe(16)
    env = {**os.environ, "MCPRL_API_KEY": key, "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-c",
        "from mcprl.cli.main import main; main()",
        "serve",
        "--model",
        args.model,
        "--port",
        str(port),
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log = tempfile.NamedTemporaryFile(
        "w", prefix="mcprl-soak-server-", suffix=".log", delete=False
    )  # kept for a look after
    server = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while True:
            if server.poll() is not None:
                sys.exit(f"mcprl serve exited with {server.returncode} before answering")
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - started > 300:
                sys.exit("mcprl serve did not answer /health within 300 s")
            time.sleep(0.5)
        # One request first: the weights are memory-mapped, and resident once a forward pass has read them.
        httpx.post(
            f"{base}/v1/chat/completions",
            json={"model": args.served_name, "messages": MSGS, "max_tokens": 4},
            headers={"Authorization": f"Bearer {key}"},
            timeout=300,
        ).raise_for_status()
        baseline = rss_mb(server.pid, "VmRSS")
        result = asyncio.run(soak(args, base, key, server.pid))
        result["rss_mb_peak"] = round(rss_mb(server.pid, "VmHWM"), 1)
        result["rss_mb_warm_start"] = round(baseline, 1)
        time.sleep(3)  # what is in flight when the time is up is cancelled; then the memory should be back
        result["rss_mb_idle_end"] = round(rss_mb(server.pid, "VmRSS"), 1)
        stop = time.monotonic()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
            result["sigterm_exit_s"] = round(time.monotonic() - stop, 2)
        except subprocess.TimeoutExpired:
            result["sigterm_exit_s"] = None  # still running 30 s after SIGTERM: killed below
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        log.close()
    result |= {
        "minutes": args.minutes,
        "model": args.model,
        "clients": args.clients,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "command": "python bench/soak.py " + " ".join(sys.argv[1:]),
        "server_log": log.name,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    exit_s = result["sigterm_exit_s"]
    ok = (
        result["5xx"] == 0
        and result["health_p99_s"] < 1
        and result["rss_mb_peak"] < 2048
        and exit_s is not None
        and exit_s < 10
    )
    print(
        f"soak {args.minutes:g} min: served {result['served']}, refused {result['refused_4xx']}, hung up "
        f"{result['hung_up']}, "
        f"5xx {result['5xx']}, /health p99 {result['health_p99_s']:.3f} s (max {result['health_max_s']:.3f}), "
        f"peak RSS {result['rss_mb_peak']:.0f} MB, SIGTERM exit {'over 30' if exit_s is None else exit_s} s: "
        f"{'PASS' if ok else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
