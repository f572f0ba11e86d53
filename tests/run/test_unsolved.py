"""A group in which no rollout solved its grounded task (`RunConfig.unsolved`, mcprl.run.unsolved): a
registered strategy by name, or a user's; a guided retry, or the task's reference chain written into the
group as its one success and trained on."""

from __future__ import annotations

import pytest

from mcprl.errors import UserError
from mcprl.run.config import RunConfig
from mcprl.run.runner import TrainingRun
from mcprl.run.unsolved import UNSOLVED, leave, strategy
from mcprl.tools import ServerSpec, ToolPool
from mcprl.types import Scenario, Trajectory, TrajectoryGroup
from tests import user_strategies
from tests.server_fork import shipped  # `python -m mcprl.servers.NAME`, forked under pytest

pytestmark = pytest.mark.anyio


def serve(run, policy, pool) -> None:
    """Give a training run the scripted `policy` as `_rollouts` asks for it (its served step, pinned)
    and the plain agent against `pool`, in this process."""
    from mcprl.rollout import agents
    from mcprl.rollout.gather import LocalRollouts

    class Served(type(policy)):
        def pinned(self):
            return self

        def get_step(self):
            return 0

    run.model, run.agent = Served(**policy.model_dump()), agents.load("plain")
    run.rollouts = LocalRollouts(run.agent, pool)


async def test_a_grounded_group_no_rollout_solved_is_retried_with_its_reference_call(tiny_model_dir, home):
    from itertools import count

    from mcprl.judges import VerifyJudge, score_groups
    from tests.scripted_policy import call, scripted_endpoint

    task = "Add two numbers and return a + b (a 2, b 3). What is the result?"
    scenario = Scenario(
        task=task,
        answer=5,
        check={"kind": "holds"},
        reference=[{"tool": "add", "arguments": {"a": 2, "b": 3}}],
    )
    turns = count()

    def reply(request: dict) -> str:
        """Guided (the task's own call shown before it): every other rollout solves it; else never."""
        users = [m["content"] for m in request["messages"] if m["role"] == "user"]
        if request["messages"][-1]["role"] == "tool":
            return "5"
        return call("add", a=2, b=3) if users.count(task) == 2 and next(turns) % 2 else "I do not know."

    run = TrainingRun(RunConfig(group_size=2, rollout={"max_turns": 2}), say=lambda _: None)
    async with ToolPool(ServerSpec.parse(shipped("calculator"))) as pool:
        with scripted_endpoint(tiny_model_dir, handler=reply) as (policy, _):
            serve(run, policy, pool)
            groups = await score_groups(VerifyJudge(), await run._rollouts([scenario], 2, "step"))
            assert [t.reward for t in groups[0].trajectories] == [0.0, 0.0]
            await UNSOLVED["guided-retry"].collected(run._step(VerifyJudge(), "step"), groups)
    assert groups[0].metadata["helped"] == "guided-retry" and sorted(t.reward for t in groups[0].trajectories) == [
        0.0,
        1.0,
    ]


