import json
import sys
from collections import Counter

import pytest

from mcprl.autorl.generate import generate_inputs, generate_rubric, generate_system_prompt
from mcprl.autorl.run import autorl_dir, plan
from mcprl.errors import UserError
from mcprl.run.config import RunConfig
from mcprl.types import Scenario, load_jsonl
from tests.fake_llm import FakeLLM, message_text

pytestmark = pytest.mark.anyio

TASK = "Turn a customer email into a one-line summary"
PROMPT = "You receive one customer email per message. Reply with a single line saying what the customer wants."
CRITERIA = [
    "The summary is exactly one line.",
    "It states what the customer asks for.",
    "It invents nothing the email does not say.",
]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "lookup_order", "description": "find an order by id", "parameters": {"type": "object"}},
    }
]


def email(i: int, difficulty: int = 1) -> dict:
    return {"text": f"Hello, order {i} arrived damaged. Can I get a refund? Thanks, Sam", "difficulty": difficulty}


def kind(request: dict) -> str:
    text = message_text(request, "system") + message_text(request, "user")
    needles = {
        "Write the system prompt": "system_prompt",
        "You write inputs": "inputs",
        "Write the rubric": "rubric",
        "You write tasks for training": "tasks",
    }
    return next(k for needle, k in needles.items() if needle in text)


