"""Answering from a result: how often the base policy's reply holds a grounded task's answer once the
task's own reference call and its recorded result are in front of it (the run's system prompt,
demonstration and tools), and how often that reply opens with a tag of the tool format
(`<tool_response>`, `<tool_call>`) instead of an answer. A chat template to try is passed as a
file, so a change to how results are shown is measured on this one step before any training run.

    python bench/answering.py RUN_DIR [--template FILE] [--checkpoint DIR] [--no-tag-start] [-n 24] [-k 2]
        [--temperature 0.7]

RUN_DIR is a run's directory (config.json, tools.json, scenarios/*.jsonl of grounded tasks);
its one-call tasks are used, `-n` of them, each answered `-k` times. `--checkpoint` puts one of the
run's steps (RUN_DIR/checkpoints/NNNN) on the base weights; `--no-tag-start` forbids every token
that begins with `<` as a reply's first, the most a grammar refusing a tool tag there could give.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from peft import PeftModel
from transformers import LogitsProcessor, LogitsProcessorList

from mcprl.checks import holds_answer
from mcprl.model import weights
from mcprl.model.chat_format import tool_template
from mcprl.rollout.loop import initial_messages
from mcprl.run.config import load_config
from mcprl.run.references import reference_messages
from mcprl.types import Scenario, load_jsonl


class NoTagStart(LogitsProcessor):
    """A reply's first token may not begin with `<`."""

    def __init__(self, banned: list[int], prompt_len: int):
        self.banned, self.prompt_len = banned, prompt_len

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[1] == self.prompt_len:
            scores[:, self.banned] = -float("inf")
        return scores


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--template", type=Path, help="a chat template to use instead of the shipped one")
    ap.add_argument("--checkpoint", type=Path, help="a step's adapter (RUN_DIR/checkpoints/NNNN) on the base weights")
    ap.add_argument("--no-tag-start", action="store_true", help="no reply may open with a token beginning with <")
    ap.add_argument("-n", type=int, default=24, help="one-call grounded tasks used")
    ap.add_argument("-k", type=int, default=2, help="replies sampled per task")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--max-tokens", type=int, default=97)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cfg = load_config(args.run_dir / "config.json", {})
    tools = json.loads((args.run_dir / "tools.json").read_text())["tools"]
    template = args.template.read_text() if args.template else tool_template()
    tok = weights.load_tokenizer(cfg.model)
    model = weights.load_model(cfg.model, dtype="float32").eval()
    if args.checkpoint:
        model = PeftModel.from_pretrained(model, str(args.checkpoint)).eval()
    torch.manual_seed(args.seed)
    tags = (  # the tokens a reply may not open with (--no-tag-start)
        [i for t, i in tok.get_vocab().items() if tok.convert_tokens_to_string([t]).lstrip().startswith("<")]
        if args.no_tag_start
        else []
    )
    tasks = [
        s
        for split in ("train.jsonl", "val.jsonl")
        for s in load_jsonl(args.run_dir / "scenarios" / split, Scenario)
        if len(s.reference) == 1
    ][: args.n]
    right = tagged = replies = 0
    for t in tasks:
        # the run's opening (system prompt, demonstration, task), then the reference call and its result
        messages = initial_messages(t, tools, cfg.rollout) + reference_messages(t)[0][:-1]
        text = tok.apply_chat_template(
            messages, tools=tools, chat_template=template, tokenize=False, add_generation_prompt=True
        )
        ids = tok(text, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model.generate(
                ids,
                do_sample=True,
                temperature=args.temperature,
                max_new_tokens=args.max_tokens,
                num_return_sequences=args.k,
                pad_token_id=tok.eos_token_id,
                logits_processor=LogitsProcessorList([NoTagStart(tags, ids.shape[1])] if args.no_tag_start else []),
            )
        for row in out:
            reply = tok.decode(row[ids.shape[1] :], skip_special_tokens=True)
            replies += 1
            right += holds_answer(reply, t.answer)
            tagged += reply.lstrip().startswith("<tool_")
    print(
        f"{len(tasks)} tasks x {args.k}: the answer in {right}/{replies} replies ({right / replies:.1%}); "
        f"opening with a tool tag {tagged}/{replies} ({tagged / replies:.1%})"
    )


if __name__ == "__main__":
    main()
