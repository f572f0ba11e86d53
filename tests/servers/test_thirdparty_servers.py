"""Exploring and grounding on MCP servers we did not write (mcprl.scenarios.explore, .values, .grounded),
installed from PyPI into their own environment as a user would: mcp-server-calculator (one tool,
`calculate(expression)`), mcp-server-git (every tool takes `repo_path`, which must lie inside the
`--repository` on its command line), mcp-server-time (every result states today's date), mcp-dice (every roll
another), mcp-server-sqlite and mcp-server-obsidian (notes found by a part of their names, lines joined by
`<br>`). The tests state properties: a working call on every tool that can answer, no failed call made twice, the
bounds kept, every kept task's answer given by the server when the test replays its chain, and no task that states
its own answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcprl.checks import field_at, holds_answer, live_of
from mcprl.judges.verify import checker_for
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import explore
from mcprl.scenarios.expressions import in_words
from mcprl.scenarios.grounded import ground
from mcprl.scenarios.replay import gives_answer
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Trajectory
from tests import server_fork

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-thirdparty"
PACKAGES = [
    "mcp-server-calculator==0.2.1",
    "mcp-server-git==2026.10.10",
    "mcp-server-time==2026.10.10",
    "mcp-dice==0.1.2",
    "mcp-server-sqlite==2025.4.25",
    "mcp-server-obsidian==0.1.3",
]


@pytest.fixture(scope="session")
def thirdparty_bin() -> Path:
    """The bin/ of an environment holding the third-party servers (made in REPO/.venv-thirdparty if missing)."""
    python = VENV / "bin" / "python"
    # every pin installed, at its version (`pip show` succeeds where one of several is)
    pins = dict(p.split("==") for p in PACKAGES)
    check = [
        str(python),
        "-c",
        f"import importlib.metadata as m; assert all(m.version(p) == v for p, v in {pins!r}.items())",
    ]
    if not (python.exists() and subprocess.run(check, capture_output=True).returncode == 0):
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"cannot create {VENV}: {made.stderr.strip()[-300:]}")
        pip = subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], capture_output=True, text=True)
        if pip.returncode != 0:
            pytest.skip(f"pip install {' '.join(PACKAGES)} failed: {pip.stderr.strip()[-300:]}")
    # the servers' processes forked from one of this environment that has imported its SDK (`server`)
    forks = server_fork.start(python, server_fork.CONSOLE_PRELOAD)
    yield VENV / "bin"
    forks.terminate()
    forks.wait(timeout=30)


def server(bin_dir: Path, name: str) -> str:
    """The command of the environment's console script `name` (`BIN/NAME`), run by a fork of a process of the
    environment that has imported its MCP SDK (tests/server_fork.py): ~1.3 s of CPU less for each session."""
    return server_fork.console(bin_dir, name)


@pytest.fixture(scope="session")
def git_repo(tmp_path_factory) -> Path:
    """A small repository with dated commits on two branches."""
    repo = tmp_path_factory.mktemp("repo")
    env = {**os.environ, "GIT_AUTHOR_DATE": "2024-03-01T10:00:00", "GIT_COMMITTER_DATE": "2024-03-01T10:00:00"}

    def git(*args: str, who: str = "Ann") -> None:
        subprocess.run(
            ["git", "-c", f"user.name={who}", "-c", f"user.email={who.lower()}@example.com", *args],
            cwd=repo,
            env=env,
            check=True,
            capture_output=True,
        )

    git("init", "-q", "-b", "main")
    (repo / "README.md").write_text("# Demo\nA small project.\n")
    git("add", ".")
    git("commit", "-qm", "Initial commit")
    (repo / "hello.py").write_text("print('hi')\n")
    git("add", "hello.py")
    git("commit", "-qm", "Add hello script", who="Bob")
    git("checkout", "-qb", "feature")
    (repo / "hello.py").write_text("print('hello')\n")
    git("commit", "-qam", "Greet in full")
    git("checkout", "-q", "main")
    return repo


def failed_twice(exploration) -> list[str]:
    keys = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in exploration.calls if c.is_error]
    return [k for k in set(keys) if keys.count(k) > 1]


def reads_twice(exploration) -> list[str]:
    """Reads made again that were not made again on purpose (a read-back after a write, or in a fresh session after
    one: did the state outlive it?)."""
    keys = [json.dumps([c.tool, c.arguments], sort_keys=True) for c in exploration.calls if c.repeats is None]
    return [k for k in set(keys) if keys.count(k) > 1]


def is_live(task) -> bool:
    return live_of(task.check) is not None


async def check_answers(pool: ToolPool, tasks) -> None:
    """Every kept task's answer is what the server gives its chain now, and no task states it; where the server
    answers anew each time (`live`), the verify judge scores an episode by the value its own call gave."""
    assert tasks
    for t in tasks:
        async with pool.session() as session:
            for step in t.reference:
                outcome = await session.call(step.tool, step.arguments)
                assert not outcome.is_error, (t.task, step, outcome.text)
        assert not holds_answer(t.task, t.answer), t.task
        if not is_live(t):
            assert holds_answer(outcome.text, t.answer), (t.task, t.answer, outcome.text)
            continue
        value = field_at(json.loads(outcome.text), t.check.live.field)
        call = {"id": "c", "type": "function", "function": {"name": step.tool, "arguments": json.dumps(step.arguments)}}
        conversation = [
            {"role": "user", "content": t.task},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c", "content": outcome.text},
        ]
        score = checker_for(t)
        assert score(t, Trajectory(messages=[*conversation, {"role": "assistant", "content": f"It is {value}."}]))
        if not holds_answer(str(value), t.answer):  # the value the task was written with is this episode's no more
            wrong = Trajectory(messages=[*conversation, {"role": "assistant", "content": f"It is {t.answer}."}])
            assert score(t, wrong) == 0, (t.task, value, t.answer)


@pytest.mark.anyio
async def test_a_calculator_we_did_not_write_is_sent_expressions_and_grounds_arithmetic(thirdparty_bin):
    """mcp-server-calculator: its one string parameter was sent its own name 120 times ("Unknown
    identifier: expression"); now expressions, and the tasks ask for their value."""
    spec = ServerSpec.parse(server(thirdparty_bin, "mcp-server-calculator"))
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=30), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, 8, exploration, seed=0, say=lambda _: None)
        assert len(exploration.calls) <= 30 and not failed_twice(exploration) and not reads_twice(exploration)
        answered = [c for c in exploration.calls if not c.is_error]
        assert len(answered) >= 20, exploration.summary()
        assert len({c.arguments["expression"] for c in answered}) == len(answered)
        assert len(tasks) == 8 and report.covered == {"calculate": 8}
        await check_answers(pool, tasks)
    for t in tasks:  # the value of an expression the task states, in symbols or words, as a person asks it
        expression = " ".join(t.reference[0].arguments["expression"].split())
        assert expression in t.task or str(in_words(expression)) in t.task, t.task
        assert "calculate" not in t.task.lower(), t.task
        assert abs(float(t.answer) - eval(expression)) < 1e-6  # noqa: S307 (the expression is ours)


