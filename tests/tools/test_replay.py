"""Record and replay (mcprl.tools.cassette, mcprl.tools.tape, `mcprl replay`): against the shipped
inventory server over real transports."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import anyio
import pytest

from mcprl.errors import UserError
from mcprl.tools import ServerSpec, ToolPool, discover, open_session
from mcprl.tools.spec import CassetteSettings
from mcprl.tools.tape import ReplayMiss, read_cache
from tests.cli_runner import run_cli

REPO = Path(__file__).resolve().parents[2]
INVENTORY = "python -m mcprl.servers.inventory"
ENV = {"PYTHONPATH": str(REPO)}  # a stdio server runs this checkout's code
SKU = "SKU-8310"  # stock 105 in the seed-0 warehouse
pytestmark = pytest.mark.anyio


def spec(
    target: str = INVENTORY, env: dict[str, str] | None = None, per_rollout: bool | None = None, **cassette
) -> ServerSpec:
    return ServerSpec.parse(
        target, env={**ENV, **(env or {})}, per_rollout=per_rollout, cassette=CassetteSettings(**cassette)
    )


def calls(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def sessions(path: Path) -> Counter:
    """Each session's calls and results in order, as a multiset (sessions are numbered as they opened)."""
    by: dict[int, list] = {}
    for c in calls(path):
        by.setdefault(c["session"], []).append(
            (c["position"], c["tool"], json.dumps(c["arguments"]), json.dumps(c["result"]))
        )
    return Counter(tuple(sorted(v)) for v in by.values())


async def stock_session(pool: ToolPool, *changes: int) -> list[str]:
    """get, then for each change: update and get again; the texts."""
    async with pool.session() as s:
        out = [(await s.call("get_item", {"sku": SKU})).text]
        for change in changes:
            out.append((await s.call("update_stock", {"sku": SKU, "change": change})).text)
            out.append((await s.call("get_item", {"sku": SKU})).text)
    return out


def write_scenarios(path: Path, n: int, seed: int = 0, difficulties: tuple[int, ...] = (1, 2, 3, 4, 5)) -> None:
    from mcprl import tasks

    found = tasks.get("inventory").generate(n, seed=seed, difficulties=difficulties)
    path.write_text("".join(s.model_dump_json() + "\n" for s in found))


def eval_json(monkeypatch, capsys, model: Path, scenarios: Path, *args: str) -> dict:
    code, out, err = run_cli(
        monkeypatch,
        capsys,
        "eval",
        "--model",
        str(model),
        "--scenarios",
        str(scenarios),
        "--agent",
        "replay_agents:inventory",
        "--json",
        *args,
    )
    assert code == 0, err[-3000:]
    return json.loads(out)


