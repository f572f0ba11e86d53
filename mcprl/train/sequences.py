"""Trajectories -> training sequences on exactly the sampled tokens.

An assistant turn is merged with the next one into one sequence only when the next prompt
extends prompt+completion token for token and both were sampled with the same settings (and
both or neither under a grammar); otherwise it is its own sequence. Only sampled completion tokens carry loss; prompt,
tool-result and template tokens are context.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcprl.types import Generation, Trajectory


@dataclass
class Sequence:
    input_ids: list[int] = field(default_factory=list)
    loss_mask: list[bool] = field(default_factory=list)
    old_logprobs: list[float] = field(default_factory=list)
    advantage: float = 0.0
    # The distribution the loss tokens were drawn from (and their old logprobs recorded under).
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    constrained: bool = False  # sampled under a grammar (Generation.constrained)
    written: bool = False  # written by the run, not sampled (Generation.written): the trainer scores its old logprobs
    # Loss tokens of the whole trajectory this sequence belongs to ("sequence" loss normalisation).
    trajectory_loss_tokens: int = 0

    def extend(self, ids: list[int], logprobs: list[float] | None) -> None:
        self.input_ids += ids
        self.loss_mask += [logprobs is not None] * len(ids)
        self.old_logprobs += logprobs if logprobs is not None else [0.0] * len(ids)

    @property
    def n_loss_tokens(self) -> int:
        return sum(self.loss_mask)


def sampling_settings(g: Generation) -> dict[str, float | int | bool]:
    """The settings the trainer scores `g`'s tokens at (Sequence's fields): a greedy turn's logprobs
    were recorded at temperature 1 without truncation (see Generation)."""
    flags = {"constrained": g.constrained, "written": g.written}
    if g.temperature == 0:
        return {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, **flags}
    return {"temperature": g.temperature, "top_p": g.top_p, "top_k": max(g.top_k, 0), "min_p": g.min_p, **flags}


def rendered_turn(tokenizer, messages: list, i: int, tools: list | None = None) -> tuple[str, str]:
    """Message `i` as the policy's chat template renders it after the messages before it: (the text
    before it, ending in the generation prompt; its own text, ending at the end-of-turn token, as a
    sampled turn ends)."""

    def text(upto: int, prompt: bool) -> str:
        return tokenizer.apply_chat_template(
            messages[:upto], tools=tools or None, tokenize=False, add_generation_prompt=prompt
        )

    before, whole = text(i, True), text(i + 1, False)
    if not whole.startswith(before):
        raise ValueError(f"the chat template renders message {i} into the text before it")
    reply, eos = whole[len(before) :], tokenizer.eos_token or ""
    if eos and eos in reply:
        reply = reply[: reply.index(eos) + len(eos)]
    return before, reply


def written_generations(traj: Trajectory, tokenizer) -> list[Generation]:
    """The generations of a trajectory the run wrote instead of sampling (`Generation.written`): each
    assistant message from `written_from` on (the messages before it, system prompt,
    demonstration and task, were the policy's input) as `rendered_turn` renders it."""
    out = []
    for i in range(traj.written_from or 0, len(traj.messages)):
        if traj.messages[i].get("role") != "assistant":
            continue
        try:
            before, reply = rendered_turn(tokenizer, traj.messages, i, traj.tools)
        except ValueError as e:
            raise ValueError(f"trajectory {traj.id}: {e}") from None
        ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
        out.append(
            Generation(
                prompt_token_ids=tokenizer(before, add_special_tokens=False)["input_ids"],
                completion_token_ids=ids,
                logprobs=[0.0] * len(ids),
                written=True,
                message_index=i,
            )
        )
    return out


def trajectory_sequences(traj: Trajectory, advantage: float) -> list[Sequence]:
    """`traj`'s training sequences (those carrying loss), each knowing the trajectory's loss tokens."""
    seqs: list[Sequence] = []
    cur: Sequence | None = None
    for g in traj.generations:
        if not g.completion_token_ids:
            continue
        if len(g.logprobs) != len(g.completion_token_ids):
            raise ValueError(
                f"trajectory {traj.id}: {len(g.logprobs)} logprobs for {len(g.completion_token_ids)} tokens"
            )
        settings = sampling_settings(g)
        n = len(cur.input_ids) if cur else 0
        if (
            cur is not None
            and all(getattr(cur, k) == v for k, v in settings.items())
            and len(g.prompt_token_ids) >= n
            and g.prompt_token_ids[:n] == cur.input_ids
        ):
            cur.extend(g.prompt_token_ids[n:], None)
        else:
            cur = Sequence(advantage=advantage, **settings)
            seqs.append(cur)
            cur.extend(g.prompt_token_ids, None)
        cur.extend(g.completion_token_ids, g.logprobs)
    for s in seqs:  # each began with a generation's completion: none is without loss tokens
        s.trajectory_loss_tokens = sum(x.n_loss_tokens for x in seqs)
    return seqs
