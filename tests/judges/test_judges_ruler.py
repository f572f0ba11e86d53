import json
import re
import time

import pytest

from mcprl.judges import DEFAULT_RUBRIC, JudgeError, RulerJudge, ruler_score_group
from mcprl.judges.ruler import InvalidVerdict, common_prefix_len, parse_verdict
from mcprl.types import Scenario, Trajectory, TrajectoryGroup
from tests.fake_llm import FakeLLM, Reply, message_text, ruler_handler, shown_trajectories

pytestmark = pytest.mark.unit

TOOLS = [
    {
        "type": "function",
        "function": {"name": "lookup", "description": "look up a fact", "parameters": {"type": "object"}},
    }
]


def make_group(*qualities: float) -> TrajectoryGroup:
    """Trajectories sharing a system prompt and task; each answers `quality=<q>`."""
    prefix = [{"role": "system", "content": "You help."}, {"role": "user", "content": "Task: find the fact."}]
    return TrajectoryGroup(
        scenario=Scenario(id="s1", task="find the fact"),
        trajectories=[
            Trajectory(messages=[*prefix, {"role": "assistant", "content": f"quality={q}"}], tools=TOOLS)
            for q in qualities
        ],
    )


def quality(body: str) -> float:
    return float(re.search(r"quality=([\d.]+)", body).group(1))


judge_by_content = ruler_handler(quality)


def judge(llm: FakeLLM, **kw) -> RulerJudge:
    return RulerJudge("openai/judge", api_base=llm.base_url, api_key="k", retry_backoff_s=0, **kw)


@pytest.mark.anyio
async def test_shuffled_order_maps_each_score_back_to_its_trajectory():
    group = make_group(0.1, 0.9, 0.5, 0.3)
    with FakeLLM(handler=judge_by_content) as llm:
        await judge(llm, seed=3).score_group(group)
    assert [t.reward for t in group.trajectories] == [0.1, 0.9, 0.5, 0.3]
    assert [t.metrics["ruler"] for t in group.trajectories] == [0.1, 0.9, 0.5, 0.3]
    assert group.trajectories[1].metadata["ruler_explanation"] == "scored 0.9"
    assert group.skipped is None

    request = llm.requests[0]
    blocks = shown_trajectories(request)
    assert [tid for tid, _ in blocks] == ["1", "2", "3", "4"]
    assert [quality(body) for _, body in blocks] != [0.1, 0.9, 0.5, 0.3], "seed 3 shuffles this group"
    user = message_text(request, "user")
    assert user.count("Task: find the fact.") == 1, "the common prefix is sent once"
    assert '"name": "lookup"' in user
    assert group.metrics["judge_prompt_tokens"] == 11 and group.metrics["judge_retries"] == 0


@pytest.mark.anyio
async def test_shuffle_is_seeded():
    orders = []
    for seed in (3, 3, 4):
        with FakeLLM(handler=judge_by_content) as llm:
            await judge(llm, seed=seed).score_group(make_group(0.1, 0.9, 0.5, 0.3, 0.7))
        orders.append([body for _, body in shown_trajectories(llm.requests[0])])
    assert orders[0] == orders[1]
    assert orders[0] != orders[2]


@pytest.mark.anyio
async def test_cached_verdict_makes_no_request(tmp_path):
    with FakeLLM(handler=judge_by_content) as llm:
        first = await judge(llm, cache_dir=tmp_path).score_group(make_group(0.2, 0.8))
        second = await judge(llm, cache_dir=tmp_path, seed=9).score_group(make_group(0.2, 0.8))
        assert len(llm.requests) == 1
        other_rubric = await judge(llm, cache_dir=tmp_path, rubric="be harsh").score_group(make_group(0.2, 0.8))
        assert len(llm.requests) == 2
    assert [t.reward for t in second.trajectories] == [t.reward for t in first.trajectories] == [0.2, 0.8]
    assert second.metrics["judge_cache_hit"] == 1.0 and first.metrics["judge_cache_hit"] == 0.0
    assert other_rubric.metrics["judge_cache_hit"] == 0.0


def ten_point(request: dict) -> str:
    """A judge grading 0-10 whatever it is told: 7.5 for the better attempt, 1 for the other."""
    shown = shown_trajectories(request)
    return json.dumps(
        {
            "scores": [
                {"trajectory_id": i, "explanation": "", "score": 7.5 if "quality=0.9" in body else 1}
                for i, body in shown
            ]
        }
    )


