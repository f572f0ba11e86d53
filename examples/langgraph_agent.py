"""Train SmolLM2-135M as a LangGraph ReAct agent over a real MCP server (the calculator), on CPU.

    python examples/langgraph_agent.py

Each step gathers groups of rollouts of the prebuilt agent, scores them with the calculator's
verifier and takes one GRPO step on the exact tokens the agent sampled.
"""

import anyio

from mcprl import LocalBackend, TrainableModel, TrainConfig, gather_trajectory_groups
from mcprl.rollout.langgraph import create_mcp_agent
from mcprl.servers.calculator import tasks
from mcprl.tools import ServerSpec, ToolPool

STEPS, GROUPS, ROLLOUTS = 2, 2, 4


async def main() -> None:
    model = TrainableModel(name="langgraph-calculator", project="examples", base_model="smollm2-135m")
    scenarios = tasks.generate(STEPS * GROUPS, seed=0, difficulties=[1])
    async with (
        LocalBackend(device="cpu") as backend,
        ToolPool(ServerSpec.parse("python -m mcprl.servers.calculator")) as pool,
    ):
        await model.register(backend)
        agent = create_mcp_agent(model, pool, max_turns=2, max_tokens=64)  # follows the served step by itself
        for step in range(STEPS):
            batch = scenarios[step * GROUPS : (step + 1) * GROUPS]
            groups = await gather_trajectory_groups([[agent(s) for _ in range(ROLLOUTS)] for s in batch])
            for scenario, group in zip(batch, groups):
                for traj in group.trajectories:
                    traj.reward = tasks.check(scenario, traj)
                print(
                    f"step {model.get_step()} | {scenario.task} -> rewards {group.rewards()}"
                    f" | answers {[t.final_answer()[:30] for t in group.valid]} | failed {group.exceptions}"
                )
            metrics = await model.train(groups, TrainConfig(learning_rate=1e-4))
            print(
                f"trained: {metrics.get('trained', 0):.0f}, loss {metrics.get('loss', 0.0):.4f}, now serving "
                f"{model.get_inference_name()}"
            )


if __name__ == "__main__":
    anyio.run(main)