@pytest.mark.anyio
async def test_a_git_server_is_sent_the_repository_its_command_line_names(thirdparty_bin, git_repo):
    """mcp-server-git: `repo_path` was "path", "repo" or "repository" in every one of 120 calls, all
    refused. Its command line names the repository, and its errors say so; every read tool now
    answers, and tasks ask about its commits. Its writes are explored on copies of the repository (the run's test
    below checks the repository after)."""
    spec = ServerSpec.parse(f"{server(thirdparty_bin, 'mcp-server-git')} --repository {git_repo}")
    async with ToolPool(spec) as pool:
        reads = {t["name"] for t in pool.toolset.mcp_tools if (t.get("annotations") or {}).get("readOnlyHint")}
        started = time.monotonic()
        exploration = await explore(pool, ExploreConfig(calls=80, rate=10), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, 12, exploration, seed=0, say=lambda _: None)
        assert len(exploration.calls) <= 80 and time.monotonic() - started >= (len(exploration.calls) - 1) / 10
        assert not failed_twice(exploration) and not reads_twice(exploration)
        assert spec.private_copy and exploration.isolated
        assert set(exploration.answered()) >= reads - {"git_diff"}, exploration.summary()
        assert len(tasks) >= 6 and len(report.covered) >= 2, report.summary()
        await check_answers(pool, tasks)
    assert any(c.arguments.get("repo_path") == str(git_repo) and not c.is_error for c in exploration.calls)
    # the one repository the server takes is its context: sent in every reference call, stated in no task
    assert exploration.fixed == {"repo_path": str(git_repo)}
    assert all(str(git_repo) not in t.task and t.reference[0].arguments["repo_path"] == str(git_repo) for t in tasks)
    assert any(str(t.answer) in {"Ann", "Bob", "Initial commit", "Add hello script", "Greet in full"} for t in tasks)