def timeless(value):
    """`value` without the latencies it reports (a replay answers in its own time)."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if "latency" not in k}
    return [timeless(v) for v in value] if isinstance(value, list) else value


def test_a_recorded_eval_replayed_gives_the_same_tool_results_and_the_same_checks(
    tmp_path, tiny_model_dir, home, monkeypatch, capsys
):
    """Recorded live, then replayed with no server at all: every session's calls get the results the
    server gave (the replay's own recording equals the live one), and every check scores the same."""
    scen, live, again = tmp_path / "s.jsonl", tmp_path / "live.jsonl", tmp_path / "again.jsonl"
    write_scenarios(scen, 10)
    first = eval_json(
        monkeypatch,
        capsys,
        tiny_model_dir,
        scen,
        "--server",
        INVENTORY,
        "--env",
        f"PYTHONPATH={REPO}",
        "--record",
        str(live),
    )
    assert first["failed_rollouts"] == 0 and 0 < first["success_rate"] < 1
    recorded = calls(live)
    assert {c["tool"] for c in recorded} >= {"get_item", "update_stock", "search_items", "list_items"}
    replayed = eval_json(monkeypatch, capsys, tiny_model_dir, scen, "--replay", str(live), "--record", str(again))
    assert timeless(replayed) == timeless(first)  # all but how long the calls took
    assert sessions(again) == sessions(live) and len(calls(again)) == len(recorded)


def test_a_miss_fails_that_rollout_and_not_the_run(tmp_path, tiny_model_dir, home, monkeypatch, capsys):
    """Tasks the cassette never saw fail their own rollouts, named as a replay miss; the others pass as recorded."""
    scen, more, live = tmp_path / "s.jsonl", tmp_path / "more.jsonl", tmp_path / "live.jsonl"
    write_scenarios(scen, 3)
    first = eval_json(monkeypatch, capsys, tiny_model_dir, scen, "--server", INVENTORY, "--record", str(live))
    write_scenarios(more, 3, seed=7)
    more.write_text(scen.read_text() + more.read_text())
    result = eval_json(monkeypatch, capsys, tiny_model_dir, more, "--replay", str(live))
    assert result["scenarios"] == 6 and 1 <= result["failed_rollouts"] <= 3
    assert result["reward_mean"] * 6 >= first["reward_mean"] * 3  # the recorded tasks still score


def test_a_training_run_records_into_its_directory_and_counts_what_its_read_cache_saved(
    tmp_path, tiny_model_dir, home, monkeypatch, capsys
):
    scen = tmp_path / "s.jsonl"
    write_scenarios(scen, 3, difficulties=(1, 2))
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "train",
        "--server",
        INVENTORY,
        "--scenarios",
        str(scen),
        "--val-size",
        "1",
        "--agent",
        "replay_agents:sampled_then_inventory",
        "--cache-reads",
        "--no-per-rollout",
        "--steps",
        "1",
        "--group-size",
        "4",
        "--groups-per-step",
        "1",
        "--no-demonstration",
        "--max-tokens",
        "4",
        "--model",
        str(tiny_model_dir),
        "--name",
        "r",
    )
    assert code == 0, err[-3000:]
    run = home / "default" / "r"
    (row,) = [r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["kind"] == "train"]
    assert row["read_cache/calls"] >= 1 and row["read_cache/calls_saved"] == 3 * row["read_cache/calls"]
    assert row["read_cache/server_seconds_saved"] > 0
    recorded = calls(run / "cassette.jsonl")  # every call of the run: evaluations and the step's, cached ones too
    assert len({c["session"] for c in recorded}) >= 4 + 2 and all(c["result"] for c in recorded)


def test_scenarios_grounded_on_a_replayed_exploration_are_those_grounded_live(tmp_path, monkeypatch, capsys):
    """`mcprl scenarios` records its exploration and the verification of each task's chain; replayed
    with no server, the same exploration grounds the same tasks, byte for byte."""
    monkeypatch.chdir(tmp_path)
    common = ("-n", "4", "--explore-calls", "30")
    code, _, err = run_cli(
        monkeypatch,
        capsys,
        "scenarios",
        "--server",
        INVENTORY,
        "--env",
        f"PYTHONPATH={REPO}",
        *common,
        "-o",
        "live.jsonl",
        "--record",
        "c.jsonl",
    )
    assert code == 0, err[-3000:]
    assert any(c["tool"] == "update_stock" for c in calls(tmp_path / "c.jsonl"))  # writes explored, in fresh sessions
    code, _, err = run_cli(monkeypatch, capsys, "scenarios", *common, "-o", "again.jsonl", "--replay", "c.jsonl")
    assert code == 0, err[-3000:]
    assert (tmp_path / "again.jsonl").read_text() == (tmp_path / "live.jsonl").read_text()
    explored = [
        [{k: v for k, v in json.loads(line).items() if k != "latency_s"} for line in f.read_text().splitlines()]
        for f in (tmp_path / "live.exploration.jsonl", tmp_path / "again.exploration.jsonl")
    ]
    assert explored[0] == explored[1]  # every call and result, but how long it took


