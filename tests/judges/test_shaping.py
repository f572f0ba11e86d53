"""Tool-use shaping (mcprl.judges.shaping) and its cap (mcprl.judges.combine.ShapedJudge): a failed task never
earns a solved task's reward, whatever the trajectory."""

import itertools
import json
import random

import pytest

from mcprl.errors import UserError
from mcprl.judges import ShapedJudge, ToolUseShaping, VerifyJudge
from mcprl.judges.shaping import tool_use_score
from mcprl.types import Scenario, Trajectory, TrajectoryGroup

pytestmark = pytest.mark.unit

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}
DEMO = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "What is 3 + 4?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_example", "type": "function", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_example", "content": "7"},
]


def traj(*agent, answer: str | None = None) -> Trajectory:
    msgs = [*DEMO, {"role": "user", "content": "What is 5 + 6?"}, *agent]
    if answer is not None:
        msgs.append({"role": "assistant", "content": answer})
    return Trajectory(messages=msgs, tools=[ADD])


def call(name: str, arguments: str, result: str | None, cid: str = "c1") -> list[dict]:
    out = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}],
        }
    ]
    return out + ([{"role": "tool", "tool_call_id": cid, "content": result}] if result is not None else [])


@pytest.mark.parametrize(
    "agent,expected",
    [
        ([], 0.0),  # prose only; the demonstration's successful call does not count
        (call("add", "{not json", "Error: bad"), 0.0),
        (call("mul", '{"a": 5, "b": 6}', "Error: there is no tool named 'mul'"), 0.25),
        (call("add", '{"a": "five", "b": 6}', "Error: bad arguments"), 0.5),
        (call("add", '{"a": 5, "b": 6, "c": 1}', "11"), 0.5),  # an argument add does not declare: it ran regardless
        (call("add", '{"a": 5, "b": 6}', "Error: the server crashed"), 0.75),
        (call("add", '{"a": 5, "b": 6}', "11"), 1.0),
        (call("mul", "{}", "Error", "c1") + call("add", '{"a": 5, "b": 6}', "11", "c2"), 1.0),  # the best call counts
    ],
)
def test_stages_of_the_best_call(agent, expected):
    assert tool_use_score(traj(*agent, answer="11")) == expected


def test_undeclared_arguments_count_only_where_the_schema_allows_more():
    from mcprl.judges.shaping import call_stages

    c = {"id": "c1", "function": {"name": "search", "arguments": '{"query": "x", "limit": 3}'}}
    declared = {"type": "object", "properties": {"query": {"type": "string"}}}
    assert call_stages(c, {"search": declared}, {"c1": "found"}) == 2
    assert call_stages(c, {"search": {**declared, "additionalProperties": True}}, {"c1": "found"}) == 4
    assert (
        call_stages(c, {"search": {"type": "object"}}, {"c1": "found"}) == 4
    )  # no properties listed: nothing to hold to


@pytest.mark.anyio
async def test_shaping_separates_a_group_that_the_task_scores_all_zero():
    scenario = Scenario(id="s", task="What is 5 + 6?", check={"kind": "normalized", "value": "11"})
    group = TrajectoryGroup(
        scenario=scenario,
        trajectories=[
            traj(answer="12"),
            traj(*call("add", '{"a": 5, "b": 6}', "11"), answer="twelve"),
            traj(*call("add", '{"a": 5, "b": 6}', "11"), answer="11"),
        ],
    )
    await ShapedJudge(VerifyJudge(), ToolUseShaping(), 0.1).score_group(group)
    assert [t.reward for t in group.trajectories] == [0.0, pytest.approx(0.1), 1.0]
    assert [t.metrics["verify"] for t in group.trajectories] == [
        0.0,
        0.0,
        1.0,
    ]  # success rates read the task's own score


def test_the_cap_holds_for_any_task_score_shaping_and_weight():
    """reward(failed) < reward(solved) = 1, and the bonus is at most the weight, on a dense grid and
    random draws (including task scores just under solved)."""
    rng = random.Random(0)
    tasks = [0.0, 0.1, 0.5, 0.9, 0.999, 1 - 1e-12] + [rng.random() for _ in range(300)]
    shapings = [0.0, 0.25, 0.5, 0.75, 1.0] + [rng.random() for _ in range(30)]
    weights = [0.0, 0.05, 0.1, 0.2, 0.5, 0.99, 1 - 1e-9]
    for task, shaping, w in itertools.product(tasks, shapings, weights):
        reward = ShapedJudge.combine(task, shaping, w)
        assert task <= reward < 1.0 and reward - task <= w + 1e-15
    assert all(ShapedJudge.combine(1.0, s, w) == 1.0 for s in shapings for w in weights)


@pytest.mark.anyio
async def test_the_cap_holds_through_the_judges_with_partial_credit():
    """Whatever the trajectories, every failed one ends below every solved one."""
    scenario = Scenario(id="s", task="x", check={"kind": "contains", "value": ["a", "b", "c", "d"]})
    answers = ["a b c", "a", "", "a b c d", "d c b a"]
    group = TrajectoryGroup(
        scenario=scenario, trajectories=[traj(*call("add", '{"a": 1, "b": 2}', "3"), answer=x) for x in answers]
    )
    await ShapedJudge(VerifyJudge(), ToolUseShaping(), 0.99).score_group(group)
    failed = [t.reward for t in group.trajectories if t.metrics["verify"] < 1]
    solved = [t.reward for t in group.trajectories if t.metrics["verify"] == 1]
    assert failed and solved and max(failed) < min(solved)


