"""Structured outputs (`response_format`) on the tiny random model, over real HTTP.

A random model writes near-uniform noise, so whatever JSON comes out is the grammar's doing. Its
strings never close by chance (a closing quote is a few tokens in 49k), so these schemas bound
their strings, numbers and arrays; tests/serving/test_structured_outputs_real.py runs real MCP schemas on
the real model."""

import json

import anyio
import httpx
import jsonschema
import pytest

from mcprl.serving import engine as engine_module
from mcprl.serving.engine import Engine
from mcprl.serving.local import LocalEndpoint

MSGS = [{"role": "user", "content": "Answer in JSON."}]

SCHEMAS = {
    "enum_bool_bounded_int": {
        "type": "object",
        "properties": {
            "state": {"enum": ["open", "closed", "all"]},
            "draft": {"type": "boolean"},
            "page": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        "required": ["state", "draft", "page"],
        "additionalProperties": False,
    },
    "nested_array_of_objects": {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "line": {"type": "integer", "minimum": 0, "maximum": 999},
                        "op": {"enum": ["add", "del"]},
                    },
                    "required": ["line", "op"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["edits"],
        "additionalProperties": False,
    },
    "optional_fields_and_pattern": {
        "type": "object",
        "properties": {
            "sku": {"type": "string", "pattern": "^SKU-[0-9]{4}$"},
            "restock": {"type": "boolean"},
            "note": {"type": "string", "maxLength": 4},
        },
        "required": ["sku"],
        "additionalProperties": False,
    },
    "defs_ref_anyof_null": {
        "$defs": {
            "pt": {
                "type": "object",
                "properties": {
                    "x": {"type": "integer", "minimum": -9, "maximum": 9},
                    "y": {"type": "integer", "minimum": -9, "maximum": 9},
                },
                "required": ["x", "y"],
                "additionalProperties": False,
            }
        },
        "type": "object",
        "properties": {"from": {"$ref": "#/$defs/pt"}, "to": {"anyOf": [{"$ref": "#/$defs/pt"}, {"type": "null"}]}},
        "required": ["from", "to"],
        "additionalProperties": False,
    },
}


def json_schema_format(schema, name="reply", **kw):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, **kw}}


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    """float64, so that a row's samples do not depend on the batch around it (see test_serving); a
    batch window long enough for two concurrent requests to always share a batch."""
    import torch

    from mcprl.model import weights

    model = weights.load_model(str(tiny_model_dir), dtype="float32").to(torch.float64)
    return Engine(str(tiny_model_dir), model=model, served_name="tiny", batch_window_s=0.3)


@pytest.fixture(scope="module")
def server(engine):
    s = LocalEndpoint(engine)
    yield s
    s.close()


def post(server, body):
    return httpx.post(
        f"{server.base_url}/chat/completions", json={"model": "tiny", "messages": MSGS, **body}, timeout=120
    )


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_output_validates_against_the_schema(server, name):
    schema = SCHEMAS[name]
    r = post(
        server,
        {
            "response_format": json_schema_format(schema, strict=True),
            "n": 4,
            "max_tokens": 120,
            "seed": 7,
            "logprobs": True,
            "return_token_ids": True,
        },
    )
    assert r.status_code == 200, r.text
    for c in r.json()["choices"]:
        assert c["finish_reason"] == "stop", c  # eos came where the grammar accepts
        jsonschema.validate(json.loads(c["message"]["content"]), schema)
        lps = [x["logprob"] for x in c["logprobs"]["content"]]
        assert len(lps) == len(c["token_ids"]) and all(-1e9 < lp <= 0 for lp in lps)  # no masked token was drawn


def test_without_the_mask_the_same_request_is_not_json(server):
    """The constraint is what makes the JSON: unconstrained, the same seeds give noise."""
    schema = SCHEMAS["enum_bool_bounded_int"]
    free = post(server, {"n": 4, "max_tokens": 40, "seed": 7}).json()["choices"]
    for c in free:
        with pytest.raises((json.JSONDecodeError, jsonschema.ValidationError)):
            jsonschema.validate(json.loads(c["message"]["content"]), schema)