@pytest.mark.parametrize("kind", ["plain", "langgraph", "user_agents:solve"])
async def test_a_replayed_rollout_sees_the_recorded_result_and_a_miss_fails_it_by_name(tmp_path, tiny_model_dir, kind):
    """Any agent kind: a recorded call gets the recorded text; a call the cassette lacks ends that rollout with a
    `replay miss` error naming the call; with --on-miss nearest the trajectory counts and logs the stand-in."""
    from mcprl.rollout import agents
    from mcprl.rollout.config import RolloutConfig
    from mcprl.types import Scenario
    from tests.scripted_policy import call, scripted_endpoint

    cassette = tmp_path / "c.jsonl"
    async with ToolPool(spec(record=str(cassette))) as pool:
        live = await stock_session(pool)
    task, config = Scenario(task=f"How many units of item {SKU} are in stock?"), RolloutConfig(demonstration=False)

    async def roll(replies: list[str], on_miss: str = "error"):
        with scripted_endpoint(tiny_model_dir, replies) as (model, _):
            async with ToolPool(spec(replay=str(cassette), on_miss=on_miss)) as pool:
                return await agents.load(kind)(model, task, pool, config)

    hit = await roll([call("get_item", sku=SKU), "105"])
    assert hit.error is None and [m["content"] for m in hit.messages if m["role"] == "tool"] == live
    miss = await roll([call("get_item", sku="SKU-8311"), "105"])
    assert miss.error.startswith('replay miss: get_item {"sku": "SKU-8311"} (a read) is not in ')
    near = await roll([call("get_item", sku="SKU-8311"), "105"], on_miss="nearest")
    assert near.error is None and near.metrics["replayed/nearest"] == 1
    assert any("get_item: answered from the nearest recorded call" in line for line in near.logs)


async def test_writes_replay_in_order_per_session_and_reads_in_the_state_they_were_made(tmp_path):
    cassette = tmp_path / "c.jsonl"
    async with ToolPool(spec(record=str(cassette))) as pool:
        live_a = await stock_session(pool, 5, 5)
        live_b = await stock_session(pool, -3)
        async with pool.session() as s:  # c: a write, and no read after it
            await s.call("update_stock", {"sku": SKU, "change": 7})
    assert live_a[1:4] == [live_a[1], live_a[2], live_a[3]] and "105 -> 110" in live_a[1] and "110 -> 115" in live_a[3]
    async with ToolPool(spec(replay=str(cassette))) as pool:
        async with anyio.create_task_group() as tg:  # two sessions at once, each on its own recorded state
            results: dict[str, list[str]] = {}

            async def run(name: str, *changes: int) -> None:
                results[name] = await stock_session(pool, *changes)

            tg.start_soon(run, "a", 5, 5)
            tg.start_soon(run, "b", -3)
        assert results == {"a": live_a, "b": live_b}
        async with pool.session() as s:  # no read before the write this time: the writes still match in order
            assert "105 -> 110" in (await s.call("update_stock", {"change": 5.0, "sku": SKU})).text  # 5.0 is 5
            assert "stock: 110" in (await s.call("get_item", {"sku": SKU})).text
            with pytest.raises(ReplayMiss, match=r"update_stock .*may write.* is not in .*c\.jsonl"):
                await s.call("update_stock", {"sku": SKU, "change": 7})  # never the second write recorded
        async with pool.session() as s:  # c's write, then a read c never made after it: a miss, not a's or b's answer
            assert "105 -> 112" in (await s.call("update_stock", {"sku": SKU, "change": 7})).text
            with pytest.raises(ReplayMiss, match=r"get_item .*\(a read\) is not in"):
                await s.call("get_item", {"sku": SKU})