@pytest.mark.anyio
async def test_scores_outside_0_1_are_asked_again_not_rescaled():
    replies = iter([ten_point])
    group = make_group(0.9, 0.1)
    with FakeLLM(handler=lambda r: next(replies, judge_by_content)(r)) as llm:
        await judge(llm).score_group(group)
    correction = llm.requests[1]["messages"][-1]["content"]
    assert "scores must be between 0 and 1, got 7.5 for id" in correction
    assert [t.reward for t in group.trajectories] == [0.9, 0.1]  # the corrected reply's scores, not 0.75 / 0.1
    assert group.metrics["judge_retries"] == 1


@pytest.mark.anyio
async def test_a_judge_that_keeps_its_own_scale_fails_the_group_with_the_reason():
    group = make_group(0.9, 0.1)
    with FakeLLM(handler=ten_point) as llm:
        await judge(llm, max_retries=1).score_group(group)
    assert len(llm.requests) == 2
    assert group.skipped.startswith(
        "ruler (scenario s1): invalid verdict after 2 attempt(s): scores must be between 0 and 1"
    )
    assert [t.reward for t in group.trajectories] == [0.0, 0.0]


@pytest.mark.anyio
async def test_truncated_json_is_retried_with_the_problem_explained():
    replies = iter([Reply('{"scores": [{"trajectory_id": "1", "explanation": "go', finish_reason="length")])

    def handler(request: dict):
        return next(replies, None) or judge_by_content(request)

    group = make_group(0.4, 0.6)
    with FakeLLM(handler=handler) as llm:
        await judge(llm).score_group(group)
    assert [t.reward for t in group.trajectories] == [0.4, 0.6]
    assert group.metrics["judge_retries"] == 1
    assert group.metrics["judge_prompt_tokens"] == 22, "both calls are counted"
    correction = llm.requests[1]["messages"][-1]["content"]
    assert "cut at max_tokens" in correction and "1, 2" in correction


@pytest.mark.anyio
async def test_unknown_ids_are_retried():
    bad = json.dumps(
        {
            "scores": [
                {"trajectory_id": "a", "explanation": "", "score": 1},
                {"trajectory_id": "b", "explanation": "", "score": 0},
            ]
        }
    )
    replies = iter([bad])

    group = make_group(0.4, 0.6)
    with FakeLLM(handler=lambda r: next(replies, None) or judge_by_content(r)) as llm:
        await judge(llm).score_group(group)
    assert "unknown ids ['a', 'b']" in llm.requests[1]["messages"][-1]["content"]
    assert [t.reward for t in group.trajectories] == [0.4, 0.6]


@pytest.mark.anyio
async def test_too_few_scores_every_time_skips_the_group_with_the_reason():
    one_score = json.dumps({"scores": [{"trajectory_id": "1", "explanation": "", "score": 1}]})
    group = make_group(0.1, 0.2, 0.3)
    with FakeLLM([one_score] * 3) as llm:
        await judge(llm, max_retries=2).score_group(group)
    assert len(llm.requests) == 3
    assert group.skipped.startswith("ruler (scenario s1): invalid verdict after 3 attempt(s): expected 3 scores, got 1")
    assert "missing ids ['2', '3']" in group.skipped
    assert [t.reward for t in group.trajectories] == [0.0, 0.0, 0.0]
    assert group.metrics["judge_retries"] == 2


@pytest.mark.anyio
async def test_too_many_scores_raises_when_asked_to():
    three = json.dumps({"scores": [{"trajectory_id": str(i), "explanation": "", "score": 0.5} for i in (1, 2, 3)]})
    with FakeLLM([three, three]) as llm, pytest.raises(JudgeError, match="expected 2 scores, got 3; unknown ids"):
        await ruler_score_group(
            make_group(0.1, 0.2), "openai/judge", api_base=llm.base_url, api_key="k", on_failure="raise", max_retries=1
        )


@pytest.mark.anyio
async def test_http_500s_skip_the_group():
    group = make_group(0.1, 0.2)
    with FakeLLM([Reply(status=500)] * 2) as llm:
        await judge(llm, num_retries=1).score_group(group)
    assert len(llm.requests) == 2
    assert group.skipped.startswith("ruler (scenario s1): judge call failed") and "HTTP 500" in group.skipped
    assert group.metrics["judge_retries"] == 0


@pytest.mark.anyio
async def test_a_hanging_judge_times_out_and_skips_the_group():
    group = make_group(0.1, 0.2)
    start = time.monotonic()
    with FakeLLM([Reply(delay_s=30)]) as llm:
        await judge(llm, timeout=0.3, num_retries=0).score_group(group)
    assert "Timeout" in group.skipped
    assert time.monotonic() - start < 5