def test_mixed_batch_of_constrained_and_free_rows(server, engine):
    """Constrained and unconstrained requests share one sampling batch; the mask touches only its rows."""
    schema = SCHEMAS["nested_array_of_objects"]
    free_body = {"max_tokens": 12, "seed": 3, "temperature": 0.8, "return_token_ids": True}
    alone = post(server, free_body).json()["choices"][0]["token_ids"]
    before = engine.metrics["batches"]
    results: dict[str, dict] = {}

    async def burst():
        async with httpx.AsyncClient(timeout=120) as c:

            async def one(key, body):
                r = await c.post(
                    f"{server.base_url}/chat/completions", json={"model": "tiny", "messages": MSGS, **body}
                )
                assert r.status_code == 200, r.text
                results[key] = r.json()

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "free", free_body)
                tg.start_soon(
                    one, "json", {"response_format": json_schema_format(schema), "n": 3, "max_tokens": 120, "seed": 5}
                )

    anyio.run(burst)
    assert engine.metrics["batches"] - before == 1
    assert results["free"]["choices"][0]["token_ids"] == alone
    for c in results["json"]["choices"]:
        jsonschema.validate(json.loads(c["message"]["content"]), schema)


def test_tools_and_response_format_give_json_content_and_no_tool_parsing(server):
    tools = [
        {
            "type": "function",
            "function": {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}},
        }
    ]
    schema = SCHEMAS["enum_bool_bounded_int"]
    r = post(server, {"tools": tools, "response_format": json_schema_format(schema), "max_tokens": 120, "seed": 1})
    c = r.json()["choices"][0]
    assert "tool_calls" not in c["message"] and c["finish_reason"] == "stop"
    jsonschema.validate(json.loads(c["message"]["content"]), schema)


def test_budget_exhausted_before_the_json_closes_is_length(server):
    r = post(
        server, {"response_format": json_schema_format(SCHEMAS["nested_array_of_objects"]), "max_tokens": 3, "seed": 2}
    )
    c = r.json()["choices"][0]
    assert c["finish_reason"] == "length" and c["message"]["content"].startswith("{")


def test_type_text_is_unconstrained(server):
    a = post(server, {"response_format": {"type": "text"}, "max_tokens": 8, "seed": 4, "return_token_ids": True}).json()
    b = post(server, {"max_tokens": 8, "seed": 4, "return_token_ids": True}).json()
    assert a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"]


@pytest.mark.parametrize(
    "response_format, reason",
    [
        (
            json_schema_format({"type": "object", "properties": {"a": {"type": "strin"}}}),
            "not a valid JSON Schema at properties/a/type",
        ),
        (json_schema_format({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}), "/$defs/missing"),
        (json_schema_format({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}, strict=True), "not"),
        ({"type": "json_schema"}, "needs json_schema"),
        ({"type": "json_schema", "json_schema": {"name": "x"}}, "response_format.json_schema.schema"),
        ({"type": "yaml"}, "response_format.type"),
    ],
)
def test_unusable_response_format_is_400_with_the_reason(server, response_format, reason):
    r = post(server, {"response_format": response_format, "max_tokens": 4})
    assert r.status_code == 400, r.text
    assert reason in r.json()["error"]["message"]