def test_a_weight_that_could_outweigh_success_is_refused():
    with pytest.raises(UserError, match="must be in"):
        ShapedJudge(VerifyJudge(), ToolUseShaping(), 1.0)


@pytest.mark.anyio
async def test_all_or_nothing_drops_partial_credit():
    scenario = Scenario(id="s", task="x", check={"kind": "contains", "value": ["a", "b"]})
    group = TrajectoryGroup(scenario=scenario, trajectories=[traj(answer="a"), traj(answer="a b")])
    await VerifyJudge(all_or_nothing=True).score_group(group)
    assert group.rewards() == [0.0, 1.0]
    assert json.dumps(group.rewards())  # plain floats


SEARCH = {
    "type": "function",
    "function": {
        "name": "search_items",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
HAMMER = "SKU-1234 | steel hammer | tools | stock: 4 | price: $12.99"
LISTING = (
    "\n".join(f"SKU-{1000 + i} | item {i} | aisle {i % 7} | stock: {i} | price: ${i}.50" for i in range(60))
    + "\n"
    + HAMMER
)


def lookup(query: str, result: str) -> Trajectory:
    msgs = [
        {"role": "user", "content": "What does the steel hammer cost?"},
        *call("search_items", json.dumps({"query": query}), result),
    ]
    return Trajectory(messages=msgs, tools=[SEARCH])


@pytest.mark.parametrize(
    "query,result,expected",
    [
        ("steel hammer", HAMMER, 1.0),  # the answer, found outright
        (
            "basic faucet",
            "SKU-9684 | basic faucet | plumbing | stock: 82 | price: $131.01",
            0.8,
        ),  # ran well, found the wrong item
        ("12.99", "no items match '12.99'", 0.8),  # a guess echoed back finds nothing
        ("", LISTING, None),  # the whole listing: some credit, far less than the item itself
    ],
)
def test_with_a_known_answer_the_call_that_found_it_ranks_first(query, result, expected):
    score = tool_use_score(lookup(query, result), answer="12.99", task="What does the steel hammer cost?")
    if expected is None:
        assert 0.8 < score <= 0.85
    else:
        assert score == pytest.approx(expected)
    # with no answer known every one of these calls is simply well made
    assert tool_use_score(lookup(query, result)) == 1.0


def test_holds_answer_reads_numbers_by_value_and_text_as_whole_words():
    from mcprl.checks import holds_answer

    assert holds_answer("price: $22.60", 22.6) and holds_answer("stock: 1,204 units", "1204")
    assert not holds_answer("SKU-1234 | hammer", 1234) and not holds_answer("stock: 12", "1")
    assert holds_answer("SKU-5 | Steel  Hammer | tools", "steel hammer") and not holds_answer(
        "steel hammers", "steel hammer"
    )


def test_a_day_is_held_however_it_is_written():
    """A date column's value as @modelcontextprotocol/server-postgres's driver gives it, "2024-03-20T00:00:00.000Z":
    a reply saying "2024-03-20" or "March 20, 2024" was scored wrong, and a replay of the result did not hold the
    day. A day is held by the same day in ISO, as a timestamp, or with its month named; not by another."""
    from mcprl.checks import holds_answer

    for answer in ("2024-03-20T00:00:00.000Z", "2024-03-20", "2024-03-20 00:00:00"):
        for reply in ("It was ordered on 2024-03-20.", "March 20, 2024", "on the 20th of March 2024", "20 Mar. 2024"):
            assert holds_answer(reply, answer), (reply, answer)
        assert holds_answer('{"ordered": "2024-03-20T00:00:00.000Z"}', answer)
        for reply in ("2024-03-21", "March 21, 2024", "2023-03-20", "2024-03-2", "12024-03-20"):
            assert not holds_answer(reply, answer), (reply, answer)
    # a time of day is no day: it is held as written
    assert not holds_answer("2024-03-20", "2024-03-20T14:05:00Z")


@pytest.mark.anyio
async def test_evidence_gives_a_group_that_finds_nothing_but_the_right_item_its_ranking():
    scenario = Scenario(task="What does the steel hammer cost?", answer="12.99", check={"kind": "normalized"})
    group = TrajectoryGroup(
        scenario=scenario,
        trajectories=[
            lookup("steel hammer", HAMMER),
            lookup("basic faucet", "SKU-9684 | basic faucet | stock: 82 | price: $131.01"),
        ],
    )
    for t in group.trajectories:
        t.messages.append({"role": "assistant", "content": "I could not tell."})
    await ShapedJudge(VerifyJudge(), ToolUseShaping(), 0.1).score_group(group)
    found, wrong = group.rewards()
    assert 0 < wrong < found <= 0.1


@pytest.mark.anyio
async def test_a_live_answer_is_evidence_where_the_episodes_own_call_gave_it():
    """Where the server answers anew each time, a call's evidence is the value the episode's own call gave, not the
    value the task was written with: the call that gave it ranks above a call of the same tool with other
    arguments, whose result holds the written value by chance."""
    live = {"tool": "add", "arguments": {"a": 5, "b": 6}, "field": "sum"}
    scenario = Scenario(task="What is 5 + 6?", answer=11, check={"kind": "holds", "live": live})
    group = TrajectoryGroup(
        scenario=scenario,
        trajectories=[
            traj(*call("add", '{"a": 5, "b": 6}', '{"sum": 12}'), answer="I could not tell."),
            traj(*call("add", '{"a": 5, "b": 7}', '{"sum": 11}'), answer="I could not tell."),
        ],
    )
    await ToolUseShaping().score_group(group)
    own, other = group.rewards()
    assert own == 1.0 and other == pytest.approx(0.8)
