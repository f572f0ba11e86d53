import json

import pytest

from mcprl import tasks
from mcprl.errors import UserError
from mcprl.judges import VerifyJudge, checker_for
from mcprl.types import Scenario, Trajectory, TrajectoryGroup

pytestmark = pytest.mark.unit


def answering(*finals: str) -> list[Trajectory]:
    return [
        Trajectory(messages=[{"role": "user", "content": "q"}, {"role": "assistant", "content": f}]) for f in finals
    ]


def score(check: dict, final: str, answer=None) -> float:
    scenario = Scenario(id="s", task="t", check=check, answer=answer)
    return checker_for(scenario)(scenario, answering(final)[0])


@pytest.mark.parametrize(
    "check, answer, final, expected",
    [
        ({"kind": "exact", "value": "42"}, None, " 42\n", 1.0),
        ({"kind": "exact", "value": "42"}, None, "The answer is 42", 0.0),
        ({"kind": "exact"}, "Paris", "Paris", 1.0),
        ({"kind": "normalized", "value": "New York"}, None, "new   york!", 1.0),
        ({"kind": "normalized"}, 42, "42.0", 1.0),
        ({"kind": "normalized"}, "1,200", "1200", 1.0),
        ({"kind": "normalized", "value": "New York"}, None, "York", 0.0),
        ({"kind": "contains", "value": "Paris"}, None, "It is PARIS, France.", 1.0),
        ({"kind": "contains", "value": ["Paris", "Rome", "Oslo", "Bern"]}, None, "paris and rome", 0.5),
        ({"kind": "regex", "pattern": r"\b4[0-9]\b"}, None, "about 45 units", 1.0),
        ({"kind": "regex", "pattern": "total", "ignore_case": True}, None, "TOTAL: 3", 1.0),
        ({"kind": "regex", "pattern": "total"}, None, "TOTAL: 3", 0.0),
        (
            {"kind": "json_field", "field": "order.items.1.sku", "value": "B-2"},
            None,
            'Done: {"order": {"items": [{"sku": "A-1"}, {"sku": "B-2"}]}}',
            1.0,
        ),
        ({"kind": "json_field", "field": "total"}, 12.5, '```json\n{"total": "12.50"}\n```', 1.0),
        ({"kind": "json_field", "field": "total", "value": 3}, None, "no json here", 0.0),
        ({"kind": "json_field", "field": "missing", "value": 3}, None, '{"total": 3}', 0.0),
    ],
)
def test_verifiers(check, answer, final, expected):
    assert score(check, final, answer) == expected


def length_of_answer(scenario: Scenario, trajectory: Trajectory) -> float:
    return len(trajectory.final_answer()) / 10


def test_python_check_loads_a_function_by_path():
    assert score({"kind": "python", "function": f"{__name__}:length_of_answer"}, "abcd") == 0.4


@pytest.mark.parametrize(
    "check, answer, message",
    [
        ({"kind": "fuzzy", "value": "x"}, None, "invalid check"),
        ({"kind": "exact", "valeu": "x"}, None, "Extra inputs are not permitted"),
        ({"kind": "exact"}, None, "no answer"),
        ({"kind": "regex", "pattern": "("}, None, "bad regex"),
        ({"kind": "python", "function": "no_such_module_xyz:f"}, None, "cannot load check function"),
        (
            {"kind": "server", "server": "nope"},
            None,
            "no task set named 'nope'; registered: .*calculator.*'mcprl.tasks'",
        ),
    ],
)
def test_bad_checks_are_user_errors_naming_the_scenario(check, answer, message):
    with pytest.raises(UserError, match=message):
        score(check, "x", answer)


@pytest.mark.anyio
async def test_server_checks_dispatch_to_the_task_sets_checker():
    scenario = tasks.get("calculator").generate(1, seed=7)[0]
    group = TrajectoryGroup(
        scenario=scenario, trajectories=answering(f"The result is {scenario.answer}.", "I don't know.")
    )
    await VerifyJudge().score_group(group)
    assert [t.reward for t in group.trajectories] == [1.0, 0.0]
    assert [t.metrics["verify"] for t in group.trajectories] == [1.0, 0.0]


