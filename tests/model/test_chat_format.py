import json

import pytest

from mcprl.model.chat_format import parse_tool_calls, tool_template

pytestmark = pytest.mark.unit

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    }
]


def test_parses_one_call_and_keeps_content():
    r = parse_tool_calls('Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>')
    assert r.error is None
    assert r.content == "Let me add."
    (call,) = r.tool_calls
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "add"
    assert json.loads(call["function"]["arguments"]) == {"a": 1, "b": 2}


def test_parses_several_calls_unclosed_last_and_string_arguments():
    text = '<tool_call>{"name": "a", "arguments": "{\\"x\\": 1}"}</tool_call><tool_call>{"name": "b", "parameters": {}}'
    r = parse_tool_calls(text)
    assert [c["function"]["name"] for c in r.tool_calls] == ["a", "b"]
    assert json.loads(r.tool_calls[0]["function"]["arguments"]) == {"x": 1}


def test_trailing_prose_after_json_is_tolerated():
    r = parse_tool_calls('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\nand then more')
    assert r.tool_calls and r.error is None


def test_broken_json_stays_content_with_error():
    text = '<tool_call>\n{"name": "add", "arguments": {"a": 1,\n</tool_call>'
    r = parse_tool_calls(text)
    assert r.tool_calls == [] and r.content == text
    assert "not valid JSON" in r.error


def test_bad_shapes_are_errors():
    assert 'string "name"' in parse_tool_calls("<tool_call>[1, 2]</tool_call>").error
    assert "JSON object" in parse_tool_calls('<tool_call>{"name": "x", "arguments": [1]}</tool_call>').error
    assert parse_tool_calls("no calls here").tool_calls == []


def test_template_renders_tools_calls_and_results(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert tok.chat_template == tool_template()
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "5"},
        {"role": "tool", "tool_call_id": "d", "content": "6"},
    ]
    text = tok.apply_chat_template(msgs, tools=TOOLS, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools")
    assert '"name": "add"' in text and '{"name": "add", "arguments": {"a": 1, "b": 1}}' in text  # the example call
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>'
        in text
    )
    # consecutive tool results share one user turn
    assert (
        "<|im_start|>user\n<tool_response>\n5\n</tool_response>\n<tool_response>\n6\n</tool_response><|im_end|>" in text
    )
    assert text.endswith("<|im_start|>assistant\n")
    # what the template renders for a call, the parser reads back
    rendered_call = text.split("<|im_start|>assistant\n")[1].split("<|im_end|>")[0]
    assert json.loads(parse_tool_calls(rendered_call).tool_calls[0]["function"]["arguments"]) == {"a": 2, "b": 3}


def test_a_demonstrated_conversation_gets_no_placeholder_call_on_any_turn(tiny_model_dir):
    """With a real call shown before the task, the system turn drops the first tool's placeholder
    call, and keeps the same text on every turn of the episode (the agent's own calls, after the
    task, change nothing)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    call = {"id": "c", "type": "function", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}}
    demo = [{"role": "user", "content": "3+4?"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    turns = [
        [{"role": "user", "content": "2+3?"}],
        [
            {"role": "user", "content": "2+3?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c", "content": "5"},
        ],
    ]

    def system(msgs):
        text = tok.apply_chat_template(msgs, tools=TOOLS, tokenize=False, add_generation_prompt=True)
        return text.split("<|im_end|>")[0]

    placeholder = '{"name": "add", "arguments": {"a": 1, "b": 1}}'
    assert all(placeholder in system(t) for t in turns)  # no demonstration: the placeholder call, every turn
    shown = [system(demo + t) for t in turns]
    assert shown[0] == shown[1] and placeholder not in shown[0]
    assert "inside <tool_call></tool_call> tags.\nThe tool results come back" in shown[0]