@pytest.mark.anyio
async def test_failed_trajectories_are_hidden_and_get_no_reward():
    group = make_group(0.3, 0.8, 0.6)
    group.trajectories[1].error = "server died"
    group.trajectories[1].reward = 0.9
    with FakeLLM(handler=judge_by_content) as llm:
        await judge(llm).score_group(group)
    assert len(shown_trajectories(llm.requests[0])) == 2
    assert "quality=0.8" not in message_text(llm.requests[0], "user")
    assert [t.reward for t in group.trajectories] == [0.3, 0.0, 0.6]
    assert "ruler" not in group.trajectories[1].metrics


@pytest.mark.anyio
async def test_identical_trajectories_are_shown_once_and_share_a_score():
    group = make_group(0.7, 0.2, 0.7)
    with FakeLLM(handler=judge_by_content) as llm:
        await judge(llm).score_group(group)
    assert len(shown_trajectories(llm.requests[0])) == 2
    assert [t.reward for t in group.trajectories] == [0.7, 0.2, 0.7]


@pytest.mark.anyio
async def test_all_identical_trajectories_are_shown_whole():
    group = make_group(0.5, 0.5)
    with FakeLLM(handler=judge_by_content) as llm:
        await judge(llm).score_group(group)
    [(_, body)] = shown_trajectories(llm.requests[0])
    assert "Task: find the fact." in body and "<context>" not in message_text(llm.requests[0], "user")
    assert [t.reward for t in group.trajectories] == [0.5, 0.5]


@pytest.mark.anyio
async def test_a_group_without_valid_trajectories_is_skipped_without_a_call():
    group = make_group(0.5)
    group.trajectories[0].error = "timeout"
    with FakeLLM() as llm:
        await judge(llm).score_group(group)
    assert llm.requests == [] and group.skipped == "ruler: no valid trajectories to judge"


def test_parse_verdict_keeps_scores_in_0_1_as_given():
    scores = parse_verdict(
        '[{"trajectory_id": 1, "score": 0}, {"trajectory_id": 2, "score": 1}, {"trajectory_id": 3, "score": 0.35}]',
        ["1", "2", "3"],
    )
    assert [scores[i].score for i in ("1", "2", "3")] == [0.0, 1.0, 0.35]


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"scores": [{"trajectory_id": "1", "score": 1}, {"trajectory_id": "1", "score": 0}]}', "duplicate ids ['1']"),
        ('{"scores": [{"trajectory_id": "1", "score": "high"}, {"trajectory_id": "2", "score": 0}]}', "scores.0.score"),
        ('{"scores": [{"trajectory_id": "1", "score": NaN}, {"trajectory_id": "2", "score": 0}]}', "finite"),
        (
            '[{"trajectory_id": 1, "score": -0.2}, {"trajectory_id": 2, "score": 0.9}]',
            "scores must be between 0 and 1, got -0.2 for id 1",
        ),
        ('[{"trajectory_id": 1, "score": 85}, {"trajectory_id": 2, "score": 40}]', "got 85 for id 1, 40 for id 2"),
        ('{"verdict": "all good"}', "scores: Field required"),
        ("I cannot judge these.", "no complete JSON"),
    ],
)
def test_parse_verdict_names_the_problem(text, problem):
    with pytest.raises(InvalidVerdict, match=re.escape(problem)):
        parse_verdict(text, ["1", "2"])


def test_common_prefix_len():
    a, b, c = (
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "x"},
    )
    assert common_prefix_len([[a, b, c], [a, b], [a, b, {"role": "assistant", "content": "y"}]]) == 2
    assert common_prefix_len([[a, b, c]]) == 0
    assert common_prefix_len([[a], [b]]) == 0


@pytest.mark.anyio
@pytest.mark.parametrize("rubric, expected", [(None, DEFAULT_RUBRIC), ("Shorter answers win.", "Shorter answers win.")])
async def test_the_rubric_reaches_the_judge(rubric, expected):
    with FakeLLM(handler=judge_by_content) as llm:
        await judge(llm, rubric=rubric).score_group(make_group(0.1, 0.2))
    assert expected in message_text(llm.requests[0], "system")


@pytest.mark.anyio
async def test_rescoring_reports_only_its_own_costs(tmp_path):
    group = make_group(0.3, 0.6)
    with FakeLLM(handler=judge_by_content) as llm:
        await judge(llm, cache_dir=tmp_path).score_group(group)
        assert group.metrics["judge_prompt_tokens"] == 11
        await judge(llm, cache_dir=tmp_path).score_group(group)
    assert group.metrics["judge_prompt_tokens"] == 0 and group.metrics["judge_cache_hit"] == 1.0
