"""The policy endpoint over real HTTP on a tiny random model."""

import json
import socket

import anyio
import httpx
import pytest

from mcprl.errors import UserError
from mcprl.serving.engine import Engine
from mcprl.serving.local import LocalEndpoint

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add",
            "parameters": {"type": "object", "properties": {"a": {"type": "number"}}},
        },
    }
]
MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    """float64, so that batch-composition tests compare exact arithmetic. The rounding of a matmul
    can depend on the batch around a row (and on which kernels torch picked earlier in the process):
    in bfloat16 by up to ~1e-3 in a logprob; in float32 by ~1e-7 on some CPUs (CI's, not this
    machine's), which is enough to move an inverse-CDF draw to the neighbouring token of a random
    model's near-uniform distribution (no token above 1e-4). The sampler reads logits in float32:
    a float64 model's rounding differences (~1e-16) round away."""
    import torch

    from mcprl.model import weights

    model = weights.load_model(str(tiny_model_dir), dtype="float32").to(torch.float64)
    return Engine(str(tiny_model_dir), model=model, served_name="tiny", max_batch_rows=64)


@pytest.fixture(scope="module")
def server(engine):
    s = LocalEndpoint(engine)
    yield s
    s.close()


def post(server, body, **kw):
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60, **kw)


def test_models_lists_base(server):
    r = httpx.get(f"{server.base_url}/models")
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]] == ["tiny"]


def test_token_ids_and_logprobs(server, engine):
    body = {
        "model": "tiny",
        "messages": MSGS,
        "n": 3,
        "max_tokens": 8,
        "logprobs": True,
        "return_token_ids": True,
        "seed": 1,
    }
    r = post(server, body)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["prompt_token_ids"] == engine.tokenizer.apply_chat_template(
        MSGS, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    assert len(data["choices"]) == 3
    for c in data["choices"]:
        assert 1 <= len(c["token_ids"]) <= 8
        lps = [x["logprob"] for x in c["logprobs"]["content"]]
        assert len(lps) == len(c["token_ids"]) and all(lp <= 0 for lp in lps)
        assert c["finish_reason"] in ("stop", "length")
    assert data["usage"]["completion_tokens"] == sum(len(c["token_ids"]) for c in data["choices"])
    # same seed, same samples
    again = post(server, body).json()
    assert [c["token_ids"] for c in again["choices"]] == [c["token_ids"] for c in data["choices"]]


def test_recorded_logprobs_match_a_fresh_forward_pass(server, engine):
    """What the endpoint records is what the trainer will recompute (the GRPO ratio starts at 1)."""
    import torch

    from mcprl.train.logprobs import token_logprobs

    data = post(
        server,
        {"model": "tiny", "messages": MSGS, "max_tokens": 12, "logprobs": True, "return_token_ids": True, "seed": 3},
    ).json()
    c = data["choices"][0]
    ids = torch.tensor([data["prompt_token_ids"] + c["token_ids"]])
    with torch.no_grad():
        lp, _ = token_logprobs(engine.model, ids, torch.ones_like(ids), chunk=5)
    fresh = lp[0, len(data["prompt_token_ids"]) :].tolist()
    recorded = [x["logprob"] for x in c["logprobs"]["content"]]
    assert fresh == pytest.approx(recorded, abs=1e-4)


def test_max_tokens_and_temperature_zero(server):
    body = {
        "model": "tiny",
        "messages": MSGS,
        "n": 2,
        "max_completion_tokens": 4,
        "temperature": 0,
        "return_token_ids": True,
    }
    data = post(server, body).json()
    a, b = data["choices"]
    assert a["token_ids"] == b["token_ids"]  # greedy
    assert len(a["token_ids"]) <= 4


def test_bad_requests_are_400_with_openai_error(server):
    for body, frag in [
        ({"model": "tiny"}, "messages"),
        ({"model": "tiny", "messages": [{"role": "wizard", "content": "x"}]}, "role"),
        ({"model": "tiny", "messages": MSGS, "tool_choice": "required", "tools": TOOLS}, "tool_choice"),
        ({"model": "tiny", "messages": MSGS, "stream": True}, "stream"),
        ({"model": "tiny", "messages": MSGS, "n": 0}, "n"),
    ]:
        r = post(server, body)
        assert r.status_code == 400, (body, r.text)
        assert frag in r.json()["error"]["message"]
    r = post(server, {"model": "nope", "messages": MSGS})
    assert r.status_code == 404 and "available: tiny" in r.json()["error"]["message"]


def test_tool_calls_become_openai_tool_calls(server, engine):
    """Force the text of a tool call through the response path and check the parse."""
    from mcprl.serving.protocol import ChatRequest
    from mcprl.serving.sampler import Sampled

    tok = engine.tokenizer
    ok = tok('<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call>', add_special_tokens=False)[
        "input_ids"
    ] + [tok.eos_token_id]
    bad = tok('<tool_call>\n{"name": "add", "arguments": {"a": \n</tool_call>', add_special_tokens=False)[
        "input_ids"
    ] + [tok.eos_token_id]
    req = ChatRequest(model="tiny", messages=MSGS, tools=TOOLS, return_token_ids=True)
    body = engine._response(req, [1, 2], [Sampled(ok, [0.0] * len(ok), "stop"), Sampled(bad, [0.0] * len(bad), "stop")])
    good, broken = body["choices"]
    assert good["finish_reason"] == "tool_calls"
    assert good["message"]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1}'}
    assert broken["finish_reason"] == "stop" and "tool_calls" not in broken["message"]
    assert "not valid JSON" in broken["tool_call_error"] and "<tool_call>" in broken["message"]["content"]