async def test_a_grounded_group_no_rollout_solved_gets_its_reference_chain_and_trains_on_it(tiny_model_dir, home):
    """`unsolved = "reference"`: the task's reference chain, written after the group's own prompt, joins
    the group as its one success; the trainer tokenizes it as the endpoint renders prompts and scores
    its tokens itself (no sampler logprobs); the policy's figures do not count it."""
    from mcprl.judges import VerifyJudge, score_groups
    from mcprl.model import weights
    from mcprl.run.metrics import rollout_metrics
    from mcprl.train.config import LoraSettings, TrainConfig
    from mcprl.train.grpo import GRPOTrainer
    from mcprl.train.sequences import written_generations
    from tests.scripted_policy import call, scripted_endpoint

    task = "What is (2 + 3) * 4?"
    chain = [
        {"tool": "add", "arguments": {"a": 2, "b": 3}, "result": "5"},
        {"tool": "multiply", "arguments": {"a": 5, "b": 4}, "result": "20"},
    ]
    scenario = Scenario(task=task, answer=20, check={"kind": "holds"}, reference=chain)
    first = call("add", a=2, b=3)

    def reply(request: dict) -> str:
        """Calls add(2, 3) as the reference does, then gives up: no rollout solves the task."""
        return "I do not know." if request["messages"][-1]["role"] == "tool" else first

    run = TrainingRun(RunConfig(group_size=2, rollout={"max_turns": 3}, unsolved="reference"), say=lambda _: None)
    async with ToolPool(ServerSpec.parse(shipped("calculator"))) as pool:
        with scripted_endpoint(tiny_model_dir, handler=reply) as (policy, _):
            serve(run, policy, pool)
            groups = await score_groups(VerifyJudge(), await run._rollouts([scenario], 2, "step"))
            await UNSOLVED["reference"].scored(run._step(VerifyJudge(), "step"), groups)
    group = groups[0]
    sampled, ref = group.trajectories[0], group.trajectories[-1]
    assert [t.reward for t in group.trajectories] == [0.0, 0.0, 1.0] and group.metadata["helped"] == "reference"
    assert ref.written_from == sampled.generations[0].message_index and not ref.generations
    assert ref.messages[-1]["content"] == "The answer is 20." and ref.metrics["tool_calls"] == 2
    assert rollout_metrics(groups)["success_rate"] == 0.0 and rollout_metrics(groups)["trajectories"] == 2

    tokenizer = weights.load_tokenizer(str(tiny_model_dir))
    written = written_generations(ref, tokenizer)
    assert [g.message_index for g in written] == [i for i, m in enumerate(ref.messages) if m["role"] == "assistant"][
        -3:
    ]
    # The trainer renders the prompt as the endpoint did, and a call as the policy writes one.
    assert written[0].prompt_token_ids == sampled.generations[0].prompt_token_ids
    assert written[0].completion_token_ids == sampled.generations[0].completion_token_ids
    assert tokenizer.decode(written[-1].completion_token_ids) == "The answer is 20." + tokenizer.eos_token
    assert (
        all(g.written for g in written)
        and written[1].prompt_token_ids[: len(written[0].prompt_token_ids)] == written[0].prompt_token_ids
    )

    trainer = GRPOTrainer(
        weights.load_model(str(tiny_model_dir), dtype="float32"), tokenizer, LoraSettings(rank=4, alpha=8)
    )
    metrics = trainer.step(groups, TrainConfig(learning_rate=1e-3))
    # the two rollouts scored alike: ranked against each other alone (split_advantages) they teach nothing,
    # and the reference trains by itself
    assert metrics["trained"] == 1.0 and metrics["trajectories_trained"] == 1
    assert metrics["rescored_tokens"] == sum(len(g.completion_token_ids) for g in written)


def test_each_strategy_acts_where_it_did_and_skip_nowhere():
    """A reference joins a group as each batch is scored (dynamic sampling then counts the group as
    learnable); a guided retry runs once the step's groups are drawn; skip leaves them."""
    assert list(UNSOLVED) == ["skip", "guided-retry", "reference"] and RunConfig().unsolved == "reference"
    acts = {name: (s.scored is not leave, s.collected is not leave) for name, s in UNSOLVED.items()}
    assert acts == {"skip": (False, False), "guided-retry": (False, True), "reference": (True, False)}
    assert all(strategy(name) is UNSOLVED[name] for name in UNSOLVED)


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("retry", "is not a known strategy; give one of skip, guided-retry, reference, or module:attribute"),
        ("tests.no_such_module:s", "no module named tests.no_such_module"),
        ("tests.user_strategies:missing", "has no 'missing'"),
        ("tests.user_strategies:NOT_A_STRATEGY", "is of type int, not a Strategy"),
    ],
)
def test_a_bad_strategy_is_one_line_naming_the_registered_ones(spec, problem):
    with pytest.raises(UserError, match=problem) as e:
        strategy(spec)
    assert "\n" not in str(e.value)


async def test_an_unknown_strategy_stops_the_run_before_any_work(home):
    run = TrainingRun(RunConfig(unsolved="retry"), say=lambda _: None)
    with pytest.raises(UserError, match="unsolved 'retry' is not a known strategy; give one of skip, guided-retry"):
        await run.run()
    assert not run.dir.exists()


class Unscored:
    name = "unscored"

    async def score_group(self, group: TrajectoryGroup) -> TrajectoryGroup:
        return group


@pytest.mark.parametrize("warmup", [False, True])
async def test_the_run_calls_the_chosen_strategy_on_each_scored_batch_and_once_collected(home, warmup):
    """The user's strategy (module:attribute) sees each batch as scored (the step's own, then the groups
    dynamic sampling drew) and the step's groups once collected; a warm-up step none."""
    cfg = RunConfig(groups_per_step=2, max_extra_groups=2, sft_warmup_steps=1 if warmup else 0)
    run = TrainingRun(cfg, say=lambda _: None)
    run.unsolved = strategy("tests.user_strategies:recording")

    async def rollouts(scenarios, per, label, configs=None):
        return [TrajectoryGroup(trajectories=[Trajectory(messages=[])] * per, scenario=s) for s in scenarios]

    run._rollouts = rollouts
    user_strategies.CALLS.clear()
    train = [Scenario(id=f"s{i}", task=f"task {i}") for i in range(6)]
    collected = await run._collect_groups(Unscored(), train, 0)
    assert len(collected.groups) == (2 if warmup else 4)  # rewards all equal: two more drawn, unless warming up
    assert user_strategies.CALLS == ([] if warmup else [("scored", 2), ("scored", 2), ("collected", 4)])
