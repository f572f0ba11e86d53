"""A written reference chain's answer (mcprl.run.references.reference_messages) quotes the piece of its
last result that holds the answer, as the result writes it, before stating it, where the task's own
check passes that reply; else it states the answer alone."""

from __future__ import annotations

import json

import pytest

from mcprl.judges import VerifyJudge
from mcprl.run.references import reference_messages
from mcprl.types import Scenario, Trajectory, TrajectoryGroup

pytestmark = [pytest.mark.unit, pytest.mark.anyio]

LOG = "Commit: 'a632078'\nAuthor: Ann Lee <ann@example.com>\nDate: 2024-03-07\nMessage: Bump version\n"
RECORDS = (
    "SKU-8310 | chisel | tools | stock: 105 | price: $157.15\nSKU-6462 | level | tools | stock: 12 | price: $53.63"
)
ITEM = json.dumps(
    {"item": {"sku": "SKU-6462", "name": "steel level", "stock": 12, "price": 53.63}}, separators=(",", ":")
)

CASES = [
    # (result, answer, check, the pieces quoted before "The answer is ...")
    (LOG, "Ann Lee", {"kind": "holds"}, ["Author: Ann Lee <ann@example.com>"]),
    (RECORDS, 53.63, {"kind": "holds"}, ["SKU-6462 | level | tools | stock: 12 | price: $53.63"]),
    # a check that refuses a recited record takes the part of the line that holds the answer
    (RECORDS, 53.63, {"kind": "holds", "max_words": 8}, ["price: $53.63"]),
    # JSON: the "key": value the result holds, written as the result writes it
    (ITEM, 53.63, {"kind": "holds"}, ['"price":53.63']),
    # a value alone on its line: nothing to quote; an exact check: the answer alone
    ("main\nfeature/alerts", "main", {"kind": "holds"}, []),
    (LOG, "Ann Lee", {"kind": "exact", "value": "The answer is Ann Lee."}, []),
]


@pytest.mark.parametrize(("result", "answer", "check", "quoted"), CASES)
async def test_a_written_answer_quotes_what_holds_it_where_its_check_passes_the_reply(result, answer, check, quoted):
    s = Scenario(task="Which?", answer=answer, check=check, reference=[{"tool": "look", "result": result}])
    chain, reply = reference_messages(s)
    *lines, last = reply.split("\n")
    assert lines == quoted and last == f"The answer is {answer}."
    assert all(piece in result for piece in lines)
    judged = await VerifyJudge().score_group(
        TrajectoryGroup(scenario=s, trajectories=[Trajectory(messages=[{"role": "user", "content": s.task}, *chain])])
    )
    assert chain[-1]["content"] == reply and judged.trajectories[0].reward == 1.0


def test_an_answer_the_result_spreads_over_lines_or_a_task_of_no_known_answer_quotes_nothing():
    spread = Scenario(
        task="Which?", answer="Ann Lee", check={"kind": "holds"}, reference=[{"tool": "t", "result": "Ann\nLee"}]
    )
    assert reference_messages(spread)[1] == "The answer is Ann Lee."
    unknown = Scenario(task="List them.", reference=[{"tool": "t", "result": "Author: Ann Lee"}])
    assert reference_messages(unknown)[1] == "The answer is Author: Ann Lee."
    # complete_task's answer is the value alone
    tool_finish = reference_messages(
        Scenario(task="Who?", answer="Ann Lee", check={"kind": "holds"}, reference=[{"tool": "t", "result": LOG}]),
        "tool",
    )
    assert json.loads(tool_finish[0][-1]["tool_calls"][0]["function"]["arguments"]) == {"answer": "Ann Lee"}


LISTING = (
    "Commit: 'a632078'\nAuthor: Ann Lee\nDate: 2024-03-07\nMessage: Bump version\n\n"
    "Commit: 'fb2fd2a'\nAuthor: Bob Stone\nDate: 2024-03-05\nMessage: Document installation\n"
)


def read_task(
    task: str, answer: str, result: str, given: list[str], arguments: dict | None = None, **check
) -> Scenario:
    """A one-call read that states `given`, sent `arguments` (a repository's path where none are given)."""
    return Scenario(
        task=task,
        answer=answer,
        check={"kind": "holds", **check},
        reference=[{"tool": "read", "arguments": arguments or {"repo_path": "/r"}, "result": result}],
        metadata={"given": given},
    )


async def test_a_task_that_names_its_record_quotes_the_line_it_names_before_the_line_that_answers():
    """A value the task states and its call was not sent picks a record out of the result: the reply
    quotes the line that holds it (the task's own words) before the line that answers, both lines of
    the result and of one record, and still passes the task's check. A value the call was sent (a
    lookup's hash, said back by its result) is no such line."""
    task = 'Who is the author of the commit whose message is "Document installation"?'
    named = read_task(task, "Bob Stone", LISTING, ["Document installation"], max_words=14)
    chain, reply = reference_messages(named)
    *lines, last = reply.split("\n")
    assert lines == ["Message: Document installation", "Author: Bob Stone"] and last == "The answer is Bob Stone."
    record = LISTING.split("\n\n")[1]
    assert all(line in record.splitlines() for line in lines)
    judged = await VerifyJudge().score_group(
        TrajectoryGroup(
            scenario=named, trajectories=[Trajectory(messages=[{"role": "user", "content": named.task}, *chain])]
        )
    )
    assert judged.trajectories[0].reward == 1.0
    looked_up = read_task(
        "Who is the author of commit fb2fd2a?", "Bob Stone", record, ["fb2fd2a"], {"revision": "fb2fd2a"}
    )
    assert reference_messages(looked_up)[1].split("\n") == ["Author: Bob Stone", "The answer is Bob Stone."]


def test_a_value_two_lines_hold_is_quoted_from_the_record_the_task_names():
    """Where the answer is on several lines, the line quoted is the one nearest the line the task
    named, in its record: the version file's added line, not the changelog's above it."""
    diff = (
        "diff --git a/CHANGELOG.md b/CHANGELOG.md\n+++ b/CHANGELOG.md\n+## 1.2.0\n+- storm alerts\n"
        "diff --git a/TODO.md b/TODO.md\n+++ b/TODO.md\n+- support Fahrenheit\n"
        "diff --git a/VERSION b/VERSION\n+++ b/VERSION\n+1.2.0"
    )
    s = read_task("In the staged diff, what is added where the file is VERSION?", "1.2.0", diff, ["VERSION"])
    assert reference_messages(s)[1].split("\n") == ["diff --git a/VERSION b/VERSION", "+1.2.0", "The answer is 1.2.0."]
