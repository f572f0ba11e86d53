"""The shipped servers' task generators and checkers: deterministic, solvable, and able to say no."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from mcprl import tasks
from mcprl.servers.email.mailbox import Mailbox
from mcprl.servers.inventory.world import Warehouse
from mcprl.types import Trajectory

pytestmark = pytest.mark.unit


def scripted(calls: list[tuple[str, dict[str, Any], str]], answer: str) -> Trajectory:
    """A trajectory in OpenAI format: one assistant turn per call, its tool result, a final answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    for n, (name, args, result) in enumerate(calls):
        call = {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": result},
        ]
    messages.append({"role": "assistant", "content": answer})
    return Trajectory(messages=messages)


def answering(text: str) -> Trajectory:
    return scripted([], text)


@pytest.mark.parametrize("name", ["calculator", "email", "inventory"])
def test_generators_are_deterministic_by_seed_and_cover_all_difficulties(name):
    assert name in tasks.names()  # mcprl.tasks.SHIPPED
    server = tasks.get(name)
    first, again, other = server.generate(60, seed=1), server.generate(60, seed=1), server.generate(60, seed=2)
    assert [s.model_dump() for s in first] == [s.model_dump() for s in again]
    assert [s.task for s in first] != [s.task for s in other]
    assert {s.difficulty for s in first} == {1, 2, 3, 4, 5}
    assert len({s.id for s in first}) == 60
    tool_names = {
        "calculator": {"add", "subtract", "multiply", "divide", "power"},
        "inventory": set(Warehouse.TOOL_NAMES),
        "email": set(Mailbox.TOOL_NAMES),
    }[name]
    for s in first:
        assert s.check is not None and s.check["kind"] == "server" and s.check["server"] == name
        assert s.tools and set(s.tools) <= tool_names
    assert {s.difficulty for s in server.generate(10, seed=3, difficulties=(1,))} == {1}
    assert server.command(seed=4) == f"python -m mcprl.servers.{name} --seed 4"


# ---- calculator ----------------------------------------------------------------------------------


def test_calculator_answers_are_the_expressions_values():
    for s in tasks.get("calculator").generate(100, seed=5):
        expression = re.search(r"[\d(][\d ()+\-*/]*\d\)?(?=[ ?.]|$)", s.task.replace("Use the tools.", ""))
        assert expression is not None, s.task
        assert eval(expression.group(0)) == float(s.answer), s.task
        assert len(re.findall(r"[+\-*/] ", s.task)) == s.difficulty


def test_calculator_checker_rewards_the_right_number_only():
    check = tasks.get("calculator").check
    scenario = tasks.get("calculator").generate(1, seed=9, difficulties=(2,))[0]
    right, wrong = scenario.answer, str(int(scenario.answer) + 1)
    assert check(scenario, answering(f"The answer is {right}.")) == 1.0
    assert check(scenario, answering(f"{int(right):,}")) == 1.0  # thousands separators are fine
    assert check(scenario, answering(f"The answer is {wrong}.")) == 0.0
    assert check(scenario, answering("I could not work it out.")) == 0.0
    guesses = " ".join(str(int(right) + d) for d in range(-5, 6))
    assert check(scenario, answering(guesses)) == 0.0  # a list of guesses containing it earns nothing


# ---- inventory -----------------------------------------------------------------------------------


def test_inventory_question_checker():
    inventory = tasks.get("inventory")
    world = Warehouse(0)
    for s in inventory.generate(40, seed=1, difficulties=(1,)):
        sku = re.search(r"SKU-\d+", s.task).group(0)
        item = world.items[sku]
        truth = item.price if "price" in s.task else str(item.stock)
        assert s.answer == truth
        assert inventory.check(s, answering(f"Item {sku}: {truth}")) == 1.0
        assert inventory.check(s, answering(f"Item {sku}: {float(truth) + 1:g}")) == 0.0
    lowest = next(s for s in inventory.generate(40, seed=2, difficulties=(4,)) if "lowest" in s.task)
    assert inventory.check(lowest, answering(f"It is the {lowest.answer}.")) == 1.0
    assert inventory.check(lowest, answering("It is the brass hinge.")) == 0.0


