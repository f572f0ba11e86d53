import re

import pytest

from mcprl.types import Scenario, Trajectory, TrajectoryGroup, dump_jsonl, load_jsonl
from tests.cli_runner import run_cli
from tests.fake_llm import FakeLLM, Reply, ruler_handler


def group(sid: str, *finals: str) -> TrajectoryGroup:
    task = [{"role": "user", "content": f"task {sid}: what is 3 + 4?"}]
    return TrajectoryGroup(
        scenario=Scenario(id=sid, task="what is 3 + 4?", check={"kind": "contains", "value": "7"}),
        trajectories=[Trajectory(messages=[*task, {"role": "assistant", "content": f}]) for f in finals],
    )


def by_quality(request):
    if "task bad:" in request["messages"][1]["content"]:
        return Reply("I refuse to grade.")
    return ruler_handler(lambda body: float(re.search(r"q=([\d.]+)", body).group(1)))(request)


@pytest.fixture
def groups_file(tmp_path):
    return dump_jsonl(
        [group("a", "7 q=0.2", "7 q=0.6"), group("bad", "7 q=0.1", "8 q=0.3"), group("c", "9 q=1")],
        tmp_path / "groups.jsonl",
    )


def test_rescores_groups_and_prints_a_summary(monkeypatch, capsys, tmp_path, groups_file):
    out_file = tmp_path / "out.jsonl"
    with FakeLLM(handler=by_quality) as llm:
        code, out, err = run_cli(
            monkeypatch,
            capsys,
            "judge",
            str(groups_file),
            "--judge-model",
            "openai/judge",
            "--api-base",
            llm.base_url,
            "--cache-dir",
            str(tmp_path / "cache"),
            "-o",
            str(out_file),
        )
    assert code == 0, err
    scored = load_jsonl(out_file, TrajectoryGroup)
    assert [t.reward for t in scored[0].trajectories] == [0.2, 0.6]
    assert scored[1].skipped.startswith("ruler (scenario bad): invalid verdict after 3 attempt(s)")
    assert scored[2].trajectories[0].reward == 1.0
    assert "judged 3 groups: 2 scored, 1 skipped" in out
    assert "mean reward 0.600 over 3 trajectories" in out
    assert "skipped: ruler (scenario bad)" in out

    # the same groups again: verdicts come from the cache, only the failed group asks again
    with FakeLLM(handler=by_quality) as llm:
        code, out, _ = run_cli(
            monkeypatch,
            capsys,
            "judge",
            str(groups_file),
            "--judge-model",
            "openai/judge",
            "--api-base",
            llm.base_url,
            "--cache-dir",
            str(tmp_path / "cache"),
            "-o",
            str(out_file),
        )
    assert code == 0 and len(llm.requests) == 3
    assert "2 groups from cache" in out


def test_gate_mode(monkeypatch, capsys, tmp_path, groups_file):
    with FakeLLM(handler=by_quality) as llm:
        code, _, err = run_cli(
            monkeypatch,
            capsys,
            "judge",
            str(groups_file),
            "--mode",
            "gate",
            "--judge-model",
            "openai/judge",
            "--api-base",
            llm.base_url,
            "--no-cache",
            "-o",
            str(tmp_path / "out.jsonl"),
        )
    assert code == 0, err
    scored = load_jsonl(tmp_path / "out.jsonl", TrajectoryGroup)
    assert [t.reward for t in scored[0].trajectories] == [0.6, 0.8]
    assert [t.reward for t in scored[1].trajectories] == [1.0, 0.0], "one passes: no ranking needed"
    assert len(llm.requests) == 1


def test_verify_mode_needs_no_judge_model(monkeypatch, capsys, tmp_path, groups_file):
    code, out, err = run_cli(
        monkeypatch, capsys, "judge", str(groups_file), "--mode", "verify", "-o", str(tmp_path / "o.jsonl")
    )
    assert code == 0, err
    assert "judged 3 groups: 3 scored" in out and "judge cost $0.0000" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--mode", "ruler"], "needs a judge model; pass --judge-model"),
        (["--mode", "best"], "--mode must be ruler, verify or gate"),
        (["--judge-model", "x", "--rubric", "/no/such/rubric.txt"], "--rubric /no/such/rubric.txt: no such file"),
        (["--judge-model", "x", "--on-failure", "ignore"], "--on-failure must be skip or raise"),
    ],
)
def test_bad_options_are_one_line_errors(monkeypatch, capsys, tmp_path, groups_file, args, message):
    code, _, err = run_cli(monkeypatch, capsys, "judge", str(groups_file), *args, "-o", str(tmp_path / "o.jsonl"))
    assert code == 2
    assert err.count("\n") == 1 and message in err


def test_a_malformed_line_is_named(monkeypatch, capsys, tmp_path, groups_file):
    groups_file.write_text(groups_file.read_text() + '{"trajectories": 5}\n')
    code, _, err = run_cli(
        monkeypatch, capsys, "judge", str(groups_file), "--mode", "verify", "-o", str(tmp_path / "o.jsonl")
    )
    assert code == 2 and err.count("\n") == 1
    assert f"{groups_file}:4: not a valid TrajectoryGroup" in err


def test_on_failure_raise_stops_and_writes_nothing(monkeypatch, capsys, tmp_path, groups_file):
    with FakeLLM(handler=by_quality) as llm:
        code, _, err = run_cli(
            monkeypatch,
            capsys,
            "judge",
            str(groups_file),
            "--judge-model",
            "openai/judge",
            "--api-base",
            llm.base_url,
            "--no-cache",
            "--on-failure",
            "raise",
            "--concurrency",
            "1",
            "-o",
            str(tmp_path / "o.jsonl"),
        )
    assert code == 2 and err.count("\n") == 1
    assert "ruler (scenario bad): invalid verdict" in err and "use --on-failure skip" in err
    assert not (tmp_path / "o.jsonl").exists()