class Generator:
    """A FakeLLM handler that answers each kind of generation request, with fresh numbered inputs
    (and tasks, when given tools) on every call, and counts requests by kind."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.made = 0

    def __call__(self, request: dict) -> str:
        k = kind(request)
        self.counts[k] += 1
        if k == "system_prompt":
            return json.dumps({"system_prompt": PROMPT})
        if k == "rubric":
            return json.dumps({"criteria": CRITERIA})
        wanted = int(message_text(request, "user").split("Write ")[1].split(" ")[0])
        self.made += wanted
        numbers = range(self.made - wanted, self.made)
        if k == "inputs":
            return json.dumps({"inputs": [email(i) for i in numbers]})
        return json.dumps(
            {
                "scenarios": [
                    {"task": f"Find order {i} and report its status.", "difficulty": 2, "tools": ["lookup_order"]}
                    for i in numbers
                ]
            }
        )


async def test_system_prompt_broken_json_is_shown_back_and_retried():
    broken = 'Sure! {"system_prompt": "You summarise'
    with FakeLLM([broken, "```json\n" + json.dumps({"system_prompt": f"  {PROMPT}\n"}) + "\n```"]) as llm:
        prompt = await generate_system_prompt(TASK, "openai/gen", api_base=llm.base_url)
    assert prompt == PROMPT
    first, retry = llm.requests
    assert TASK in message_text(first, "user") and '"system_prompt"' in message_text(first, "system")
    assert retry["messages"][-2] == {"role": "assistant", "content": broken}
    assert "not usable: no complete JSON" in retry["messages"][-1]["content"]


async def test_a_generator_that_never_gets_it_right_is_a_user_error_naming_the_problem():
    with FakeLLM(['{"system_prompt": "too short"}'] * 3) as llm:
        with pytest.raises(
            UserError,
            match=r"no usable system prompt in 3 tries \(last problem: system_prompt: String should have at least 20 "
            r"characters\); use a stronger model \(--gen-model openai/gpt-4.1",
        ):
            await generate_system_prompt(TASK, "openai/gen", api_base=llm.base_url)
    assert len(llm.requests) == 3


async def test_tools_go_into_the_system_prompt_request_and_inputs_become_tasks_using_them():
    gen = Generator()
    with FakeLLM(handler=gen) as llm:
        await generate_system_prompt(TASK, "openai/gen", api_base=llm.base_url, tools=TOOLS)
        inputs = await generate_inputs(TASK, 3, "openai/gen", api_base=llm.base_url, tools=TOOLS)
    assert '"name": "lookup_order"' in message_text(llm.requests[0], "user")
    assert gen.counts == {"system_prompt": 1, "tasks": 1}
    assert f"Focus on: {TASK}" in message_text(llm.requests[1], "system")
    assert [s.tools for s in inputs] == [["lookup_order"]] * 3


async def test_inputs_are_deduplicated_spread_over_difficulties_and_not_repeated():
    long_email = {"text": "Dear team, " + "I have been waiting for weeks. " * 12 + "Order 77.", "difficulty": 3}
    first = "Here you go:\n" + json.dumps(
        {
            "inputs": [
                email(1, 1),
                {
                    "text": "  hello, ORDER 1 arrived damaged. can i get a refund? thanks, sam ",
                    "difficulty": 2,
                },  # duplicate once normalised
                {"text": "Where is my parcel?", "difficulty": 9},  # invalid: dropped
                {"text": "  \n ", "difficulty": 1},  # blank: dropped
                long_email,
            ]
        }
    )
    replies = [first, json.dumps({"inputs": [email(1, 4)]}), json.dumps({"inputs": [email(2, 4), email(3, 5)]})]
    with FakeLLM(replies) as llm:
        inputs = await generate_inputs(TASK, 3, "openai/gen", api_base=llm.base_url, batch_size=3, seed=2)
    assert [s.task for s in inputs] == [email(1)["text"], long_email["text"], email(2)["text"]]
    assert [s.difficulty for s in inputs] == [1, 3, 4]
    assert len({s.id for s in inputs}) == 3 and inputs[0].metadata["generator_model"] == "openai/gen"
    asked = [message_text(r, "user") for r in llm.requests]
    assert len(set(json.loads(asked[0].split("in order: ")[1].split(".")[0]))) == 3  # three different difficulties
    assert asked[1].startswith("Write 1 new inputs") and json.dumps(email(1)["text"]) in asked[1]
    assert (
        "I have been waiting for weeks. I have" in asked[1] and long_email["text"] not in asked[1]
    )  # long ones are cut


async def test_too_few_distinct_inputs_is_a_user_error():
    same = json.dumps({"inputs": [email(1), email(2)]})
    with FakeLLM([same] * 5) as llm:
        with pytest.raises(
            UserError,
            match=r"only 2 distinct usable inputs of the 6 asked for \(last problem: the reply only repeated earlier "
            r"inputs\)",
        ):
            await generate_inputs(TASK, 6, "openai/gen", api_base=llm.base_url)
    assert len(llm.requests) == 5  # one useful call, then four in a row that add nothing


async def test_rubric_lists_the_task_and_distinct_criteria_after_a_retry():
    with FakeLLM(
        [
            json.dumps({"criteria": ["- Be good.", "Be good."]}),
            json.dumps({"criteria": [f"- {c}" for c in CRITERIA] + [CRITERIA[0]]}),
        ]
    ) as llm:
        rubric = await generate_rubric(TASK, "openai/gen", api_base=llm.base_url)
    assert rubric == f"The assistant's task: {TASK}\n\n" + "".join(f"- {c}\n" for c in CRITERIA)
    assert "needs at least 2 distinct criteria, got 1" in llm.requests[1]["messages"][-1]["content"]


def config(llm: FakeLLM, **settings) -> RunConfig:
    return RunConfig(
        name="summarizer", scenarios={"n": 4}, judge={"model": "openai/judge", "api_base": llm.base_url}, **settings
    )


async def test_plan_saves_what_it_generated_and_reuses_edited_files(home):
    gen, said = Generator(), []
    with FakeLLM(handler=gen) as llm:
        cfg = await plan(TASK, config(llm, steps=3), gen_model="openai/gen", say=said.append)
        d = autorl_dir("default", "summarizer")
        assert (d / "task.txt").read_text() == TASK + "\n"
        assert (d / "system_prompt.txt").read_text() == PROMPT + "\n"
        assert [s.task for s in load_jsonl(d / "inputs.jsonl", Scenario)] == [email(i)["text"] for i in range(4)]
        assert (d / "rubric.md").read_text().startswith(f"The assistant's task: {TASK}\n\n- ")
        assert (cfg.scenarios.file, cfg.judge.rubric, cfg.rollout.system_prompt) == (
            str(d / "inputs.jsonl"),
            str(d / "rubric.md"),
            PROMPT,
        )
        assert (cfg.judge.mode, cfg.judge.model, cfg.steps, cfg.name) == ("ruler", "openai/judge", 3, "summarizer")
        assert gen.counts == {"system_prompt": 1, "inputs": 1, "rubric": 1}

        (d / "system_prompt.txt").write_text("Summarise the email in one line.\n")
        (d / "rubric.md").unlink()
        said.clear()
        cfg = await plan(TASK, config(llm), gen_model="openai/gen", say=said.append)
        assert cfg.rollout.system_prompt == "Summarise the email in one line."
        assert gen.counts == {"system_prompt": 1, "inputs": 1, "rubric": 2}  # only the deleted file was made again
        assert any(line.startswith(f"using the saved {d / 'system_prompt.txt'}") for line in said)

        cfg = await plan(TASK, config(llm), gen_model="openai/gen", reuse=False, say=said.append)
        assert cfg.rollout.system_prompt == PROMPT and gen.counts == {"system_prompt": 2, "inputs": 2, "rubric": 3}

        with pytest.raises(UserError, match="holds another task .*pass --regenerate"):
            await plan("Translate emails to French", config(llm), gen_model="openai/gen", say=said.append)
        (d / "rubric.md").write_text("\n")
        with pytest.raises(UserError, match="rubric.md is empty"):
            await plan(TASK, config(llm), gen_model="openai/gen", say=said.append)


async def test_plan_with_a_server_grounds_its_inputs_in_the_server(home):
    gen = Generator()
    with FakeLLM(handler=gen) as llm:
        cfg = await plan(
            TASK,
            config(llm, server={"target": "python -m mcprl.servers.calculator"}, explore={"calls": 12}),
            gen_model="openai/gen",
            say=lambda _: None,
        )
    assert gen.counts == {"system_prompt": 1, "rubric": 1}  # the inputs came from the server, not the generator
    inputs = load_jsonl(cfg.scenarios.file, Scenario)
    assert len(inputs) >= 2 and all(s.check["kind"] == "holds" and s.reference for s in inputs)
    assert cfg.judge.mode == "both" and (autorl_dir("default", cfg.name) / "exploration.jsonl").exists()


@pytest.mark.parametrize("argv", [["autorl"], ["mcprl", "autorl"]])
def test_the_cli_reports_a_generator_without_valid_output_in_one_line(argv, home, monkeypatch, capsys):
    from mcprl.autorl.cli import main as autorl_main
    from mcprl.cli.main import main as mcprl_main

    with FakeLLM(handler=lambda request: "I am sorry, I cannot help with that.") as llm:
        monkeypatch.setattr(
            sys, "argv", [*argv, TASK, "--gen-model", "openai/gen", "--api-base", llm.base_url, "--name", "s"]
        )
        with pytest.raises(SystemExit) as exit_info:
            (autorl_main if argv == ["autorl"] else mcprl_main)()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: openai/gen gave no usable system prompt in 3 tries (last problem: no complete JSON")
    assert last.endswith(f"or write {autorl_dir('default', 's') / 'system_prompt.txt'} yourself and rerun")


async def test_without_n_plan_generates_only_what_the_steps_need(home):
    gen = Generator()
    with FakeLLM(handler=gen) as llm:
        cfg = await plan(
            TASK,
            RunConfig(name="short", steps=1, judge={"api_base": llm.base_url}),
            gen_model="openai/gen",
            say=lambda _: None,
        )
        assert len(load_jsonl(cfg.scenarios.file, Scenario)) == 8  # at least 8, though 1 step of 4 groups needs fewer
        cfg = await plan(
            TASK,
            RunConfig(name="long", steps=5, judge={"api_base": llm.base_url}),
            gen_model="openai/gen",
            say=lambda _: None,
        )
        assert len(load_jsonl(cfg.scenarios.file, Scenario)) == 27  # 5 steps x 4 groups, plus a quarter held out
        cfg = await plan(
            TASK,
            RunConfig(name="max", steps=50, judge={"api_base": llm.base_url}),
            gen_model="openai/gen",
            say=lambda _: None,
        )
        assert len(load_jsonl(cfg.scenarios.file, Scenario)) == 48