async def test_a_replayed_write_never_reaches_the_live_server(tmp_path):
    """With --on-miss live, a miss goes to the live server, but replayed writes do not: its state is untouched."""
    cassette = tmp_path / "c.jsonl"
    async with ToolPool(spec(record=str(cassette), per_rollout=False)) as pool:
        await stock_session(pool, 5)
    async with ToolPool(spec(replay=str(cassette), on_miss="live", per_rollout=False)) as pool, pool.session() as s:
        assert "105 -> 110" in (await s.call("update_stock", {"sku": SKU, "change": 5})).text
        live = await s.call("list_items", {"category": "tools"})  # not recorded: asked of the live server
        assert live.replayed == "live" and f"{SKU} | heavy-duty chisel | tools | stock: 105 " in live.text


async def test_nearest_answers_a_read_from_the_closest_recorded_call_and_says_so(tmp_path):
    cassette = tmp_path / "c.jsonl"
    async with ToolPool(spec(record=str(cassette))) as pool, pool.session() as s:
        await s.call("search_items", {"query": "chisel"})
        await s.call("search_items", {"query": "drill"})
    async with ToolPool(spec(replay=str(cassette), on_miss="nearest")) as pool:
        async with pool.session() as s:
            near = await s.call("search_items", {"query": "chisels"})
            assert near.replayed == "nearest" and "chisel" in near.text and "drill" not in near.text
            exact = await s.call("search_items", {"query": "drill"})
            assert exact.replayed == "exact"
            with pytest.raises(ReplayMiss):  # a tool that may write has no nearest answer
                await s.call("update_stock", {"sku": SKU, "change": 1})
        assert pool.tape.summary().endswith(
            "2 calls answered (1 by the nearest recorded call, 0 live), 1 misses; "
            "0 of its 2 recorded calls were never asked for"
        )


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_mcprl_replay_serves_a_cassette_to_a_plain_mcp_client(tmp_path, transport):
    import subprocess

    from conftest import _free_port, _wait_listening

    cassette = tmp_path / "c.jsonl"
    async with ToolPool(spec(record=str(cassette))) as pool:
        live = await stock_session(pool, 5)
        live_hash = pool.toolset.hash
    command = [sys.executable, "-m", "mcprl.cli", "replay", str(cassette)]
    proc = None
    if transport == "stdio":
        served = spec(" ".join(command))
    else:
        port = _free_port()
        proc = subprocess.Popen(
            [*command, "--transport", "http", "--port", str(port)],
            env={"PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_listening(proc, port)
        served = ServerSpec.parse(f"http://127.0.0.1:{port}/mcp")
    try:
        assert (await discover(served)).hash == live_hash
        for _ in range(2):  # each client session from the recorded start
            async with open_session(served) as s:
                texts = [
                    (await s.call("get_item", {"sku": SKU})).text,
                    (await s.call("update_stock", {"sku": SKU, "change": 5})).text,
                    (await s.call("get_item", {"sku": SKU})).text,
                ]
                assert texts == live
                miss = await s.call("get_item", {"sku": "SKU-0000"})
                assert miss.is_error and "replay miss" in miss.text
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()


async def test_secrets_never_appear_in_a_cassette_and_a_replay_given_them_still_matches(tmp_path, monkeypatch):
    secret = "tok-s3cret-value-42"
    cassette = tmp_path / "c.jsonl"
    async with ToolPool(spec(env={"INVENTORY_API_TOKEN": secret}, record=str(cassette))) as pool:
        async with pool.session() as s:
            echoed = await s.call("search_items", {"query": secret})  # the server repeats it: "no items match '...'"
    assert secret in echoed.text
    text = cassette.read_text()
    assert secret not in text and "***" in text
    async with ToolPool(spec(env={"INVENTORY_API_TOKEN": secret}, replay=str(cassette))) as pool:
        async with pool.session() as s:
            again = await s.call("search_items", {"query": secret})
    assert again.replayed == "exact" and secret not in again.text


async def test_identical_reads_of_a_step_are_made_once_and_writers_read_their_own_state(tmp_path):
    async with ToolPool(spec(cache_reads=True, per_rollout=False)) as pool:

        async def read() -> str:
            async with pool.session() as s:
                return (await s.call("get_item", {"sku": SKU})).text

        with read_cache(pool, 0) as figures:
            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(read)
            async with pool.session() as s:  # a session that wrote reads past the cache
                await s.call("update_stock", {"sku": SKU, "change": 1})
                assert "stock: 106" in (await s.call("get_item", {"sku": SKU})).text
        assert figures["read_cache/calls"] == 1 and figures["read_cache/calls_saved"] == 3
        assert figures["read_cache/server_seconds_saved"] > 0
        with read_cache(pool, 1) as figures:  # a new step asks again
            assert "stock: 106" in await read()
        assert figures["read_cache/calls"] == 1 and figures["read_cache/calls_saved"] == 0


async def test_bad_cassettes_are_one_line_errors_and_nothing_is_served_from_the_wrong_server(tmp_path):
    cassette = tmp_path / "c.jsonl"
    async with ToolPool(spec(record=str(cassette))) as pool:
        await stock_session(pool, 5)
    lines = cassette.read_text().splitlines()

    def replay_of(text: str, **kw) -> ToolPool:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text)
        return ToolPool(spec(replay=str(bad), **kw))

    cases = [
        ("\n".join(lines)[:-20], r"bad\.jsonl:4: not a JSON line; the cassette is truncated or was edited"),
        (
            "\n".join([*lines, lines[1].replace('"get_item"', '"get_items"')]),
            r"bad\.jsonl:5: a call to 'get_items', a tool the recorded server does not list",
        ),
        (
            "\n".join([lines[0].replace("Show one item", "Show an item"), *lines[1:]]),
            r"its tools hash \w+, not the \w+ its header says; the cassette was edited",
        ),
        ("not a cassette\n", r"bad\.jsonl:1: not a cassette header"),
    ]
    for text, message in cases:
        with pytest.raises(UserError, match=message):
            async with replay_of(text):
                pass
    with pytest.raises(
        UserError,
        match=r"was recorded from python -m mcprl\.servers\.inventory, not python -m mcprl\.servers\.calculator",
    ):
        async with ToolPool(spec("python -m mcprl.servers.calculator", replay=str(cassette))):
            pass
    # a header whose tools were changed consistently (hash and all): the live server's tool list differs
    from mcprl.tools.cassette import Header
    from mcprl.tools.convert import to_openai, tools_hash

    header = Header.model_validate_json(lines[0])
    header.tools = [t for t in header.tools if t["name"] != "list_categories"]
    header.tools_hash = tools_hash([to_openai(t) for t in header.tools])
    with pytest.raises(UserError, match=r"lists tools that hash \w+ now: record the cassette again"):
        async with replay_of("\n".join([header.model_dump_json(), *lines[1:]]), on_miss="live"):
            pass


def test_mcprl_tools_lists_what_a_cassette_serves_without_its_server(tmp_path, monkeypatch, capsys):
    cassette = tmp_path / "c.jsonl"
    code, live, err = run_cli(monkeypatch, capsys, "tools", "--server", INVENTORY, "--json")
    assert code == 0, err
    anyio.run(_record_one, cassette)
    code, replayed, err = run_cli(monkeypatch, capsys, "tools", "--replay", str(cassette), "--json")
    assert code == 0, err
    assert json.loads(replayed) == json.loads(live)
    code, _, err = run_cli(monkeypatch, capsys, "tools", "--replay", str(tmp_path / "none.jsonl"))
    assert (
        code == 2
        and err.strip() == f"error: {tmp_path / 'none.jsonl'}: no such cassette; record one with --record FILE"
    )


async def _record_one(cassette: Path) -> None:
    async with ToolPool(spec(record=str(cassette))) as pool:
        await stock_session(pool)
