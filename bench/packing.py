"""Tokens a training step runs through the model, packed with each group's prompt shared (the trainer
before) and with what any of the step's sequences share (`mcprl.train.packing.pack_rows` now): the
forward and backward passes cost about in proportion. Read from a run's saved steps, every valid
trajectory counted (the trainer's advantages leave some out; both packings see the same ones).

    python bench/packing.py RUN_DIR [--micro-batch-tokens 2048]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mcprl.model import weights
from mcprl.run.config import load_config
from mcprl.train import packing
from mcprl.train.sequences import trajectory_sequences, written_generations
from mcprl.types import TrajectoryGroup, load_jsonl


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--micro-batch-tokens", type=int, default=2048, help="the CPU trainer's default")
    args = ap.parse_args()
    tokenizer = weights.load_tokenizer(load_config(args.run_dir / "config.json", {}).model)
    print("step | sequences | tokens unpacked | per group | across groups | saved")
    for f in sorted((args.run_dir / "trajectories").glob("step_*.jsonl")):
        groups = []
        for g in load_jsonl(f, TrajectoryGroup):
            seqs = []
            for t in g.valid:
                if t.written_from is not None and not t.generations:
                    t = t.model_copy(update={"generations": written_generations(t, tokenizer)})
                seqs += trajectory_sequences(t, 1.0)
            groups.append(seqs)
        budget = args.micro_batch_tokens
        unpacked = sum(len(s.input_ids) for g in groups for s in g)
        per_group = sum(len(r) for g in groups for r in packing.pack_rows([g], budget))
        across = sum(len(r) for r in packing.pack_rows(groups, budget))
        n = sum(map(len, groups))
        print(f"{f.stem} | {n} | {unpacked} | {per_group} | {across} | {1 - across / per_group:.0%}")


if __name__ == "__main__":
    main()
