"""Pure parts of the tool layer: specs, filters, conversion, result text, hashes, redaction, checks."""

from __future__ import annotations

import base64
import sys

import pytest

from mcprl.errors import UserError
from mcprl.tools import ServerSpec, hash_change_warning, redact, result_text, secret_values, to_openai, tools_hash
from mcprl.tools.validate import check_tools

pytestmark = pytest.mark.unit

# ---- ServerSpec.parse ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "transport", "expected"),
    [
        ("http://localhost:8000/mcp", "auto", "http"),
        ("https://example.com/mcp/", "auto", "http"),
        ("http://localhost:8000/sse", "auto", "sse"),
        ("http://localhost:8000/sse/", "auto", "sse"),
        ("http://localhost:8000/mcp", "sse", "sse"),
        ("npx -y @modelcontextprotocol/server-memory", "auto", "stdio"),
        ("python -m mcprl.servers.inventory", "stdio", "stdio"),
    ],
)
def test_transport_is_inferred_from_the_target(target, transport, expected):
    assert ServerSpec.parse(target, transport=transport).transport == expected


def test_stdio_commands_are_shell_split_and_python_means_this_interpreter():
    spec = ServerSpec.parse(
        "python -m mcprl.servers.inventory --seed '4'", env=["TOKEN=abc=def", "MODE = fast"], cwd="/tmp"
    )
    assert spec.command == [sys.executable, "-m", "mcprl.servers.inventory", "--seed", "4"]
    assert spec.env == {"TOKEN": "abc=def", "MODE": "fast"} and spec.cwd == "/tmp" and spec.url is None
    npx = ServerSpec.parse('npx -y "@modelcontextprotocol/server-memory"')
    assert npx.command == ["npx", "-y", "@modelcontextprotocol/server-memory"]


def test_urls_keep_headers_and_options():
    spec = ServerSpec.parse(
        "https://example.com/mcp",
        headers=["Authorization: Bearer abc:def", "X-Trace: 1"],
        call_timeout=5,
        connect_timeout=2,
        allow=["get_*"],
        deny=["get_secret"],
        per_rollout=True,
        max_result_chars=99,
    )
    assert spec.url == "https://example.com/mcp" and spec.command == []
    assert spec.headers == {"Authorization": "Bearer abc:def", "X-Trace": "1"}
    assert (spec.call_timeout, spec.connect_timeout, spec.per_rollout, spec.max_result_chars) == (5, 2, True, 99)
    assert ServerSpec.parse("http://h/mcp", headers={"A": "b"}).headers == {"A": "b"}


@pytest.mark.parametrize(
    ("target", "options", "message"),
    [
        ("", {}, "the server spec is empty"),
        ("python -c 'unclosed", {}, "check the quoting"),
        ("python -m x", {"transport": "http"}, "needs a URL"),
        ("http://h/mcp", {"transport": "stdio"}, "cannot be run as a stdio command"),
        ("http://h/mcp", {"transport": "websocket"}, "unknown transport"),
        ("http://h/mcp", {"env": ["A=1"]}, "--env and --cwd apply to stdio"),
        ("python -m x", {"headers": ["A: 1"]}, "headers apply to HTTP/SSE"),
        ("http://h/mcp", {"headers": ["no colon"]}, "--header 'no colon': expected"),
        ("python -m x", {"env": ["NOEQUALS"]}, "--env 'NOEQUALS': expected KEY=value"),
        ("python -m x", {"call_timeout": 0}, "invalid server option call_timeout"),
    ],
)
def test_bad_specs_are_one_line_user_errors(target, options, message):
    with pytest.raises(UserError, match=message) as e:
        ServerSpec.parse(target, **options)
    assert "\n" not in str(e.value)


def test_allow_and_deny_match_names_and_globs_and_deny_wins():
    spec = ServerSpec.parse("x", allow=["get_*", "search"], deny=["get_secret*"])
    assert [n for n in ("get_item", "get_secret_key", "search", "search_all", "delete") if spec.allows(n)] == [
        "get_item",
        "search",
    ]
    assert ServerSpec.parse("x", deny=["*"]).allows("anything") is False
    assert ServerSpec.parse("x").allows("anything") is True


# ---- conversion to OpenAI schemas and hashes --------------------------------------------------------

ADD = {
    "name": "add",
    "description": "Add two numbers.\nReturns a + b.",
    "inputSchema": {
        "title": "addArguments",
        "type": "object",
        "properties": {
            "a": {"title": "A", "type": "number", "description": "first"},
            "title": {"title": "Title", "type": "string"},  # a parameter named "title" must survive
            "items": {"type": "array", "items": {"title": "Item", "anyOf": [{"title": "X", "type": "integer"}]}},
        },
        "required": ["a"],
    },
}


def test_mcp_tools_convert_to_openai_function_schemas_without_titles():
    fn = to_openai(ADD)
    assert fn["type"] == "function"
    assert fn["function"]["name"] == "add" and fn["function"]["description"] == "Add two numbers.\nReturns a + b."
    params = fn["function"]["parameters"]
    assert params == {
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "first"},
            "title": {"type": "string"},
            "items": {"type": "array", "items": {"anyOf": [{"type": "integer"}]}},
        },
        "required": ["a"],
    }
    assert ADD["inputSchema"]["title"] == "addArguments"  # the input is not modified


def test_tools_without_schema_get_an_empty_object_schema():
    fn = to_openai({"name": "ping", "title": "Ping the server"})
    assert fn["function"]["parameters"] == {"type": "object", "properties": {}}
    assert fn["function"]["description"] == "Ping the server"