@pytest.mark.anyio
async def test_a_server_that_answers_anew_each_time_grounds_tasks_read_from_the_episodes_own_call(thirdparty_bin):
    """mcp-dice: every roll gives other numbers, so no total comes back on replay, and a total that came back by
    chance was kept as the task's fixed answer ("Roll 2d6 and tell me the sum." -> 8). A replay that gives another
    result is made twice; an answer that does not come back both times is asked live where one place of the JSON
    result gave it, and the verify judge reads it from the episode's own call; a fixed answer comes back on every
    replay."""
    spec = ServerSpec.parse(server(thirdparty_bin, "mcp-dice"))
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=20), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, 8, exploration, seed=0, say=lambda _: None)
        assert len(tasks) == 8 and report.live == sum(map(is_live, tasks)) >= 6, report.summary()
        await check_answers(pool, tasks)
        for t in [t for t in tasks if not is_live(t)] * 3:
            await check_answers(pool, [t])
    # each live task reads the field it asks for, of the one call it states
    for t in filter(is_live, tasks):
        assert t.check.live.field in t.task and t.check.live.arguments["notation"] in t.task, t.task


@pytest.mark.anyio
@pytest.mark.parametrize("started", [False, True])
async def test_an_empty_database_is_filled_while_exploring_and_its_tasks_ask_about_what_was_made(
    thirdparty_bin, tmp_path, started
):
    """mcp-server-sqlite on a database file not made yet (or left empty where the server was started once): every
    read found nothing, the writes were sent reads ("Only CREATE TABLE statements are allowed"), and no task was
    grounded. A tool that may write is sent a statement that makes a table of rows first; sessions after it begin
    with that write, and the tasks, prepared by it, ask about what it made: each answer comes back after the task's
    prepared writes and not without them. The user's file is never written."""
    db = tmp_path / "new.db"
    if started:
        db.touch()
    spec = ServerSpec.parse(f"{server(thirdparty_bin, 'mcp-server-sqlite')} --db-path {db}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=60), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, 8, exploration, seed=0, say=lambda _: None)
        assert len(exploration.calls) <= 60 and not failed_twice(exploration)
        assert len(tasks) >= 6 and "read_query" in report.covered, report.summary()
        for t in tasks:
            assert t.prepare and not holds_answer(t.task, t.answer), t.task
            for prepared in (True, False):
                async with pool.session() as session:
                    for step in [*(t.prepare if prepared else []), *t.reference]:
                        outcome = await session.call(step.tool, step.arguments)
                assert gives_answer(t, outcome.data_text) is prepared, (t.task, t.answer, prepared, outcome.text)
    assert db.read_bytes() == b"" if started else not db.exists()


@pytest.mark.anyio
async def test_a_notes_server_is_asked_what_its_searches_by_a_part_of_a_name_find(thirdparty_bin, tmp_path):
    """mcp-server-obsidian on a vault of notes whose names hold spaces ("Garden plan.md"): its search finds notes by
    a part of their names and joins the paths it found with `<br>---<br>`; its read of a list of `paths` gives each
    note's text under its path. Before, no task was grounded: a found name holds the part it was searched by (read
    as the request said back), a listing's lines split by rules were read as records of one line each, a name with
    a space in it as no name, `paths` as no parameter that takes paths, and a note's front matter as a record apart
    from its note. Now tasks ask what a search finds, what a note lists under its title and what its front matter
    says, each answer comes back when the test replays its chain, none states its answer, and no failed call is made
    twice."""
    vault = tmp_path / "vault"
    (vault / "Projects").mkdir(parents=True)
    notes = {
        "Garden plan.md": "# Garden plan\n\nPlant tomatoes in May.\n",
        "Shopping list.md": "# Shopping list\n\n- seeds\n- compost\n",
        "Reading list.md": "# Reading list\n\n- Middlemarch\n",
        "Projects/Apollo launch.md": "---\nstatus: active\nowner: Dana\n---\n# Apollo\n\nLaunch review on Friday.\n",
    }
    for name, text in notes.items():
        (vault / name).write_text(text)
    spec = ServerSpec.parse(f"{server(thirdparty_bin, 'mcp-server-obsidian')} {vault}")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=120), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, 8, exploration, seed=0, say=lambda _: None)
        assert not failed_twice(exploration)
        assert len(tasks) >= 5 and {"search_notes", "read_notes"} <= set(report.covered), report.summary()
        assert {"active", "Dana"} & {str(t.answer) for t in tasks}, [(t.task, t.answer) for t in tasks]
        for t in tasks:
            assert not holds_answer(t.task, t.answer), t.task
            async with pool.session() as session:
                for step in t.reference:
                    outcome = await session.call(step.tool, step.arguments)
            assert gives_answer(t, outcome.data_text), (t.task, t.answer, outcome.text)
            assert "<br>" not in str(t.answer)
    assert {str(p.relative_to(vault)): p.read_text() for p in vault.rglob("*.md")} == notes