@pytest.mark.anyio
async def test_verify_judge_scores_valid_trajectories_and_zeroes_failed_ones():
    group = TrajectoryGroup(
        scenario=Scenario(id="s", task="t", answer="7", check={"kind": "normalized"}),
        trajectories=answering("7", "8", "7"),
    )
    group.trajectories[2].error = "tool server crashed"
    group.trajectories[2].reward = 0.5
    await VerifyJudge().score_group(group)
    assert [t.reward for t in group.trajectories] == [1.0, 0.0, 0.0]
    assert "verify" not in group.trajectories[2].metrics
    assert group.skipped is None


@pytest.mark.anyio
async def test_a_callable_checker_overrides_the_scenario_check_and_is_clamped():
    group = TrajectoryGroup(scenario=Scenario(task="t"), trajectories=answering("a" * 30, "ab"))
    await VerifyJudge(checker=length_of_answer).score_group(group)
    assert [t.reward for t in group.trajectories] == [1.0, 0.2]


@pytest.mark.anyio
async def test_async_checkers_are_awaited():
    async def half(scenario, trajectory):
        return 0.5

    group = TrajectoryGroup(scenario=Scenario(task="t"), trajectories=answering("x"))
    await VerifyJudge(checker=half).score_group(group)
    assert group.trajectories[0].reward == 0.5


@pytest.mark.anyio
@pytest.mark.parametrize(
    "group, reason",
    [
        (TrajectoryGroup(trajectories=answering("x")), "verify: the group has no scenario to verify against"),
        (
            TrajectoryGroup(scenario=Scenario(id="s9", task="t"), trajectories=answering("x")),
            "verify: scenario s9 has no check",
        ),
    ],
)
async def test_groups_that_cannot_be_verified_are_skipped(group, reason):
    await VerifyJudge().score_group(group)
    assert group.skipped.startswith(reason)


@pytest.mark.anyio
async def test_a_crashing_checker_skips_the_group_with_its_error():
    def broken(scenario, trajectory):
        raise KeyError("expected_total")

    group = TrajectoryGroup(scenario=Scenario(id="s2", task="t"), trajectories=answering("x", "y"))
    await VerifyJudge(checker=broken).score_group(group)
    assert group.skipped == "verify: checker raised KeyError: 'expected_total' (scenario s2)"
    assert [t.reward for t in group.trajectories] == [0.0, 0.0]


@pytest.mark.anyio
async def test_a_nan_score_is_a_checker_failure():
    group = TrajectoryGroup(scenario=Scenario(id="s3", task="t"), trajectories=answering("x"))
    await VerifyJudge(checker=lambda s, t: float("nan")).score_group(group)
    assert "not a finite number" in group.skipped


def episode(calls: list[tuple[str, dict | str, str]], final: str) -> Trajectory:
    """A conversation making `calls` (tool, arguments as the model wrote them, result), then answering `final`."""
    messages = [{"role": "user", "content": "q"}]
    for k, (tool, arguments, result) in enumerate(calls):
        written = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call = {"id": f"c{k}", "type": "function", "function": {"name": tool, "arguments": written}}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": result},
        ]
    return Trajectory(messages=[*messages, {"role": "assistant", "content": final}])


def test_a_live_answer_is_the_value_the_episodes_own_call_gave():
    """A server that answers anew each time (dice): the answer is read from the result of the episode's own call
    with the task's arguments, at the task's field, not the value the task was written with."""
    check = {"kind": "holds", "live": {"tool": "roll", "arguments": {"notation": "2d6", "n": 2}, "field": "roll.total"}}
    s = Scenario(id="s", task="Roll 2d6 twice; what is the total?", answer=7, check=check)
    judge = checker_for(s)
    rolled = json.dumps({"roll": {"total": 9, "rolls": [4, 5]}})
    same = {"n": "2", "notation": "2d6"}  # the same arguments, another order, a number as text
    assert judge(s, episode([("roll", same, rolled)], "The total is 9.")) == 1.0
    assert judge(s, episode([("roll", same, rolled)], "The total is 7.")) == 0.0  # the value written once
    # the last matching call counts; a call with other arguments, another tool, or no call gives no value
    again = json.dumps({"roll": {"total": 3}})
    assert judge(s, episode([("roll", same, rolled), ("roll", same, again)], "3")) == 1.0
    assert judge(s, episode([("roll", {"notation": "1d20", "n": 2}, rolled)], "9")) == 0.0
    assert judge(s, episode([("dice", same, rolled)], "9")) == 0.0
    assert judge(s, episode([], "9")) == 0.0
    # a result that is no JSON, or has nothing there, gives none either; content parts are read as their text
    assert judge(s, episode([("roll", same, "total: 9")], "9")) == 0.0
    assert judge(s, episode([("roll", same, json.dumps({"roll": {}}))], "9")) == 0.0
    parts = episode([("roll", same, "")], "9")
    parts.messages[2]["content"] = [{"type": "text", "text": rolled}]
    assert judge(s, parts) == 1.0
    # the written form is kept: dumped and read again, the check is the same
    assert Scenario.model_validate_json(s.model_dump_json()).check == s.check
    assert s.model_dump()["check"] == check


