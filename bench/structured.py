"""Constrained decoding speed: tokens/s with and without a JSON Schema, batch 1 and 8.

    python bench/structured.py [--model smollm2-135m] [--max-tokens 96] [--reps 3] [--tool-calls]

`--tool-calls` measures the rollouts' grammar instead (`RolloutConfig.constrain_tool_calls`):
`mcprl.model.chat_format.tool_call_format` over the 9 tools of a real server (memory), so the rows write
free text under the grammar, and any `<tool_call>` they start must become a valid call.

Fairness: both sides run the engine's sampler on the same prompts (eight different user turns,
rendered by the endpoint's own template code), same seeds and temperature, with no eos, so each
row writes exactly --max-tokens tokens. The schema is a real MCP tool's (memory/create_entities)
wrapped so the JSON cannot be complete within the budget: the grammar never reaches its end,
where the mask would be trivially "eos only". The with/without runs are interleaved (order
alternating each repetition) because the CPU is shared; printed: the best repetition of each
(the least disturbed) and the median of the per-repetition ratios.
Timings include the prefill, identical on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SCHEMAS = Path(__file__).resolve().parents[1] / "tests" / "data" / "mcp_tool_schemas.json"
QUESTIONS = [
    "Remember that Alice works at Acme.",
    "Bob lives in Paris and likes chess.",
    "Acme is a company in Berlin.",
    "Carol manages the Lisbon office.",
    "Dan wrote the deployment guide.",
    "Eve reviewed the Q3 budget.",
    "The printer on floor 2 is broken.",
    "Frank moved to the data team.",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--tool-calls", action="store_true", help="the rollouts' tool-call grammar instead of a JSON Schema"
    )
    args = ap.parse_args()

    import torch

    from mcprl.serving.engine import Engine
    from mcprl.serving.prompts import render_prompt
    from mcprl.serving.protocol import ResponseFormat
    from mcprl.serving.sampler import SampleRequest, sample

    torch.manual_seed(0)
    engine = Engine(args.model)
    schemas = json.loads(SCHEMAS.read_text())["schemas"]
    if args.tool_calls:
        from mcprl.model.chat_format import tool_call_format

        tools = [
            {"type": "function", "function": {"name": t.split("/")[1], "parameters": s}}
            for t, s in schemas.items()
            if t.startswith("memory/")
        ]
        fmt = ResponseFormat.model_validate(tool_call_format(tools))
    else:
        entity = schemas["memory/create_entities"]["properties"]["entities"]["items"]
        schema = {
            "type": "object",
            "properties": {"entities": {"type": "array", "items": entity, "minItems": 1000}},
            "required": ["entities"],
        }
        fmt = ResponseFormat.model_validate(
            {"type": "json_schema", "json_schema": {"name": "create_entities", "schema": schema}}
        )
    t0 = time.perf_counter()
    start = engine.grammars.compile(fmt)
    compile_s = time.perf_counter() - t0
    prompts = [render_prompt(engine.tokenizer, [{"role": "user", "content": q}], None, engine.turns) for q in QUESTIONS]

    def run(batch: int, constrained: bool) -> float:
        rows = [
            SampleRequest(
                prompts[i], args.max_tokens, 0.7, 1.0, [], 100 + i, engine.grammars.fork(start) if constrained else None
            )
            for i in range(batch)
        ]
        t = time.perf_counter()
        out = sample(engine.model, rows, pad_id=engine.pad_id, eos_ids=set(), decode=engine._decode)
        dt = time.perf_counter() - t
        assert all(len(s.token_ids) == args.max_tokens for s in out)
        return batch * args.max_tokens / dt

    run(1, True)  # warm-up: llguidance's first masks, torch's kernels
    rates: dict[tuple[int, bool], list[float]] = {(b, c): [] for b in (1, 8) for c in (False, True)}
    for rep in range(args.reps):
        for b in (1, 8):
            for c in (False, True) if rep % 2 == 0 else (True, False):
                rates[b, c].append(run(b, c))
    print(
        f"model {args.model}, dtype {next(engine.model.parameters()).dtype}, {args.max_tokens} tokens/row, "
        f"{args.reps} reps, {'tool-call grammar' if args.tool_calls else 'schema'} compile {compile_s * 1e3:.1f} ms "
        "(first, including the tokenizer's ~0.5 s)"
    )
    print(
        "| batch | free tok/s (best) | schema tok/s (best) | ratio of bests | median per-rep ratio "
        "|\n|---|---|---|---|---|"
    )
    for b in (1, 8):
        free, con = max(rates[b, False]), max(rates[b, True])
        paired = statistics.median(c / f for f, c in zip(rates[b, False], rates[b, True]))
        print(f"| {b} | {free:.1f} | {con:.1f} | {con / free:.2f}x | {paired:.2f}x |")


if __name__ == "__main__":
    main()
