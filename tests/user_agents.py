"""Agents as a user writes them, loaded by `mcprl.rollout.agents.load("user_agents:NAME")` in the tests."""

from mcprl.rollout.loop import ToolAgent, initial_messages


async def solve(rec, config):
    """A tool-calling agent on the plain OpenAI SDK, prompting as the plain loop does."""
    client = rec.openai_client()
    schemas = rec.tools.schemas if rec.tools is not None else []
    messages = initial_messages(rec.scenario, schemas, config)
    for _ in range(config.max_turns):
        resp = await client.chat.completions.create(
            model=rec.model_name,
            messages=messages,
            **({"tools": schemas} if schemas else {}),
            temperature=config.temperature,
            top_p=config.top_p,
            max_tokens=config.max_tokens,
        )
        reply = resp.choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls:
            return reply.content
        for call in reply.tool_calls:
            out = await rec.tools.call(call.function.name, call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": out.text})
    return {"metrics": {"max_turns_reached": 1.0}}


async def crash(rec, config):
    await rec.openai_client().chat.completions.create(
        model=rec.model_name, messages=[{"role": "user", "content": "hi"}]
    )
    raise ValueError("boom")


class OneTurn(ToolAgent):
    """The plain loop, stopped after its first turn."""

    async def is_done(self, episode):
        return True


def not_async(rec, config):
    return "sync"


async def three_args(rec, config, extra):
    return None


NOT_CALLABLE = 42


def half_credit(scenario, trajectory) -> float:
    """A scenario check as a user writes it (`{"kind": "python", "function": "user_agents:half_credit"}`):
    half marks for any answer, so partial credit shows in a score."""
    return 0.5
