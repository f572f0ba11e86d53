import pytest

from mcprl.judges import VerifyJudge
from mcprl.types import Scenario, Trajectory
from mcprl.scenarios import filter_solvable


def scenario(sid: str, answer: str) -> Scenario:
    return Scenario(id=sid, task=f"say {answer}", answer=answer, check={"kind": "exact"})


def reply(text: str) -> Trajectory:
    return Trajectory(messages=[{"role": "assistant", "content": text}])


@pytest.mark.anyio
async def test_keeps_scenarios_solved_at_least_once_with_their_solve_rate():
    calls: dict[str, int] = {}

    async def attempt(s: Scenario) -> Trajectory:
        calls[s.id] = calls.get(s.id, 0) + 1
        if s.id == "half":
            return reply(s.answer if calls[s.id] % 2 else "no")
        return reply(s.answer if s.id == "easy" else "wrong")

    kept, report = await filter_solvable(
        [scenario("easy", "a"), scenario("never", "b"), scenario("half", "c")], attempt, VerifyJudge(), attempts=4
    )
    assert [(s.id, s.metadata["solve_rate"]) for s in kept] == [("easy", 1.0), ("half", 0.5)]
    assert calls == {"easy": 4, "never": 4, "half": 4}
    assert (report.checked, report.kept, report.unsolved, report.unjudged) == (3, 2, 1, 0)


@pytest.mark.anyio
async def test_crashing_attempts_and_unjudgeable_groups_are_dropped_with_reasons():
    def attempt(s: Scenario) -> Trajectory:
        if s.id == "crash":
            raise RuntimeError("server died")
        if s.id == "broken":
            return Trajectory(error="tool call timed out")
        return reply("x")

    no_check = Scenario(id="nocheck", task="t")
    kept, report = await filter_solvable(
        [scenario("crash", "a"), scenario("broken", "b"), no_check], attempt, VerifyJudge(), attempts=2
    )
    assert kept == []
    assert report.unjudged == 3
    assert sorted(report.reasons) == [
        "broken: every attempt failed, last: tool call timed out",
        "crash: every attempt failed, last: RuntimeError: server died",
        "nocheck: verify: scenario nocheck has no check; add one or judge with RULER",
    ]