def test_tool_hash_is_stable_across_order_and_changes_with_content():
    a, b = to_openai(ADD), to_openai({"name": "ping", "description": "Ping."})
    assert tools_hash([a, b]) == tools_hash([b, a])
    changed = to_openai({**ADD, "description": "Add."})
    assert tools_hash([changed, b]) != tools_hash([a, b])


def test_hash_change_warning_only_when_the_hash_changed():
    assert hash_change_warning(None, "abc", "srv") is None
    assert hash_change_warning("abc", "abc", "srv") is None
    warning = hash_change_warning("abc", "def", "python -m mcprl.servers.inventory")
    assert warning and "python -m mcprl.servers.inventory" in warning and "abc -> def" in warning


# ---- tool results as text -------------------------------------------------------------------------


def test_text_blocks_are_joined_and_binaries_become_placeholders():
    png = base64.b64encode(b"\x89PNG" + b"\0" * 12284).decode()  # 12 KB
    result = {
        "content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "audio", "data": base64.b64encode(b"abc").decode(), "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "embedded text"}},
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///a.pdf",
                    "blob": base64.b64encode(b"x" * 3000).decode(),
                    "mimeType": "application/pdf",
                },
            },
            {"type": "resource_link", "uri": "file:///big.csv", "name": "big"},
        ]
    }
    assert result_text(result, 4000).split("\n") == [
        "first",
        "[image/png, 12 KB]",
        "[audio/wav, 3 B]",
        "embedded text",
        "[application/pdf, 3 KB]",
        "file:///big.csv",
    ]


def test_structured_content_is_json_when_there_is_no_other_content():
    assert result_text({"content": [], "structuredContent": {"total": 3, "items": ["a"]}}, 100) == (
        '{"total": 3, "items": ["a"]}'
    )
    assert result_text({"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}}, 100) == "3"
    assert result_text({"content": []}, 100) == ""


def test_long_results_are_truncated_with_a_marker_saying_how_much_was_cut():
    text = result_text({"content": [{"type": "text", "text": "a" * 50}, {"type": "text", "text": "b" * 30}]}, 40)
    assert text == "a" * 40 + "\n[... truncated: 41 more characters]"  # 10 a's + newline + 30 b's
    assert result_text({"content": [{"type": "text", "text": "abc"}]}, 3) == "abc"


# ---- redaction -----------------------------------------------------------------------------------


def test_secret_values_come_from_secret_looking_headers_env_and_process_env():
    spec = ServerSpec.parse(
        "http://h/mcp",
        headers=[
            "Authorization: Bearer tok-123456",
            "X-API-Key: k-abcdef",
            "Cookie: sid=zzzzzz",
            "Accept: text/plain-long",
        ],
    )
    environ = {
        "OPENAI_API_KEY": "sk-live-999",
        "GITHUB_TOKEN": "ghp_1234567",
        "DB_PASSWORD": "hunter22",
        "MY_SECRET_THING": "s3cr3t-val",
        "HOME": "/root/home",
        "SHORT_KEY": "abc",
    }
    found = secret_values(spec, environ=environ)
    assert set(found) == {
        "Bearer tok-123456",
        "tok-123456",
        "k-abcdef",
        "sid=zzzzzz",
        "sk-live-999",
        "ghp_1234567",
        "hunter22",
        "s3cr3t-val",
    }
    assert found == sorted(found, key=lambda v: (-len(v), v))
    stdio = ServerSpec.parse("python -m x", env=["API_TOKEN=tok-from-env", "VERBOSE=yes-please"])
    assert secret_values(stdio, environ={}) == ["tok-from-env"]


def test_redact_replaces_secrets_anywhere_and_leaves_the_input_alone():
    record = {"messages": [{"content": "key is sk-live-999 and Bearer tok-123456"}], "sk-live-999": ("a", 3, None)}
    out = redact(record, ["tok-123456", "Bearer tok-123456", "sk-live-999", ""])
    assert out == {"messages": [{"content": "key is *** and ***"}], "***": ("a", 3, None)}
    assert record["messages"][0]["content"].startswith("key is sk-live-999")
    assert redact("nothing here", []) == "nothing here"
    spec = ServerSpec.parse("http://h/mcp", headers=["Authorization: Bearer tok-123456"])
    assert redact(spec, secret_values(spec, environ={}))["headers"] == {"Authorization": "***"}


# ---- validate's checks ------------------------------------------------------------------------------


def test_check_tools_reports_errors_and_warnings():
    tools = [
        ADD,
        {"name": "bad name!", "description": "x", "inputSchema": {"type": "object"}},
        {"name": "dup", "description": "one", "inputSchema": {"type": "object"}},
        {"name": "dup", "description": "", "inputSchema": {"type": "array"}},
        {"name": "broken", "description": "d", "inputSchema": {"type": "object", "properties": {"a": {"type": 5}}}},
        {
            "name": "vague",
            "description": "d",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q", "ghost"]},
        },
        {"name": "noschema", "description": "d"},
    ]
    found = {(f.level, f.tool, f.message.split(" ")[0] + " " + f.message.split(" ")[1]) for f in check_tools(tools)}
    assert found == {
        ("warning", "add", "parameter 'title'"),
        ("warning", "add", "parameter 'items'"),
        ("error", "bad name!", "the name"),
        ("error", "dup", "the name"),
        ("error", "dup", "no description:"),
        ("error", "dup", "the input"),
        ("error", "broken", "the input"),
        ("warning", "broken", "parameter 'a'"),
        ("warning", "vague", "parameter 'q'"),
        ("warning", "vague", "required parameter"),
        ("error", "noschema", "no input"),
    }
