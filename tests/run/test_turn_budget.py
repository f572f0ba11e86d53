"""A turn's token budget and the tasks' reference calls (`TrainingRun._fit_turns`): a task whose
reference call is longer than a turn may be cannot be solved, every rollout of it cut mid-call. A
run not given `--max-tokens` fits the budget to its tasks' longest reference turn; one given it
keeps it and says which tasks cannot fit."""

from __future__ import annotations

import pytest

from mcprl.model import weights
from mcprl.run.config import RunConfig, load_config
from mcprl.run.references import reference_trajectory, reference_turn_tokens
from mcprl.run.runner import TrainingRun
from mcprl.serving.sampler import Sampled
from mcprl.tools import ServerSpec, ToolPool
from mcprl.train.sequences import written_generations
from mcprl.types import Scenario, Trajectory, TrajectoryGroup
from tests.run.test_unsolved import serve
from tests.scripted_policy import ScriptedEngine, call, scripted_endpoint
from tests.server_fork import shipped  # `python -m mcprl.servers.NAME`, forked under pytest

pytestmark = pytest.mark.anyio

# Digits are a token each: a call carrying these two numbers is longer than the default 64-token turn.
LONG = {"a": -1.2345678910111213e-07, "b": -9.876543210987654e-07}
SHORT = {"a": 2, "b": 3}


def adding(arguments: dict) -> Scenario:
    total = f"{arguments['a'] + arguments['b']:.10g}"  # as the calculator writes it
    return Scenario(
        task=f"Add {arguments['a']} and {arguments['b']}. What is the result?",
        answer=float(total),
        check={"kind": "holds"},
        reference=[{"tool": "add", "arguments": arguments, "result": total}],
    )


class Budgeted(ScriptedEngine):
    """A scripted reply cut at the request's max_tokens, with finish_reason "length", as a model's is."""

    def _sample_batch(self, batch, n_rows):
        out = super()._sample_batch(batch, n_rows)
        return [
            [
                Sampled(s.token_ids[:budget], s.logprobs[:budget], "length" if len(s.token_ids) > budget else "stop")
                for s in samples
            ]
            for p, samples in zip(batch, out, strict=True)
            if (budget := p.max_new_tokens)
        ]


def test_a_reference_turn_is_counted_as_the_run_writes_it(tiny_model_dir):
    """The budget is measured on the turns `unsolved = "reference"` trains on: the longest written
    turn of a task's reference trajectory, token for token."""
    tokenizer = weights.load_tokenizer(str(tiny_model_dir))
    for arguments in (LONG, SHORT):
        s = adding(arguments)
        prompt = [{"role": "user", "content": s.task}]
        sampled = Trajectory(
            messages=prompt,
            generations=[{"message_index": 1, "prompt_token_ids": [1], "completion_token_ids": [], "logprobs": []}],
        )
        written = written_generations(
            reference_trajectory(TrajectoryGroup(scenario=s, trajectories=[sampled])), tokenizer
        )
        assert reference_turn_tokens(s, tokenizer) == max(len(g.completion_token_ids) for g in written)
    assert reference_turn_tokens(adding(LONG), tokenizer) > RunConfig().rollout.max_tokens
    assert reference_turn_tokens(adding(SHORT), tokenizer) < RunConfig().rollout.max_tokens


async def test_a_task_whose_reference_call_outgrows_the_turn_is_solved_once_the_run_fits_it(tiny_model_dir, home):
    """A policy writing the reference call is cut mid-call under the default budget and solves the task
    under the one the run fits; a short task's budget is left as it is; a budget the user gave is kept
    and the run says how many tasks it leaves unsolvable and what would fit them."""
    from mcprl.judges import VerifyJudge, score_groups

    long, short = adding(LONG), adding(SHORT)

    def reply(request: dict) -> str:
        if request["messages"][-1]["role"] == "tool":
            return f"The answer is {request['messages'][-1]['content']}."
        task = request["messages"][-1]["content"]
        return call("add", **next(s for s in (long, short) if s.task == task).reference[0].arguments)

    said: list[str] = []
    run = TrainingRun(RunConfig(model=str(tiny_model_dir), group_size=2), say=said.append)
    async with ToolPool(ServerSpec.parse(shipped("calculator"))) as pool:
        with scripted_endpoint(tiny_model_dir, engine=Budgeted(tiny_model_dir, handler=reply)) as (policy, _):
            serve(run, policy, pool)

            async def rewards(s: Scenario) -> list[float]:
                groups = await score_groups(VerifyJudge(), await run._rollouts([s], 2, "step"))
                return [t.reward for t in groups[0].trajectories]

            assert await rewards(long) == [0.0, 0.0] and await rewards(short) == [1.0, 1.0]
            run._fit_turns([short])
            assert run.cfg.rollout.max_tokens == 64 and said == []
            run._fit_turns([short, long])
            assert await rewards(long) == [1.0, 1.0]
    fitted = run.cfg.rollout.max_tokens
    assert said == [
        f"tokens per turn: 64 -> {fitted}, to fit 1 of 2 tasks' reference turns (the longest {fitted - 16} tokens, "
        "add); --max-tokens sets it"
    ]

    given = TrainingRun(load_config(None, {"rollout.max_tokens": 64, "model": str(tiny_model_dir)}), say=said.append)
    given._fit_turns([short, long])
    assert given.cfg.rollout.max_tokens == 64
    assert said[-1] == (
        f"--max-tokens 64 leaves 1 of 2 tasks unsolvable: their reference turns take up to {fitted - 16} tokens, add; "
        f"--max-tokens {fitted} fits them"
    )
