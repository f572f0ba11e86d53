"""A grounded task's reference chain (mcprl.scenarios.grounded: recorded while exploring, replayed
before use, so known to be right) as messages the policy could have written: its first call as
an example exchange (the demonstration, a guided retry), or the whole chain as a trajectory the
run adds to a group no rollout solved (`unsolved = "reference"`)."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Sequence
from typing import Literal

from mcprl.checks import holds_answer
from mcprl.errors import clip
from mcprl.judges.verify import checker_for
from mcprl.scenarios.phrasing import value_text
from mcprl.scenarios.results import flatten
from mcprl.train.sequences import rendered_turn
from mcprl.types import Message, Scenario, ToolSchema, Trajectory, TrajectoryGroup

RESULT_CHARS = 600  # of a reference's last result, given as the answer of a task whose answer is not known
QUOTE_CHARS = 160  # the longest piece of a result a written answer quotes (`quotes`)
CELL = re.compile(r"\s*[|\t;]\s*|,\s+")  # what parts a line of a record: `SKU-1 | hammer | price: $9.50`


def evidence_pieces(result: str, cells: bool = False) -> list[str]:
    """The pieces of a result an answer can quote, as the result writes them: each `"key": value` of a
    JSON result (its scalars, `flatten`), else each line, stripped, or with `cells` each part of a line."""
    try:
        data = json.loads(result)
    except ValueError:
        data = None
    if not isinstance(data, (dict, list)):
        lines = [line.strip() for line in result.splitlines()]
        return [cell for line in lines for cell in CELL.split(line)] if cells else lines
    pieces = []
    for key, value in flatten(data):
        key_text, value_text = json.dumps(key), json.dumps(value, ensure_ascii=False)
        found = re.search(rf"{re.escape(key_text)}\s*:\s*{re.escape(value_text)}", result)
        pieces.append(found.group(0) if found else f"{key_text}: {value_text}")
    return pieces


def quotes(result: str, values: list, cells: bool = False, named: Sequence = ()) -> list[str]:
    """What of `result` a written answer quotes before it states `values`: for each value, the first
    piece of the result that holds it (`evidence_pieces`: `Author: Ann Lee`, `"price": 79.66`), at most
    QUOTE_CHARS long and more than the value alone. Copying such a piece is what a small policy can
    learn: its label follows from the task's words and the value from the label, where a bare `The
    answer is ...` asks it to pick the value out of the result at once (docs/benchmarks.md, "Answers
    that quote their line"). Nothing for a value no piece holds (an answer spread over lines).

    `named`: values the task states to pick its record out of a listing (`Message: Document
    installation` of "the author of the commit whose message is ..."). Their pieces come first: the
    line the question names, a copy of the task's own words, then the line that answers, where the
    label alone leaves the policy to guess which record's `Author:` is meant. (A value the call was
    sent picked its record already: a lookup's result says it back.) A value held by several pieces
    is then quoted from the one nearest the first named piece, the record it names (a diff's `+1.2.0`
    under `diff --git a/VERSION`, not the changelog's `+## 1.2.0` above it)."""
    pieces = evidence_pieces(result, cells)
    quoted: list[str] = []
    anchor: int | None = None  # where the first named piece is
    for k, value in enumerate([*named, *values]):
        holding = [i for i, p in enumerate(pieces) if holds_answer(p, value)]
        if not holding:
            continue
        at = holding[0] if anchor is None else min(holding, key=lambda i: (abs(i - anchor), i < anchor))
        if anchor is None and k < len(named):
            anchor = at
        piece = pieces[at]
        if len(piece) <= QUOTE_CHARS and piece != str(value).strip() and piece not in quoted:
            quoted.append(piece)
    return quoted


def reference_exchange(scenario: Scenario) -> list[Message]:
    """`task -> the first call of its reference chain` (a grounded scenario's, mcprl.scenarios.grounded):
    an exchange known to be right, since the call ran without error and was replayed before use.
    It ends at the call, as every demonstration does (see mcprl.run.demonstration's docstring)."""
    call = scenario.reference[0]
    return [
        {"role": "user", "content": scenario.task},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_example",
                    "type": "function",
                    "function": {"name": call.tool, "arguments": json.dumps(call.arguments)},
                }
            ],
        },
    ]


def better(s: Scenario, chain: list[Message], reply: str, than: str) -> bool:
    """Whether `s`'s own check, after `chain`, passes `reply` and scores it at least as it scores `than`
    (a quoted line may bring numbers or words a check refuses, as a recited record); with no check, yes.
    A check that cannot say here (one that raises, or awaits) says no."""
    if s.check is None:
        return True
    try:  # any checker a user's scenario names: what it raises is its own
        checker = checker_for(s)
    except Exception:
        return False

    def score(text: str) -> float:
        t = Trajectory(messages=[{"role": "user", "content": s.task}, *chain, {"role": "assistant", "content": text}])
        try:
            got = checker(s, t)
        except Exception:
            return -1.0
        if inspect.isawaitable(got):
            if inspect.iscoroutine(got):
                got.close()
            return -1.0
        return float(got)

    mine = score(reply)
    return mine > 0 and mine >= score(than)


