"""The real SmolLM2-135M learns: a few GRPO steps on a simple reward (shorter replies) raise the
mean reward, with fixed seeds. Marked integration: ~1.5 minutes on one core (4 prompts x 4
samples, 8 steps at 1e-3: 0.14 -> 0.57 and 0.86 at seeds 0 and 1 on a machine where 5 steps gave 0.23 and 0.70;
the 6 x 6, 8 steps at 3e-4 it replaced took three times as long for 0.14 -> 0.65)."""

import anyio
import pytest
import torch

from mcprl import LocalBackend, TrainableModel, TrainConfig
from mcprl.types import Generation, Trajectory, TrajectoryGroup

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
PROMPTS = ["Name a color.", "Name an animal.", "Name a fruit.", "Name a country."]
MAX_TOKENS = 24
STEPS = 8


def reward(token_ids: list[int]) -> float:
    return 1.0 - len(token_ids) / MAX_TOKENS


async def _groups(model, step: int, per: int = 4) -> list[TrajectoryGroup]:
    """A group per prompt, the prompts' requests sent at once so that the engine samples them in one batch
    (each row keeps its own seed, so what is drawn does not depend on the batch)."""
    groups: list[TrajectoryGroup | None] = [None] * len(PROMPTS)

    async def ask(i: int, p: str) -> None:
        msgs = [{"role": "user", "content": p}]
        async with model.openai_client() as client:
            r = await client.chat.completions.create(
                model=model.get_inference_name(),
                messages=msgs,
                n=per,
                max_tokens=MAX_TOKENS,
                seed=1000 * step + 10 * i,
                logprobs=True,
                extra_body={"return_token_ids": True},
            )
        trajs = [
            Trajectory(
                messages=msgs + [{"role": "assistant", "content": c.message.content}],
                generations=[
                    Generation(
                        prompt_token_ids=r.model_extra["prompt_token_ids"],
                        completion_token_ids=c.model_extra["token_ids"],
                        logprobs=[t.logprob for t in c.logprobs.content],
                    )
                ],
                reward=reward(c.model_extra["token_ids"]),
            )
            for c in r.choices
        ]
        groups[i] = TrajectoryGroup(trajectories=trajs)

    async with anyio.create_task_group() as tg:
        for i, p in enumerate(PROMPTS):
            tg.start_soon(ask, i, p)
    return groups


def _mean(groups):
    rs = [t.reward for g in groups for t in g.trajectories]
    return sum(rs) / len(rs)


async def test_grpo_raises_mean_reward(home, smollm2_dir):
    # the LoRA starts from torch's global generator: seeded, not whatever the worker's earlier tests left there
    # (+0.41 to +0.71 over seeds 0-2 after 5 steps on one machine, +0.09 at seed 0 on another, whose numerics
    # differ: +0.43 there after 8; one unseeded run alone gained +0.15 after 5)
    torch.manual_seed(0)
    model = TrainableModel(name="brief", base_model=str(smollm2_dir))
    async with LocalBackend(device="cpu") as backend:
        await model.register(backend)
        before = _mean(await _groups(model, step=99))
        trained = []
        for step in range(STEPS):
            m = await model.train(await _groups(model, step), TrainConfig(learning_rate=1e-3))
            trained.append(m["trained"])
        # a later step may find every group's replies scored alike (under the parallel suite's load one did:
        # another thread count, other numerics) and train nothing; the gain below is the property
        assert trained[0] == 1, trained
        after = _mean(await _groups(model, step=99))  # the same seeds as `before`
    assert model.get_step() == STEPS
    assert after > before + 0.25, (before, after)