def test_unimplemented_keyword_without_strict_is_ignored(server):
    """The documented degradation: outside strict mode, keywords llguidance lacks (`not`) are dropped."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "boolean", "not": {"const": True}}},
        "required": ["a"],
        "additionalProperties": False,
    }
    r = post(server, {"response_format": json_schema_format(schema), "max_tokens": 20, "seed": 1})
    assert r.status_code == 200, r.text
    assert isinstance(json.loads(r.json()["choices"][0]["message"]["content"])["a"], bool)


def test_compile_time_limit_is_400_not_a_hang(server, monkeypatch):
    monkeypatch.setattr(engine_module, "COMPILE_TIMEOUT_S", 0.0)
    schema = {"type": "object", "properties": {"never_compiled_before": {"type": "integer"}}}
    r = post(server, {"response_format": json_schema_format(schema), "max_tokens": 4})
    assert r.status_code == 400 and "took over" in r.json()["error"]["message"]


def test_listed_properties_close_the_object_unless_said_otherwise():
    from mcprl.serving.structured import closed_objects

    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "string"}}},
            "properties": {"type": "object", "properties": {}, "additionalProperties": True},
        },
        "$defs": {"d": {"properties": {"x": {}}}},
        "anyOf": [{"properties": {"y": {}}}, {"type": "string"}],
    }
    closed = closed_objects(schema)
    assert closed["additionalProperties"] is False and "additionalProperties" not in schema
    assert closed["properties"]["a"]["additionalProperties"] is False
    assert closed["properties"]["properties"]["additionalProperties"] is True  # a property named "properties"
    assert closed["$defs"]["d"]["additionalProperties"] is False and closed["anyOf"][0]["additionalProperties"] is False
    assert closed["anyOf"][1] == {"type": "string"}


def test_constrained_rows_record_the_policys_own_logprobs(engine):
    """Under a grammar a row draws only allowed tokens, but records each one's logprob under the
    policy's own distribution at the row's settings, which is what the trainer scores (its
    `token_logprobs`, the drawn token always in the top-p set): the GRPO ratio starts at 1 on
    the tokens the grammar forced as on the rest."""
    import torch

    from mcprl.serving.protocol import ResponseFormat
    from mcprl.serving.sampler import SampleRequest, sample
    from mcprl.train.logprobs import token_logprobs

    schema = SCHEMAS["enum_bool_bounded_int"]
    start = engine.grammars.compile(ResponseFormat.model_validate(json_schema_format(schema)))
    prompt = engine.tokenizer.apply_chat_template(MSGS, add_generation_prompt=True, tokenize=True, return_dict=False)
    settings = [(1.0, 1.0), (0.7, 1.0), (0.7, 0.5)]
    rows = [SampleRequest(prompt, 60, t, p, seed=11, constraint=engine.grammars.fork(start)) for t, p in settings]
    out = sample(engine.model, rows, pad_id=engine.pad_id, eos_ids=engine.eos_ids)
    for (t, p), s in zip(settings, out):
        jsonschema.validate(json.loads(engine.tokenizer.decode(s.token_ids, skip_special_tokens=True)), schema)
        ids = torch.tensor([prompt + s.token_ids])
        n = len(s.token_ids)
        with torch.no_grad():
            lp, _ = token_logprobs(
                engine.model,
                ids,
                torch.ones_like(ids),
                chunk=7,
                temperature=torch.full(ids.shape, t),
                top_p=torch.full(ids.shape, p),
            )
        assert lp[0, -n:].tolist() == pytest.approx(s.logprobs, abs=1e-4), (t, p)
        # a random model puts next to no mass on the JSON the grammar forces: these are not renormalised
        assert min(s.logprobs) < -5


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_item",
            "parameters": {
                "type": "object",
                "properties": {"sku": {"type": "string", "pattern": "^SKU-[0-9]{4}$"}},
                "required": ["sku"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_items",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
        },
    },
]


def tokens(engine, text):
    return engine.tokenizer(text, add_special_tokens=False)["input_ids"]


def test_tool_call_format_leaves_text_free_and_holds_calls_to_the_offered_tools(engine):
    """`tool_call_format`'s structural tag: any text, but a `<tool_call>` must go on as a call of an
    offered tool, written as the template writes it, with arguments valid against that tool's
    schema (no undeclared key); after the call, free text again, and the end of the turn."""
    from mcprl.model.chat_format import parse_tool_calls, tool_call_format
    from mcprl.serving.protocol import ResponseFormat

    start = engine.grammars.compile(ResponseFormat.model_validate(tool_call_format(TOOLS)))

    def accepts(text: str) -> bool:
        c = engine.grammars.fork(start)
        return all(c.matcher.consume_token(t) for t in tokens(engine, text)) and not c.matcher.is_error()

    good = 'Let me look it up.\n<tool_call>\n{"name": "get_item", "arguments": {"sku": "SKU-1234"}}\n</tool_call>'
    assert accepts(good) and accepts(good + "\nand then some text")
    assert parse_tool_calls(good).tool_calls[0]["function"] == {"name": "get_item", "arguments": '{"sku": "SKU-1234"}'}
    assert accepts("Plain prose, with <tool_response> and <tool tags, is free text.")
    assert accepts('<tool_call>\n{"name": "search_items", "arguments": {"query": "saw", "limit": 3}}\n</tool_call>')
    assert not accepts('<tool_call>\n{"name": "delete_everything", "arguments": {}}')  # not an offered tool
    assert not accepts('<tool_call>\n{"name": "get_item", "arguments": {"query": "saw"}}')  # another tool's argument
    assert not accepts('<tool_call>\n{"name": "get_item", "arguments": {"sku": "1234"}}')  # the schema's pattern
    c = engine.grammars.fork(start)
    for t in tokens(engine, good):
        c.advance(t)
    c.advance(engine.tokenizer.eos_token_id)
    assert c.matcher.is_accepting() and not c.matcher.is_error()


def test_structural_tag_errors_are_400s(server):
    bad_schema = {
        "type": "structural_tag",
        "triggers": ["<tool_call>"],
        "structures": [{"begin": "<tool_call>\n", "schema": {"type": "objekt"}, "end": "</tool_call>"}],
    }
    r = post(server, {"response_format": bad_schema, "max_tokens": 4})
    assert r.status_code == 400 and "structures[0].schema is not a valid JSON Schema" in r.json()["error"]["message"]
    no_trigger = {
        "type": "structural_tag",
        "triggers": ["<call>"],
        "structures": [{"begin": "<tool_call>\n", "schema": {"type": "object"}, "end": ""}],
    }
    r = post(server, {"response_format": no_trigger, "max_tokens": 4})
    assert r.status_code == 400 and "starts with none of the triggers" in r.json()["error"]["message"]