def restock_calls(world: Warehouse, sku: str, change: int) -> list[tuple[str, dict[str, Any], str]]:
    category = world.items[sku].category
    return [
        ("list_items", {"category": category}, world.list_items(category)),
        ("update_stock", {"sku": sku, "change": change}, world.update_stock(sku, change)),
    ]


def test_inventory_state_checker_replays_the_successful_calls_on_a_fresh_world():
    inventory = tasks.get("inventory")
    scenario = inventory.generate(1, seed=3, difficulties=(5,))[0]
    target = scenario.check["expect_change"]
    sku, change = target["sku"], target["change"]
    assert inventory.check(scenario, scripted(restock_calls(Warehouse(0), sku, change), "Done.")) == 1.0

    other = next(s for s in Warehouse(0).items if s != sku)
    twice = Warehouse(0)
    wrong = {
        "too little": restock_calls(Warehouse(0), sku, change - 1),
        "wrong item": restock_calls(Warehouse(0), other, change),
        "twice": restock_calls(twice, sku, change) + restock_calls(twice, sku, change),
        "nothing": [],
        "failed call": [("update_stock", {"sku": sku, "change": change}, "Error: the server rejected the call")],
    }
    for label, calls in wrong.items():
        assert inventory.check(scenario, scripted(calls, "Done.")) == 0.0, label
    # Arguments the server would coerce (a string "10") replay the same way; broken JSON is skipped.
    coerced = [("update_stock", {"sku": sku.lower(), "change": str(change)}, "ok")]
    assert inventory.check(scenario, scripted(coerced, "Done.")) == 1.0
    broken = scripted([], "Done.")
    broken.messages.insert(
        1,
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "x", "type": "function", "function": {"name": "update_stock", "arguments": "{not json"}}
            ],
        },
    )
    broken.messages.insert(2, {"role": "tool", "tool_call_id": "x", "content": "ok"})
    assert inventory.check(scenario, broken) == 0.0


# ---- email ---------------------------------------------------------------------------------------


def test_each_planted_code_is_in_exactly_one_email():
    mailbox = Mailbox(0)
    assert len(mailbox.emails) == 300
    for fact in mailbox.facts:
        if fact.difficulty <= 3:
            holders = [e.id for e in mailbox.emails.values() if fact.answer in e.body]
            assert len(holders) == 1, fact


def test_email_questions_are_answerable_with_the_tools():
    mailbox = Mailbox(0)
    facts = {f.question: f for f in mailbox.facts}
    flight = next(f for q, f in facts.items() if "flight to" in q)
    city = flight.question.split("flight to ")[1].rstrip("?")
    assert flight.answer in mailbox.search_emails(f"flight {city} confirmed")  # in the snippet: one call

    hotel = next(f for q, f in facts.items() if "hotel in" in q)
    city = hotel.question.split("hotel in ")[1].rstrip("?")
    found = mailbox.search_emails(f"stay {city}")
    assert hotel.answer not in found  # needs the second call
    assert hotel.answer in mailbox.read_email(found.split(" | ")[0])

    total = next(f for q, f in facts.items() if "total of all" in q)
    vendor = total.question.split("all my ")[1].split(" invoices")[0]
    amounts = re.findall(r"Amount due: \$(\d+\.\d\d)", mailbox.search_emails("invoice", sender=vendor, limit=50))
    assert f"{sum(float(a) for a in amounts):.2f}" == total.answer


def test_email_checker():
    email = tasks.get("email")
    for s in email.generate(30, seed=4):
        assert email.check(s, answering(f"Here you go: {s.answer}")) == 1.0, s.task
        assert email.check(s, answering("I could not find it.")) == 0.0, s.task
    coded = next(s for s in email.generate(30, seed=4) if s.difficulty == 1)
    assert email.check(coded, answering(f"The code is {coded.answer.lower()}.")) == 1.0


def test_search_filters_and_bad_ids():
    mailbox = Mailbox(0)
    march = mailbox.search_emails("", after="2024-03-01", before="2024-04-01", limit=50)
    assert march and all(" | 2024-03-" in line for line in march.splitlines() if line.startswith("msg-"))
    assert mailbox.search_emails("zzzzqqq") == "No emails match."
    with pytest.raises(ValueError, match="no email with id"):
        mailbox.read_email("msg-9999")
    with pytest.raises(ValueError, match="after must be a date like 2024-03-31"):
        mailbox.search_emails("x", after="March")