def test_follow_up_turn_extends_prompt_token_for_token(server):
    """The exact-token guarantee: the next prompt starts with prompt + sampled completion."""
    first = post(
        server,
        {"model": "tiny", "messages": MSGS, "tools": TOOLS, "max_tokens": 10, "return_token_ids": True, "seed": 5},
    ).json()
    msg = first["choices"][0]["message"]
    # clients re-serialise: drop None fields, re-dump arguments with other spacing
    echoed = {"role": "assistant", "content": msg["content"]}
    if msg.get("tool_calls"):
        echoed["tool_calls"] = [
            {
                **tc,
                "function": {
                    **tc["function"],
                    "arguments": json.dumps(json.loads(tc["function"]["arguments"]), indent=1),
                },
            }
            for tc in msg["tool_calls"]
        ]
    follow = MSGS + [echoed, {"role": "user", "content": "and again"}]
    second = post(
        server, {"model": "tiny", "messages": follow, "tools": TOOLS, "max_tokens": 4, "return_token_ids": True}
    ).json()
    prefix = first["prompt_token_ids"] + first["choices"][0]["token_ids"]
    assert second["prompt_token_ids"][: len(prefix)] == prefix


def test_a_sampled_turn_is_spliced_only_into_its_own_conversation(engine):
    """A reply sampled in one conversation that equals a message of another (a demonstration in
    every prompt: the same tool call) must not bring its sampled tokens into the other."""
    from mcprl.serving.prompts import TurnCache, render_prompt

    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}}],
    }
    sampled = engine.tokenizer("<tool_call>add 3 4</tool_call> and some trailing text", add_special_tokens=False)[
        "input_ids"
    ]
    cache = TurnCache()
    cache.put([{"role": "user", "content": "What is 3 + 4?"}], call, sampled)

    def contains(ids: list[int]) -> bool:
        return any(ids[i : i + len(sampled)] == sampled for i in range(len(ids) - len(sampled) + 1))

    own = [{"role": "user", "content": "What is 3 + 4?"}, call, {"role": "tool", "tool_call_id": "c1", "content": "7"}]
    demo = [
        {"role": "user", "content": "Example: 3 + 4"},
        call,
        {"role": "tool", "tool_call_id": "c1", "content": "7"},
        {"role": "user", "content": "What is 5 + 6?"},
    ]
    assert contains(render_prompt(engine.tokenizer, own, TOOLS, cache))
    assert not contains(render_prompt(engine.tokenizer, demo, TOOLS, cache))
    assert render_prompt(engine.tokenizer, demo, TOOLS, cache) == render_prompt(engine.tokenizer, demo, TOOLS, None)


def test_concurrent_requests_are_batched(server, engine):
    before = dict(engine.metrics)

    async def burst():
        async with httpx.AsyncClient(timeout=60) as c:

            async def one(i):
                r = await c.post(
                    f"{server.base_url}/chat/completions",
                    json={"model": "tiny", "messages": [{"role": "user", "content": f"q{i}"}], "max_tokens": 3},
                )
                assert r.status_code == 200

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(one, i)

    anyio.run(burst)
    assert engine.metrics["requests"] - before["requests"] == 8
    assert engine.metrics["batches"] - before["batches"] < 8