def reference_messages(s: Scenario, finish: Literal["text", "tool"] = "text") -> tuple[list[Message], str]:
    """A grounded task's reference chain as the turns after its task: each reference call and its
    recorded result, then the answer (the pieces of the last result that hold it, `quotes`, and
    `The answer is ...`; or complete_task's; a task whose answer is not known, a synthesized one's,
    gives what its last call found), and that answer."""
    messages: list[Message] = []
    for k, call in enumerate(s.reference):
        call_id = f"call_reference_{k}"
        messages += [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.tool, "arguments": json.dumps(call.arguments)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": call.result},
        ]
    known = s.answer if s.answer is not None else (s.check or {}).get("value")  # a user's task may state it there
    values = known if isinstance(known, list) else [known]
    answer = ", ".join(v if isinstance(v, str) else json.dumps(v) for v in values)
    if known is None:  # a synthesized task (mcprl.scenarios.fallback): what its reference found is the answer
        answer = clip(s.reference[-1].result.strip(), RESULT_CHARS)
    if finish == "tool":
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_reference_answer",
                        "type": "function",
                        "function": {"name": "complete_task", "arguments": json.dumps({"answer": answer})},
                    }
                ],
            }
        )
    else:
        answer = f"The answer is {answer}."
        if known is not None:  # the whole line where the task's check takes it, else the part that holds the answer
            # the values the task states that its last call was not sent pick the record out of the result
            last, sent = s.reference[-1].result, {value_text(v) for v in s.reference[-1].arguments.values()}
            named = [g for g in s.metadata.get("given") or [] if value_text(g) not in sent]
            quoting = (
                "\n".join([*q, answer])
                for cells in (False, True)
                for by in ([named, []] if named else [[]])
                if (q := quotes(last, values, cells, by))
            )
            answer = next((reply for reply in quoting if better(s, messages, reply, answer)), answer)
        messages.append({"role": "assistant", "content": answer})
    return messages, answer


def reference_trajectory(group: TrajectoryGroup, finish: Literal["text", "tool"] = "text") -> Trajectory | None:
    """A grounded task's whole reference chain as the policy should have written it, after the same
    prompt the group's rollouts had (system prompt, demonstration, task): `written_chain` on the
    group's sampled prompt. The run adds it to a group no rollout solved (`unsolved = "reference"`),
    where it is the one success GRPO can learn from, a supervised step on the reference in the
    policy's own context. None where the group has no sampled turn to take the prompt from, or
    `written_chain` gives none."""
    sampled = next((t for t in group.valid if t.generations), None)
    if group.scenario is None or sampled is None:
        return None
    start = sampled.generations[0].message_index
    written = written_chain(group.scenario, sampled.messages[:start], sampled.tools, finish)
    if written is not None:
        written.policy_version = sampled.policy_version
    return written


def written_chain(
    s: Scenario, prompt: list[Message], tools: list[ToolSchema] | None, finish: Literal["text", "tool"] = "text"
) -> Trajectory | None:
    """`s`'s reference chain (`reference_messages`) after `prompt`, the messages an episode opens with,
    as a trajectory the run wrote, not sampled (`Trajectory.written_from`: the trainer tokenizes it
    with the policy's chat template). None where `s` has no reference chain or is checked by reading
    state back (a written chain changed nothing)."""
    if not s.reference or s.read_back is not None:
        return None
    written, answer = reference_messages(s, finish)
    calls = [c.tool for c in s.reference]
    metrics = {
        "turns": float(len(calls) + 1),
        "tool_calls": float(len(calls)),
        "tool_errors": 0.0,
        "finished": 1.0,
        **{f"calls/{name}": float(calls.count(name)) for name in set(calls)},
    }
    return Trajectory(
        messages=[*(dict(m) for m in prompt), *written],
        tools=tools,
        metadata={"final_answer": answer},
        metrics=metrics,
        scenario_id=s.id,
        written_from=len(prompt),
    )


def reference_turn_tokens(s: Scenario, tokenizer, finish: Literal["text", "tool"] = "text") -> int:
    """The most tokens one turn of `s`'s reference chain takes (a call, or the answer), written as the
    policy's chat template writes it: a turn budget under it leaves the task unsolvable."""
    messages = [{"role": "user", "content": s.task}, *reference_messages(s, finish)[0]]
    return max(
        len(tokenizer(rendered_turn(tokenizer, messages, i)[1], add_special_tokens=False)["input_ids"])
        for i, m in enumerate(messages)
        if m["role"] == "assistant"
    )