def test_a_server_whose_every_call_fails_says_so_per_tool_with_the_commands_own_flags(tmp_path, monkeypatch, capsys):
    """One line per tool that never answered: its calls, the errors it gave and the sources tried;
    the fix is in the flags of the command that was run."""
    from tests.cli_runner import run_cli

    shop = Path(__file__).resolve().parents[1] / "data" / "shop_server.py"
    code, out, err = run_cli(
        monkeypatch,
        capsys,
        "scenarios",
        "--server",
        f"{sys.executable} {shop}",
        "--allow",
        "run_query",
        "-n",
        "4",
        "--explore-calls",
        "12",
        "--explore-generated",
        "0",
        "-o",
        str(tmp_path / "s.jsonl"),
    )
    assert code == 2
    line = next(line for line in err.splitlines() if line.strip().startswith("run_query:"))
    assert "0 answered" in line and "Database error" in line and "argument sources tried:" in line
    fix = err.strip().splitlines()[-1]
    assert "--source synthesized" in fix and "--model" in fix and "--judge-model" not in fix
    exploration = [json.loads(line) for line in (tmp_path / "s.exploration.jsonl").read_text().splitlines()]
    assert len({json.dumps([c["tool"], c["arguments"]], sort_keys=True) for c in exploration}) == len(exploration)


