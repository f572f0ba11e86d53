"""Per-token cost of three grammar libraries on SmolLM2's tokenizer (49,152 tokens), on real MCP
tool schemas: the choice behind mcprl/serving/structured.py (docs/benchmarks.md).

    pip install --no-deps --target /tmp/gram \
        xgrammar==0.2.8 apache-tvm-ffi==0.1.15.post2 llguidance==1.7.6 outlines_core==0.2.14
    PYTHONPATH=/tmp/gram python bench/structured_libraries.py \
        [--model smollm2-135m] [--only llguidance,xgrammar,outlines-core]

Each library gets the tokens of one valid answer per schema (compact JSON), and at each step
computes the allowed-token bitmask and consumes the token: what a decoding step adds, without
applying the mask to the logits (the same tensor op for all three). Best of 3 walks per schema;
compile = schema to a ready matcher (outlines-core: its token index), tokenizer setup excluded.
Versions are vLLM 0.32's pins, so the GPU path could use the same library.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

SCHEMAS = json.loads((Path(__file__).resolve().parents[1] / "tests" / "data" / "mcp_tool_schemas.json").read_text())[
    "schemas"
]
ANSWERS = {
    "github/create_pull_request_review": {
        "owner": "octo",
        "repo": "hello-world",
        "pull_number": 42,
        "body": "Looks good overall, two nits.",
        "event": "COMMENT",
        "comments": [
            {"path": "src/main.py", "line": 10, "body": "rename this"},
            {"path": "README.md", "position": 3, "body": "typo"},
        ],
    },
    "memory/create_entities": {
        "entities": [
            {"name": "Alice", "entityType": "person", "observations": ["works at Acme", "likes tea"]},
            {"name": "Acme", "entityType": "company", "observations": ["based in Berlin"]},
        ]
    },
    "fetch/fetch": {"url": "https://example.com/docs/page.html", "max_length": 2000, "start_index": 0, "raw": False},
    "filesystem/edit_file": {
        "path": "/tmp/notes.txt",
        "edits": [{"oldText": "hello", "newText": "goodbye"}],
        "dryRun": True,
    },
    "pydantic-nested/schedule_meeting": {
        "title": "Weekly sync",
        "attendees": [{"email": "a@b.com", "role": "required"}],
        "slot": {"start": "2025-01-02T10:00:00Z", "minutes": 30},
        "room": None,
    },
}


def llguidance_lib(tok, vocab):
    import llguidance
    import llguidance.hf
    import torch

    lltok = llguidance.hf.from_tokenizer(tok, n_vocab=vocab)
    mask = torch.full((1, (vocab + 31) // 32), -1, dtype=torch.int32)

    def compile(schema):
        grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
        llguidance.LLMatcher(lltok, grammar)
        return grammar

    def walk(grammar, ids):
        m = llguidance.LLMatcher(lltok, grammar)
        for t in ids:
            m.unsafe_compute_mask_ptr(mask.data_ptr(), mask.numel() * 4)
            assert m.consume_token(t), m.get_error()

    return compile, walk


def xgrammar_lib(tok, vocab):
    import xgrammar as xgr

    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab), cache_enabled=False)
    mask = xgr.allocate_token_bitmask(1, vocab)

    def compile(schema):
        return compiler.compile_json_schema(json.dumps(schema), any_whitespace=False, separators=(",", ":"))

    def walk(grammar, ids):
        m = xgr.GrammarMatcher(grammar)
        for t in ids:
            m.fill_next_token_bitmask(mask)
            assert m.accept_token(t)

    return compile, walk


def outlines_core_lib(tok, vocab):
    import outlines_core
    from outlines_core.kernels.torch import allocate_token_bitmask, fill_next_token_bitmask

    # GPT-2 byte-level alphabet: each token's string back to its bytes, as outlines-core wants them.
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = printable + [256 + i for i in range(256 - len(printable))]
    to_byte = {chr(c): b for b, c in zip(printable + [b for b in range(256) if b not in printable], chars)}
    words: dict[bytes, list[int]] = {}
    for text, i in tok.get_vocab().items():
        if i != tok.eos_token_id and text not in tok.all_special_tokens and all(ch in to_byte for ch in text):
            words.setdefault(bytes(to_byte[ch] for ch in text), []).append(i)
    vocabulary = outlines_core.Vocabulary(tok.eos_token_id, words)
    mask = allocate_token_bitmask(vocab)

    def compile(schema):
        regex = outlines_core.json_schema.build_regex_from_schema(json.dumps(schema), whitespace_pattern="")
        return outlines_core.Index(regex, vocabulary)

    def walk(index, ids):
        guide = outlines_core.Guide(index)
        for t in ids:
            fill_next_token_bitmask(guide, mask)
            guide.advance(t)

    return compile, walk


LIBRARIES = {"llguidance": llguidance_lib, "xgrammar": xgrammar_lib, "outlines-core": outlines_core_lib}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--only", default=",".join(LIBRARIES))
    args = ap.parse_args()

    from mcprl.model import weights

    tok = weights.load_tokenizer(args.model)
    vocab = len(tok)
    answers = {
        k: tok.encode(json.dumps(v, separators=(",", ":")), add_special_tokens=False) for k, v in ANSWERS.items()
    }
    print("| library | compile ms per schema | per-step µs per schema | median µs/step |\n|---|---|---|---|")
    for name in args.only.split(","):
        compile, walk = LIBRARIES[name](tok, vocab)
        compile_ms, step_us = [], []
        for key, ids in answers.items():
            t = time.perf_counter()
            grammar = compile(SCHEMAS[key])
            compile_ms.append((time.perf_counter() - t) * 1e3)
            walks = []
            for _ in range(3):
                t = time.perf_counter()
                walk(grammar, ids)
                walks.append((time.perf_counter() - t) / len(ids) * 1e6)
            step_us.append(min(walks))
        print(
            f"| {name} | {', '.join(f'{x:.1f}' for x in compile_ms)} | {', '.join(f'{x:.0f}' for x in step_us)} | "
            f"{statistics.median(step_us):.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
