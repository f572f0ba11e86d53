"""What RULER sends: its verdict schema as `response_format`, made for the group at hand (the
scoring itself is tested in test_judges_ruler.py)."""

import sys
import types

import jsonschema
import pytest

from mcprl.judges import RulerJudge
from mcprl.judges.ruler import verdict_schema
from mcprl.types import Trajectory, TrajectoryGroup
from tests.fake_llm import FakeLLM, ruler_handler

pytestmark = pytest.mark.unit


def group_of(*answers: str) -> TrajectoryGroup:
    prefix = [{"role": "user", "content": "Task: say hi."}]
    return TrajectoryGroup(
        trajectories=[Trajectory(messages=[*prefix, {"role": "assistant", "content": a}]) for a in answers]
    )


def verdict(*entries: tuple[str, float]) -> dict:
    return {"scores": [{"trajectory_id": i, "explanation": "ok", "score": s} for i, s in entries]}


@pytest.mark.parametrize("in_order", [True, False])
def test_the_schema_admits_exactly_one_score_in_0_1_per_shown_id(in_order):
    schema = verdict_schema(["1", "2", "3"], in_order=in_order)
    jsonschema.validate(verdict(("1", 0.2), ("2", 1), ("3", 0)), schema)
    for bad in (
        verdict(("1", 0.2), ("2", 1)),  # one missing
        verdict(("1", 0.2), ("2", 1), ("3", 0), ("1", 0.5)),  # one too many
        verdict(("1", 0.2), ("2", 7), ("3", 0)),  # a 0-10 score (issue 15: never rescaled)
        verdict(("1", 0.2), ("2", 1), ("4", 0)),  # an id not shown
        {
            "scores": [
                {"trajectory_id": "1", "explanation": "x" * 201, "score": 0},
                *verdict(("2", 1), ("3", 0))["scores"],
            ]
        },
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    if in_order:  # the grammar-constrained judge cannot repeat an id either
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(verdict(("1", 0.2), ("1", 1), ("3", 0)), schema)


@pytest.mark.anyio
async def test_a_provider_judge_gets_the_ids_as_an_enum_and_a_bounded_reply():
    with FakeLLM(handler=ruler_handler(lambda body: 0.5)) as llm:
        group = await RulerJudge("openai/judge", api_base=llm.base_url, api_key="k").score_group(
            group_of("hi", "hello")
        )
    assert group.skipped is None and [t.reward for t in group.trajectories] == [0.5, 0.5]
    (request,) = llm.requests
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["scores"]["items"]["properties"]["trajectory_id"] == {"enum": ["1", "2"]}
    assert "strict" not in request["response_format"]["json_schema"]
    assert request["max_tokens"] < 4096


@pytest.mark.anyio
async def test_the_local_judge_gets_the_ids_in_order_strictly(monkeypatch):
    with FakeLLM(handler=ruler_handler(lambda body: 0.25 if '"hi"' in body else 1.0)) as llm:
        module = types.ModuleType("mcprl.serving.local")
        module.local_endpoint = lambda spec="smollm2-135m": (llm.base_url, "key")
        monkeypatch.setitem(sys.modules, "mcprl.serving.local", module)
        group = await RulerJudge("local").score_group(group_of("hi", "hello there", "howdy"))
    assert [t.reward for t in group.trajectories] == [0.25, 1.0, 1.0]
    spec = llm.requests[0]["response_format"]["json_schema"]
    assert spec["strict"] is True
    assert [e["properties"]["trajectory_id"] for e in spec["schema"]["properties"]["scores"]["prefixItems"]] == [
        {"const": "1"},
        {"const": "2"},
        {"const": "3"},
    ]