def test_a_live_answer_of_a_text_is_the_value_on_the_line_its_label_names():
    """A clock that answers in lines of text (mcp-simple-timeserver's "Day: Wednesday"): the value is read from the
    episode's own result on the one line labelled as the task's field; none where no line, or two, are so labelled."""
    check = {"kind": "holds", "live": {"tool": "get_local_time", "field": "Day"}}
    s = Scenario(id="s", task="What day of the week is it here?", answer="Wednesday", check=check)
    judge = checker_for(s)
    now = "Current Time: 2027-06-04 12:00:01\nDay: Friday\nTimezone: UTC"
    assert judge(s, episode([("get_local_time", {}, now)], "It is Friday.")) == 1.0
    assert judge(s, episode([("get_local_time", {}, now)], "Wednesday")) == 0.0
    assert judge(s, episode([("get_local_time", {}, now.replace("Day:", "Weekday:"))], "Friday")) == 0.0
    assert judge(s, episode([("get_local_time", {}, f"{now}\nDay: Saturday")], "Friday")) == 0.0


def test_a_demonstrations_call_result_and_answer_are_never_the_agents():
    """A demonstration that shows a whole episode before the task (a call, its result, the answer: a user's
    `--demonstration-file` may): every check reads only what the agent did after the task, so an agent that says
    nothing, or only fails, gets nothing for the demonstration's call, result or answer, although they are those
    of the task itself."""
    from mcprl.judges.shaping import tool_use_score
    from mcprl.servers.calculator.tasks import check as calculator_check

    scenario = tasks.get("calculator").generate(1, seed=7)[0]
    tool, value = scenario.tools[0], scenario.answer
    shown = episode([(tool, {"a": 1, "b": 2}, str(value))], f"The answer is {value}.").messages
    demonstration = [{"role": "system", "content": "Use the tools."}, *shown]
    live = {"kind": "holds", "live": {"tool": tool, "arguments": {"a": 1, "b": 2}, "field": ""}}
    lives = Scenario(id="l", task=scenario.task, answer=value, check=live)
    holds = Scenario(id="h", task=scenario.task, answer=value, check={"kind": "holds"})
    task = {"role": "user", "content": scenario.task}
    failed = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": tool, "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "x", "content": "Error: missing arguments"},
    ]
    for after in ([], failed):
        t = Trajectory(messages=[*demonstration, task, *after])
        assert calculator_check(scenario, t) == 0.0  # was 0.5: the demonstration's result counted as the agent's
        assert checker_for(lives)(lives, t) == 0.0  # was 1.0: the value its call gave, the answer it wrote
        assert checker_for(holds)(holds, t) == 0.0  # was 1.0: its answer taken for the agent's
        assert t.agent_messages() == after and t.final_answer() == ""
        bare = Trajectory(messages=[task, *after])  # the shaping credit is that of the agent's turns alone
        assert tool_use_score(t, value, scenario.task) == tool_use_score(bare, value, scenario.task)
    # a live answer is read from the agent's own call: the demonstration's call, with the task's arguments, gives none
    guessed = Trajectory(messages=[*demonstration, task, {"role": "assistant", "content": f"It is {value}."}])
    assert checker_for(lives)(lives, guessed) == 0.0 and checker_for(holds)(holds, guessed) == 1.0
    # the same episode made by the agent itself counts
    agent = Trajectory(messages=[*demonstration, task, *shown[1:]])
    assert calculator_check(scenario, agent) == 1.0 and checker_for(lives)(lives, agent) == 1.0