def test_a_zero_data_run_on_a_repository_writes_only_copies_of_it_and_offers_no_tool_that_changed_them(
    thirdparty_bin, git_repo, tiny_model_dir, monkeypatch, capsys
):
    """A rollout's or an exploring call's `git_commit`, `git_add` or `git_checkout` would change the user's
    repository and the answers with it. Each session runs on a copy of the repository of its own, where the tools
    that may write are explored; each that changed the copy's files is retired and not offered to the policy (no
    task asks to change the user's repository), the run says so and keeps it in its settings, and after the run the
    repository's commits, branches, index and files are as they were."""
    from tests.cli_runner import run_cli

    def state() -> list[str]:
        git = ["git", "-C", str(git_repo)]
        return [
            subprocess.run([*git, *args], capture_output=True, text=True).stdout
            for args in (
                ["log", "--all", "--format=%H %s"],
                ["branch", "-a"],
                ["status", "--porcelain"],
                ["ls-files", "-s"],
            )
        ] + sorted(str(p) for p in git_repo.rglob("*") if ".git" not in p.parts)

    before = state()
    home = git_repo.parent / "home-writes"
    monkeypatch.setenv("MCPRL_HOME", str(home))
    server_command = f"{server(thirdparty_bin, 'mcp-server-git')} --repository {git_repo}"
    # in this process: an interpreter of its own costs ~10 s of imports
    code, _, err = run_cli(
        monkeypatch, capsys, "train", "--server", server_command, "--model", str(tiny_model_dir), "--steps", "0",
        "-n", "6", "--explore-calls", "30", "--name", "w", "--max-turns", "2",
    )  # fmt: skip
    assert code == 0, err[-3000:]
    run = home / "default" / "w"
    calls = [json.loads(line) for line in (run / "scenarios" / "exploration.jsonl").read_text().splitlines()]
    wrote = {c["tool"] for c in calls if c["writes"] and not c["is_error"]}
    assert wrote, [(c["tool"], c["text"][:80]) for c in calls if c["writes"]]
    assert not any("mcprl-copy" in json.dumps(c) for c in calls)  # the repository's own path, in and out
    assert all(sum(c["tool"] == tool and not c["is_error"] for c in calls) == 1 for tool in wrote)  # then retired
    said = " ".join(err.split())  # (the console wraps its lines)
    line = said[said.index("not offering") :].partition("ask to change yours")[0]
    assert all(tool in line for tool in wrote) and "may write to the files" in line
    offered = {t["function"]["name"] for t in json.loads((run / "tools.json").read_text())["tools"]}
    deny = set(json.loads((run / "config.json").read_text())["server"]["deny"])
    assert wrote <= deny and not wrote & offered
    assert state() == before


def json_fields(text: str, answer: object) -> set[str]:
    """The paths of the scalars of a JSON result that hold `answer`."""

    def walk(data: object, path: str) -> list[tuple[str, object]]:
        if isinstance(data, dict):
            return [pair for k, v in data.items() for pair in walk(v, f"{path}/{k}")]
        return [(path, data)]

    return {path for path, value in walk(json.loads(text), "") if holds_answer(str(value), answer)}


@pytest.mark.anyio
async def test_a_clock_servers_tasks_are_those_that_hold_with_its_clock_moved(thirdparty_bin, monkeypatch):
    """mcp-server-time: every result states today's date, and every task was dropped as holding only today.
    Replayed with the server's clock half a year ahead (faketime), the answers that come back then, in the field
    they came from, are kept: a time difference, not a day of the week or a difference that daylight saving moves.
    Those that do not are asked live (checked by the value the episode's own call gives), where their call's JSON
    result gives them at one place; where the clock cannot be moved, every task kept is asked live."""
    from mcprl.scenarios import replay

    spec = ServerSpec.parse(server(thirdparty_bin, "mcp-server-time"))
    later = replay.clock_moved(spec)
    if later is None:
        pytest.skip("no libfaketime moves the clock here (pip install libfaketime, on Linux)")
    async with ToolPool(spec) as pool:
        exploration = await explore(pool, ExploreConfig(calls=30), seed=0, say=lambda _: None)
        tasks, report = await ground(pool, 4, exploration, seed=0, say=lambda _: None)
        assert len(tasks) >= 2 and not failed_twice(exploration), report.summary()
        await check_answers(pool, tasks)
        monkeypatch.setattr(replay, "clock_library", lambda: None)
        unmoved, _ = await ground(pool, 4, exploration, seed=0, say=lambda _: None)
        assert all(is_live(t) for t in unmoved)
        if unmoved:
            await check_answers(pool, unmoved)
    assert any(not is_live(t) for t in tasks), [t.task for t in tasks]
    for t in [t for t in tasks if not is_live(t)]:
        now, moved = [], []
        for spec_at, results in ((spec, now), (later, moved)):
            async with ToolPool(spec_at).session() as session:
                for step in t.reference:
                    results.append((await session.call(step.tool, step.arguments)).text)
        assert json_fields(now[-1], t.answer) == json_fields(moved[-1], t.answer) != set(), (t.task, now, moved)
        assert now[-1] != moved[-1]  # the clock was moved: the result states another date