def test_api_key_is_enforced(engine):
    s = LocalEndpoint(engine, api_key="s3cret")
    try:
        assert post(s, {"model": "tiny", "messages": MSGS, "max_tokens": 1}).status_code == 401
        r = post(s, {"model": "tiny", "messages": MSGS, "max_tokens": 1}, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200
    finally:
        s.close()


def test_busy_port_is_a_one_line_error(engine):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(UserError, match=f"port {port} .* busy"):
            LocalEndpoint(engine, port=port)


def test_adapters_are_served_by_name_and_step(engine, tiny_model_dir, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    m = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        LoraConfig(r=2, target_modules="all-linear", init_lora_weights=False),
    )
    m.save_pretrained(tmp_path / "a")
    engine.load_adapter("pol@1", tmp_path / "a")
    engine.load_adapter("pol@2", tmp_path / "a")
    try:
        assert (
            engine.resolve("pol") == "pol@2" and engine.resolve("pol@1") == "pol@1" and engine.resolve("tiny") is None
        )
        s = LocalEndpoint(engine)
        try:
            body = {"messages": MSGS, "max_tokens": 6, "temperature": 0, "return_token_ids": True}
            base = post(s, {**body, "model": "tiny"}).json()["choices"][0]["token_ids"]
            tuned = post(s, {**body, "model": "pol@2"}).json()["choices"][0]["token_ids"]
            assert base != tuned  # a random non-zero LoRA changes greedy output
            assert post(s, {**body, "model": "tiny"}).json()["choices"][0]["token_ids"] == base
        finally:
            s.close()
    finally:
        engine.unload_adapter("pol@1")
        engine.unload_adapter("pol@2")
    with pytest.raises(UserError, match="adapter_config.json"):
        engine.load_adapter("x", tmp_path)


def assert_drawn_alike(got, alone) -> None:
    """`got` (sampled in a batch, or after a cached prefix) drew what `alone` did, up to one tie of the
    inverse CDF (mcprl.serving.sampler._draw): another batch shape rounds the logits otherwise, which
    can move a CDF boundary past the row's uniform draw and pick the token next to it by id (seen
    twice in the suite, 45248 for 45249 and 29248 for 29249, on the tiny random model's near-uniform
    distribution). Up to such a flip every token and logprob agree; after it the contexts differ.
    A cache that kept a wrong column changes the logprobs before any flip, and draws tokens far apart."""
    n = next((k for k, (a, b) in enumerate(zip(got.token_ids, alone.token_ids)) if a != b), len(alone.token_ids))
    assert len(got.token_ids) == len(alone.token_ids)
    assert got.logprobs[:n] == pytest.approx(alone.logprobs[:n], abs=1e-4)
    assert n == len(alone.token_ids) or abs(got.token_ids[n] - alone.token_ids[n]) == 1


def test_shared_prefix_batch_equals_rows_sampled_alone(engine):
    """Sharing the common prefix's KV cache changes nothing: same tokens, same logprobs."""
    from mcprl.serving.sampler import SampleRequest, sample, shared_prefix_len

    common = list(range(100, 140))
    prompts = [common + [7, 8, 9], common + [5], common + [3, 4]]
    assert shared_prefix_len(prompts) == 40 and shared_prefix_len([[1, 2], [1, 2]]) == 1
    rows = [SampleRequest(p, 6, seed=i) for i, p in enumerate(prompts)]
    kw = dict(pad_id=engine.pad_id, eos_ids=set())
    together = sample(engine.model, rows, **kw)
    for row, got in zip(rows, together):
        (alone,) = sample(engine.model, [row], **kw)
        assert_drawn_alike(got, alone)


def test_a_finished_row_leaves_the_batch_and_the_others_sample_as_alone(engine):
    """A row that ends (its budget, here) is no longer computed: each decoding step's forward gets the rows
    still sampling, and those draw what they would alone (greedy, top-p and plain rows, prompts of unequal
    lengths)."""
    from mcprl.serving.sampler import SampleRequest, sample

    rows = [
        SampleRequest([100, 101, 102], 2, seed=0),
        SampleRequest([100, 103], 5, temperature=0.0),
        SampleRequest([104, 105, 106, 107, 108], 3, top_p=0.9, seed=2),
        SampleRequest([109], 7, temperature=0.7, seed=3),
    ]
    kw = dict(pad_id=engine.pad_id, eos_ids=set())
    decoder = engine.model.get_decoder()
    sizes: list[int] = []

    def record(_module, _args, kwargs):  # the sampler's forwards (the LM head's one-time check keeps no cache)
        if kwargs.get("past_key_values") is not None:
            sizes.append(kwargs["input_ids"].shape[0])

    hook = decoder.register_forward_pre_hook(record, with_kwargs=True)
    try:
        together = sample(engine.model, rows, **kw)
    finally:
        hook.remove()
    # the prefill draws token 1, each later forward one more: the 2-token row gone from the 3rd, the 3-token
    # row from the 4th, the 5-token row from the 6th
    assert sizes == [4, 4, 3, 2, 2, 1, 1]
    assert [len(s.token_ids) for s in together] == [2, 5, 3, 7]
    for row, got in zip(rows, together):
        (alone,) = sample(engine.model, [row], **kw)
        assert got.finish_reason == alone.finish_reason == "length"
        assert_drawn_alike(got, alone)


def test_rows_that_join_a_running_batch_sample_what_they_would_alone(engine):
    """Continuous batching: rows added between two tokens (one with a prompt longer than the running
    rows' cache, one shorter) draw what they would alone, and so do the rows already sampling; once
    the wide rows have left, the cache keeps no column only they saw."""
    from mcprl.serving.sampler import Batch, SampleRequest, sample

    first = [SampleRequest([100, 101, 102], 6, seed=0), SampleRequest([100, 103], 4, temperature=0.0)]
    wide = SampleRequest(list(range(104, 113)), 5, top_p=0.9, seed=2)
    narrow = SampleRequest([113], 12, temperature=0.7, seed=3)
    kw = dict(pad_id=engine.pad_id, eos_ids=set())
    batch = Batch(engine.model, **kw)
    got: dict[int, object] = {}
    ids = batch.add(first)
    for _ in range(2):
        got.update(batch.step())
    ids += batch.add([wide])  # 9 prompt tokens beside a cache of 5 columns
    got.update(batch.step())
    ids += batch.add([narrow])
    drawn = 0
    while batch.rows:
        if batch.ids == [ids[-1]]:  # the narrow row alone: its own columns only
            assert batch.width == len(narrow.prompt_ids) + drawn
        got.update(batch.step())
        drawn += 1
    assert drawn == narrow.max_new_tokens
    for row, i in zip([*first, wide, narrow], ids, strict=True):
        (alone,) = sample(engine.model, [row], **kw)
        assert got[i].finish_reason == alone.finish_reason == "length"
        assert_drawn_alike(got[i], alone)


def test_a_prompt_that_starts_with_a_cached_prefix_prefills_only_the_rest_and_samples_what_it_would_alone(engine):
    """A rollout's next turn starts with its last turn's prompt: only what follows it is prefilled, and the
    turn samples what it would with nothing cached. A model's entries go when its weights change, and
    the least recently used past the cache's bytes."""
    from mcprl.serving.sampler import PrefixCache, SampleRequest, sample

    kw = dict(pad_id=engine.pad_id, eos_ids=set())
    prefixes = PrefixCache()
    first = SampleRequest(list(range(100, 140)), 5, seed=0)
    (turn,) = sample(engine.model, [first], prefixes=prefixes, **kw)
    follow = SampleRequest(first.prompt_ids + turn.token_ids + [150, 151, 152], 6, seed=1)
    fed: list[int] = []

    def record(_module, _args, kwargs):
        fed.append(kwargs["input_ids"].shape[1])

    hook = engine.model.get_decoder().register_forward_pre_hook(record, with_kwargs=True)
    try:
        (cached,) = sample(engine.model, [follow], prefixes=prefixes, **kw)
    finally:
        hook.remove()
    (alone,) = sample(engine.model, [follow], **kw)
    assert_drawn_alike(cached, alone)
    # 39 tokens were cached (the first prompt but its last): 8 more, then the prompt's last token
    assert fed[:2] == [len(follow.prompt_ids) - 1 - 39, 1]
    assert prefixes.longest(None, follow.prompt_ids)[0] == len(follow.prompt_ids) - 1
    assert prefixes.longest("pol@1", follow.prompt_ids)[0] == 0  # another model's cache is not this one's
    prefixes.forget(None)
    assert prefixes.longest(None, follow.prompt_ids)[0] == 0
    import torch

    small = PrefixCache(max_bytes=12 * 1024)
    kv = [(torch.zeros(1, 1, 16, 64), torch.zeros(1, 1, 16, 64))]  # 8 KiB an entry (float32)
    one, two = list(range(16)), list(range(1, 17))
    small.put(None, one, kv)
    small.put(None, two, kv)
    assert small.longest(None, one)[0] == 0 and small.longest(None, two)[0] == 16


def test_a_request_sent_while_a_batch_samples_joins_it_and_is_answered_when_its_own_rows_end(engine):
    """A rollout's next turn, sent while other rollouts' turns are sampling, joins their batch at the next
    token and is answered as soon as its own tokens are drawn, before the long request it joined ends."""
    import threading

    from mcprl.serving.protocol import ChatRequest

    solo = Engine(engine.base_name, model=engine.model, tokenizer=engine.tokenizer, served_name="tiny")
    long = ChatRequest(model="tiny", messages=MSGS, max_tokens=200, temperature=0, return_token_ids=True)
    short = ChatRequest(model="tiny", messages=MSGS[1:], max_tokens=3, temperature=0, return_token_ids=True)
    sampling = threading.Event()
    forwards = 0

    def count(_module, _args, kwargs):
        nonlocal forwards
        forwards += 1
        if forwards == 5:
            sampling.set()

    answered: list[str] = []
    bodies: dict[str, dict] = {}

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(solo.run_batcher)

            async def ask(name, req):
                bodies[name] = await solo.chat(req)
                answered.append(name)

            async with anyio.create_task_group() as asks:
                asks.start_soon(ask, "long", long)
                await anyio.to_thread.run_sync(sampling.wait)
                asks.start_soon(ask, "short", short)
            tg.cancel_scope.cancel()

    hook = solo.model.get_decoder().register_forward_pre_hook(count, with_kwargs=True)
    try:
        anyio.run(main)
    finally:
        hook.remove()
    eos = solo.eos_ids
    assert len(bodies["long"]["choices"][0]["token_ids"]) == 200 or bodies["long"]["choices"][0]["token_ids"][-1] in eos
    assert answered == ["short", "long"] and solo.metrics["batches"] == 1 and solo.metrics["rows"] == 2
    alone = Engine(engine.base_name, model=engine.model, tokenizer=engine.tokenizer, served_name="tiny")

    async def by_itself():
        async with anyio.create_task_group() as tg:
            tg.start_soon(alone.run_batcher)
            bodies["alone"] = await alone.chat(short)
            tg.cancel_scope.cancel()

    anyio.run(by_itself)
    assert bodies["short"]["choices"][0]["token_ids"] == bodies["alone"]["choices"][0]["token_ids"]


def test_sampled_logprobs_are_under_the_distribution_drawn_from(engine):
    """Each token's recorded logprob is log softmax(logits / T) of the sampled token, minus the log
    of the top-p set's mass when top_p < 1 (vLLM's processed_logprobs), for rows of one batch with
    different settings; checked against a plain forward pass and an independent top-p."""
    import torch

    from mcprl.serving.sampler import SampleRequest, sample

    prompt = engine.tokenizer.apply_chat_template(MSGS, add_generation_prompt=True, tokenize=True, return_dict=False)
    settings = [(1.0, 1.0), (0.7, 1.0), (0.7, 0.5), (1.4, 0.9)]
    out = sample(
        engine.model, [SampleRequest(prompt, 8, t, p, seed=5) for t, p in settings], pad_id=engine.pad_id, eos_ids=set()
    )
    for (t, p), s in zip(settings, out):
        ids = torch.tensor([prompt + s.token_ids])
        with torch.no_grad():
            probs = (engine.model(ids).logits[0, len(prompt) - 1 : -1].float() / t).softmax(-1)
        ranked = probs.sort(-1, descending=True).values
        kept_mass = ranked.masked_fill(ranked.cumsum(-1) - ranked > p, 0).sum(-1)
        expected = (probs.gather(-1, torch.tensor(s.token_ids).unsqueeze(-1)).squeeze(-1) / kept_mass).log()
        # float32: a batched forward and a plain one round apart by ~4e-6 of the value (4e-5 at -9.9,
        # seen when another module ran first in the worker); a wrong top-p mass is off by its log, >1e-2
        assert s.logprobs == pytest.approx(expected.tolist(), rel=1e-5, abs=1e-5), (t, p)
